/*
 * grow.c - array growth by doubling (see grow.h).
 *
 * Doubling makes n appends cost O(n) copies in all; the arrays keep their
 * peak size, so a steady load allocates nothing. Sizes are checked before
 * they are multiplied.
 */
#include "grow.h"

#include <stdint.h>
#include <stdlib.h>

void *grow_array(void *v, size_t *cap, size_t need, size_t elem_bytes, size_t first_cap)
{
    if (need <= *cap)
        return v;
    size_t n = *cap ? *cap : (first_cap ? first_cap : 1);
    while (n < need) {
        if (n > SIZE_MAX / 2)
            return NULL;
        n *= 2;
    }
    if (elem_bytes && n > SIZE_MAX / elem_bytes)
        return NULL;
    void *p = realloc(v, n * elem_bytes);
    if (p)
        *cap = n;
    return p;
}

void *grow_shrink(void *v, size_t *cap, size_t n, size_t elem_bytes, size_t min_cap)
{
    if (*cap <= min_cap || n >= *cap / 4)
        return v;
    void *p = realloc(v, *cap / 2 * elem_bytes);
    if (!p)
        return v;
    *cap /= 2;
    return p;
}
