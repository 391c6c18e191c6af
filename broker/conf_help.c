/*
 * conf_help.c - sluiced --help, generated from the settings table.
 *
 * Settings are shown grouped by their INI section, each with its flags, its
 * placeholder, its help text and, in brackets, its default, its bounds and
 * its INI key where that is not the long option with underscores. Text is
 * wrapped at HELP_WIDTH columns. Nothing here is hand-written per setting:
 * a new line in CONF_SETTINGS shows up here by itself.
 */
#include "conf.h"

#include <stdio.h>
#include <string.h>

#define HELP_INDENT 26
#define HELP_WIDTH 79

/* wrap prints text in the help column, from column col of the current line. */
static void wrap(FILE *f, int col, const char *text)
{
    if (col >= HELP_INDENT - 1) { /* a long option: its help starts on the next line */
        fputc('\n', f);
        col = 0;
    }
    while (*text) {
        size_t n = strlen(text), room = HELP_WIDTH - HELP_INDENT;
        if (n > room) { /* break at the last space that fits, else after the long word */
            for (n = room; n && text[n] != ' '; n--)
                ;
            if (!n)
                n = strcspn(text, " ");
        }
        fprintf(f, "%*s%.*s\n", HELP_INDENT - col, "", (int)n, text);
        text += n + (text[n] == ' ');
        col = 0;
    }
}

/* usage_line prints one option: its flags, then help [default; bounds; INI key]. */
static void usage_line(FILE *f, const conf_setting *s)
{
    char def[128], bounds[64] = "", key[64], ini[160] = "", text[1024];
    int col = fprintf(f, "  %s%c%s--%s%s%s", s->short_opt ? "-" : " ", s->short_opt ? s->short_opt : ' ',
                      s->short_opt ? ", " : "  ", s->long_opt, s->unit ? " " : "", s->unit ? s->unit : "");
    if (conf_default_text(s, key, sizeof key)[0])
        snprintf(def, sizeof def, "default %s", key);
    else
        def[0] = '\0';
    if (s->type == CONF_NUM || s->type == CONF_MB)
        snprintf(bounds, sizeof bounds, s->max == UINT64_MAX ? "%llu or more" : "%llu..%llu",
                 (unsigned long long)s->min, (unsigned long long)s->max);
    snprintf(key, sizeof key, "%s", s->long_opt);
    for (char *q = key; *q; q++)
        *q = *q == '-' ? '_' : *q;
    if (s->section && s->type != CONF_RULE && (s->alias || strcmp(key, s->key))) /* INI key, if not the long name */
        snprintf(ini, sizeof ini, "INI key %s%s%s", s->key, s->alias ? " or " : "", s->alias ? s->alias : "");
    const char *parts[] = {def, bounds, ini};
    size_t x = (size_t)snprintf(text, sizeof text, "%s", s->help);
    int any = 0;
    for (int i = 0; i < 3; i++)
        if (parts[i][0] && x < sizeof text)
            x += (size_t)snprintf(text + x, sizeof text - x, "%s%s", any++ ? "; " : " [", parts[i]);
    if (x + 1 < sizeof text && any) /* (the help itself may hold brackets: redis://HOST[:PORT]) */
        strcat(text, "]");
    wrap(f, col, text);
}

void conf_usage(FILE *f)
{
    fputs("usage: sluiced [options]\n"
          "\n"
          "sluiced is the Sluice broker: a persistent priority message queue. Producers\n"
          "publish to priority levels (0 = highest); each publish is confirmed only after\n"
          "it is durably committed to LMDB. Consumers pull with credit and acknowledge\n"
          "each delivery within its lease.\n"
          "\n"
          "Settings come from the defaults, then the INI file given with --config, then\n"
          "the command line, later ones winning. In the INI file, each option's key is\n"
          "its long name with underscores unless shown, in the section named below.\n",
          f);
    for (size_t g = 0; g < conf_nsections; g++) {
        if (conf_sections[g].name)
            fprintf(f, "\n%s [%s]:\n", conf_sections[g].title, conf_sections[g].name);
        else
            fprintf(f, "\n%s:\n", conf_sections[g].title);
        for (size_t i = 0; i < conf_setting_count(); i++) {
            const conf_setting *s = conf_setting_at(i);
            const char *sn = s->section;
            if (sn == conf_sections[g].name || (sn && conf_sections[g].name && !strcmp(sn, conf_sections[g].name)))
                usage_line(f, s);
        }
    }
    fputs("\n"
          "Signals: SIGTERM or SIGINT finish the current commit, confirm or refuse every\n"
          "pending publish, and close the store. Exit status: 0 after a clean shutdown,\n"
          "1 after a failure while running, 2 for a usage or configuration error.\n"
          "\n"
          "Examples:\n"
          "  sluiced                  # ./sluice-data, serving on tcp://127.0.0.1:7470\n"
          "  sluiced -d /var/lib/sluice -l tcp://0.0.0.0:7470 --levels 5\n"
          "  sluiced --config /etc/sluice/sluiced.ini --log-level debug\n"
          "  sluiced --tag-rule 'paying-*=high' --tag-rule 'batch:*=low'\n",
          f);
}
