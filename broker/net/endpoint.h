/*
 * endpoint.h - claiming an ipc:// endpoint before binding it.
 */
#ifndef SLUICE_ENDPOINT_H
#define SLUICE_ENDPOINT_H

/* endpoint_claim makes sure that binding endpoint takes nothing from a live
 * process. For ipc://PATH (not the abstract ipc://@NAME, which the kernel
 * guards itself) it connects to PATH: when something answers, another
 * process serves it and the claim is refused; when the file is a socket
 * nobody answers (left by a broker that died), it is removed. Other
 * endpoints are not touched. Returns SL_OK, or SL_ESTATE (logged: a live
 * process holds it, or PATH is not a socket or cannot be checked). */
int endpoint_claim(const char *endpoint);

#endif /* SLUICE_ENDPOINT_H */
