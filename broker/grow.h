/*
 * grow.h - the broker's one way to grow an array.
 */
#ifndef SLUICE_GROW_H
#define SLUICE_GROW_H

#include <stddef.h>

/* grow_array returns v resized to hold at least need elements of elem_bytes,
 * doubling its capacity *cap (first_cap when it is 0) until they fit, and
 * sets *cap. v itself when it already has room. On failure (out of memory,
 * or a size that would overflow) it returns NULL and leaves v and *cap
 * untouched: the caller still owns v. */
void *grow_array(void *v, size_t *cap, size_t need, size_t elem_bytes, size_t first_cap);

#endif /* SLUICE_GROW_H */
