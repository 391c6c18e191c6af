/*
 * grow.h - the broker's one way to grow an array, and to give back what a
 * shrunken one no longer needs.
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

/* grow_shrink returns v halved in capacity when fewer than a quarter of its
 * *cap elements are in use (n) and *cap is above min_cap, and sets *cap; v
 * itself otherwise, and when the smaller block cannot be had (v stays valid
 * and *cap unchanged). Never fails. */
void *grow_shrink(void *v, size_t *cap, size_t n, size_t elem_bytes, size_t min_cap);

#endif /* SLUICE_GROW_H */
