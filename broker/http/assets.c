/*
 * assets.c - the console: one page, one ES module, one style sheet and an
 * icon, from broker/http/console/, built into sluiced as byte arrays (the
 * Makefile turns each file into $(BUILD)/gen/console/NAME.inc with od), so
 * the binary needs nothing beside it and no build step runs for them: what
 * is in the folder is what is served.
 *
 * The page loads nothing from another origin and runs no inline script; it
 * draws its charts as SVG and inserts message data with textContent only
 * (broker/http/README.md). Served with "Cache-Control: no-cache".
 */
#include "assets.h"

#include <string.h>

static const unsigned char index_html[] = {
#include "console/index.html.inc"
};
static const unsigned char app_js[] = {
#include "console/app.js.inc"
};
static const unsigned char app_css[] = {
#include "console/app.css.inc"
};
static const unsigned char icon_svg[] = {
#include "console/icon.svg.inc"
};

static const assets_file files[] = {
    {"/", "text/html; charset=utf-8", index_html, sizeof index_html},
    {"/index.html", "text/html; charset=utf-8", index_html, sizeof index_html},
    {"/app.js", "text/javascript; charset=utf-8", app_js, sizeof app_js},
    {"/app.css", "text/css; charset=utf-8", app_css, sizeof app_css},
    {"/icon.svg", "image/svg+xml", icon_svg, sizeof icon_svg},
};

const assets_file *assets_find(const char *path)
{
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        if (!strcmp(files[i].path, path))
            return &files[i];
    return NULL;
}

size_t assets_count(void)
{
    return sizeof files / sizeof files[0];
}

const assets_file *assets_at(size_t i)
{
    return i < assets_count() ? &files[i] : NULL;
}
