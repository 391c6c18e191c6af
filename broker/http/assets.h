/*
 * assets.h - the console's files, built into the binary (assets.c).
 */
#ifndef SLUICE_ASSETS_H
#define SLUICE_ASSETS_H

#include <stddef.h>

typedef struct assets_file {
    const char *path;          /* "/", "/app.js" */
    const char *ctype;
    const unsigned char *data;
    size_t len;
} assets_file;

/* assets_find returns the file served at path, or NULL. */
const assets_file *assets_find(const char *path);

/* assets_count and assets_at walk the files (for tests and sizes). */
size_t assets_count(void);
const assets_file *assets_at(size_t i);

#endif /* SLUICE_ASSETS_H */
