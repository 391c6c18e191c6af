/*
 * sluice_errors.h - the one list of Sluice error codes.
 *
 * Every fallible function in the broker and the client library returns one of
 * these codes, and the broker puts the same number on the wire in ERROR
 * replies. The numbers are part of protocol version 1: never renumber, only
 * append. This header is public and is installed beside sluice.h.
 */
#ifndef SLUICE_ERRORS_H
#define SLUICE_ERRORS_H

/* X(name, wire code, message) */
#define SL_ERRORS(X)                                                          \
    X(SL_OK,         0, "success")                                            \
    X(SL_EINVAL,     1, "invalid argument")                                   \
    X(SL_EPROTO,     2, "malformed or unexpected message")                    \
    X(SL_ETOOBIG,    3, "message exceeds a size limit")                       \
    X(SL_ENOSPC,     4, "broker storage is full; retry later")                \
    X(SL_EFULL,      5, "level is full")                                      \
    X(SL_ESTALE,     6, "unknown or expired lease token, or another's lease") \
    X(SL_ENOLEVEL,   7, "no such priority level")                             \
    X(SL_EVERSION,   8, "unsupported protocol version")                       \
    X(SL_EIO,        9, "storage I/O error; the operation was not committed") \
    X(SL_ESHUTDOWN, 10, "broker is shutting down")                            \
    X(SL_ETIMEDOUT, 11, "timed out waiting for the broker")                   \
    X(SL_ENOMEM,    12, "out of memory")                                      \
    X(SL_ETHROTTLED,13, "throttled by the sink")                              \
    X(SL_EUNKNOWN,  14, "unknown message type")                               \
    X(SL_ECONNECT,  15, "cannot reach the broker")                            \
    X(SL_ESTATE,    16, "operation not valid in this state")                  \
    X(SL_ECORRUPT,  17, "stored record failed its checksum")                  \
    X(SL_ENOTFOUND, 18, "not found")                                         \
    X(SL_EPERM,     19, "not permitted: the principal's role does not allow it") \
    X(SL_EREDIRECT, 20, "not the primary of its group: the reply's url names the primary")

typedef enum sl_err {
#define SL_ERR_ENUM_(name, code, text) name = code,
    SL_ERRORS(SL_ERR_ENUM_)
#undef SL_ERR_ENUM_
    SL_ERR_COUNT_
} sl_err;

#endif /* SLUICE_ERRORS_H */
