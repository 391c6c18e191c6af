/*
 * conf_help.c - sluiced --help, generated from the settings table.
 *
 * Settings are shown grouped by their INI section, each with its flags, its
 * placeholder, its help text and, in brackets, its default, its bounds and
 * its INI key where that is not the long option with underscores. Text is
 * wrapped at HELP_WIDTH columns. Nothing here is hand-written per setting:
 * a new line in CONF_SETTINGS shows up here by itself.
 *
 * conf_man writes the manual page sluiced(8) from the same table and the
 * same text: its OPTIONS are --help's, in roff; the rest (description,
 * signals, systemd, files) is written here once. make builds the page with
 * `sluiced --man` and installs it; tests/e2e/test_install.c fails when an option of
 * --help is missing from it or groff warns about it.
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

/* describe writes a setting's help text followed by [default; bounds; INI
 * key] into text: what --help and the manual page both show. */
static void describe(const conf_setting *s, char *text, size_t size)
{
    char def[128], bounds[64] = "", key[64], ini[160] = "";
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
    size_t x = (size_t)snprintf(text, size, "%s", s->help);
    int any = 0;
    for (int i = 0; i < 3; i++)
        if (parts[i][0] && x < size)
            x += (size_t)snprintf(text + x, size - x, "%s%s", any++ ? "; " : " [", parts[i]);
    if (x + 1 < size && any) /* (the help itself may hold brackets: redis://HOST[:PORT]) */
        strcat(text, "]");
}

/* usage_line prints one option: its flags, then help [default; bounds; INI key]. */
static void usage_line(FILE *f, const conf_setting *s)
{
    char text[1024];
    int col = fprintf(f, "  %s%c%s--%s%s%s", s->short_opt ? "-" : " ", s->short_opt ? s->short_opt : ' ',
                      s->short_opt ? ", " : "  ", s->long_opt, s->unit ? " " : "", s->unit ? s->unit : "");
    describe(s, text, sizeof text);
    wrap(f, col, text);
}

/* in_section tells whether s is documented in section g. */
static int in_section(const conf_setting *s, size_t g)
{
    const char *sn = s->section, *gn = conf_sections[g].name;
    return sn == gn || (sn && gn && !strcmp(sn, gn));
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
        for (size_t i = 0; i < conf_setting_count(); i++)
            if (in_section(conf_setting_at(i), g))
                usage_line(f, conf_setting_at(i));
    }
    fputs("\n"
          "Signals: SIGTERM or SIGINT finish the current commit, confirm or refuse every\n"
          "pending publish, and close the store. SIGHUP reopens the log file and\n"
          "re-reads the settings that can change live from the --config file. Under\n"
          "systemd (Type=notify) it sends READY, STOPPING, STATUS and watchdog pings to\n"
          "$NOTIFY_SOCKET. See sluiced(8). Exit status: 0 after a clean shutdown,\n"
          "1 after a failure while running, 2 for a usage or configuration error.\n"
          "\n"
          "Examples:\n"
          "  sluiced                  # ./sluice-data, serving on tcp://127.0.0.1:7470\n"
          "  sluiced -d /var/lib/sluice -l tcp://0.0.0.0:7470 --levels 5\n"
          "  sluiced --config /etc/sluice/sluiced.ini --log-level debug\n"
          "  sluiced --tag-rule 'paying-*=high' --tag-rule 'batch:*=low'\n",
          f);
}

/* roff writes text with roff's special characters escaped. */
static void roff(FILE *f, const char *text)
{
    for (const char *p = text; *p; p++) {
        if (*p == '\\')
            fputs("\\e", f);
        else if (*p == '-')
            fputs("\\-", f);
        else if ((*p == '.' || *p == '\'') && (p == text || p[-1] == '\n'))
            fputs("\\&", f), fputc(*p, f);
        else
            fputc(*p, f);
    }
}

void conf_man(FILE *f)
{
    fputs(".\\\" Generated by sluiced --man from the settings table (broker/core/conf.c): do not edit.\n"
          ".TH SLUICED 8 \"\" \"Sluice 1.0.0\" \"System Administration\"\n"
          ".SH NAME\nsluiced \\- the Sluice persistent priority message broker\n"
          ".SH SYNOPSIS\n.B sluiced\n[\\fIoptions\\fR]\n"
          ".SH DESCRIPTION\n"
          "sluiced stores each message published to one of its priority levels in LMDB and confirms it\n"
          "only once the commit is durable. Consumers pull with credit and get the highest\\-priority\n"
          "message first, FIFO within a level, under a lease they acknowledge, give back or extend.\n"
          "Deliveries to a throttled downstream service (the sink) pass token buckets in the broker.\n"
          ".PP\n"
          "Settings come from the defaults, then the INI file given with \\fB\\-\\-config\\fR, then the\n"
          "command line, later ones winning. In the INI file each option's key is its long name with\n"
          "underscores unless shown, in the section named below.\n"
          ".SH OPTIONS\n",
          f);
    char text[1024];
    for (size_t g = 0; g < conf_nsections; g++) {
        fputs(".SS \"", f);
        roff(f, conf_sections[g].title);
        if (conf_sections[g].name)
            fprintf(f, " [%s]", conf_sections[g].name);
        fputs("\"\n", f);
        for (size_t i = 0; i < conf_setting_count(); i++) {
            const conf_setting *s = conf_setting_at(i);
            if (!in_section(s, g))
                continue;
            fputs(".TP\n", f);
            if (s->short_opt)
                fprintf(f, "\\fB\\-%c\\fR, ", s->short_opt);
            fputs("\\fB\\-\\-", f);
            roff(f, s->long_opt);
            fputs("\\fR", f);
            if (s->unit) {
                fputs(" \\fI", f);
                roff(f, s->unit);
                fputs("\\fR", f);
            }
            fputc('\n', f);
            describe(s, text, sizeof text);
            roff(f, text);
            fputc('\n', f);
        }
    }
    fputs(".SH SIGNALS\n"
          ".TP\n.BR SIGTERM \", \" SIGINT\n"
          "Finish the pass in progress and its commit, confirm its publishes, refuse what arrives after\n"
          "it, close the store and exit 0.\n"
          ".TP\n.B SIGHUP\n"
          "Reopen the log file (\\fB\\-\\-log\\-file\\fR, after rotation) and re\\-read, from the\n"
          "\\fB\\-\\-config\\fR file, the settings that can change live: the log level and the\n"
          "other settings the README lists as live. Others keep their value until a restart, with a\n"
          "warning naming them.\n"
          ".SH SYSTEMD\n"
          "Run as \\fBType=notify\\fR: sluiced sends READY=1 once it serves, STATUS lines with its\n"
          "backlog every 5 s, RELOADING=1 and READY=1 around a SIGHUP reload, STOPPING=1 on shutdown,\n"
          "and WATCHDOG=1 every half of \\fBWatchdogSec=\\fR, as datagrams to $NOTIFY_SOCKET.\n"
          "The unit shipped as sluiced.service runs it as its own user with\n"
          "\\fBStateDirectory=sluice\\fR and \\fBProtectSystem=strict\\fR.\n"
          ".SH METRICS\n"
          "With \\fB\\-\\-metrics\\fR \\fIADDR:PORT\\fR, http://ADDR:PORT/metrics serves Prometheus\n"
          "metrics (sluice_ prefix), from a snapshot the broker refreshes every 250 ms.\n"
          ".SH EXIT STATUS\n"
          "0 after a clean shutdown (or \\fB\\-\\-help\\fR, \\fB\\-\\-version\\fR, \\fB\\-\\-man\\fR);\n"
          "1 after a failure while running (for example a failed commit); 2 for a usage or\n"
          "configuration error, or when the broker cannot start.\n"
          ".SH FILES\n"
          ".TP\n.I /etc/sluice/sluice.conf\nthe INI file the systemd unit passes to \\fB\\-\\-config\\fR.\n"
          ".TP\n.I /var/lib/sluice\nthe data directory under systemd (StateDirectory): data.mdb, lock.mdb,\n"
          "sluiced.lock.\n"
          ".SH EXAMPLES\n"
          ".nf\n"
          "sluiced\n"
          "sluiced \\-d /var/lib/sluice \\-l tcp://0.0.0.0:7470 \\-\\-levels 5\n"
          "sluiced \\-\\-config /etc/sluice/sluice.conf \\-\\-metrics 127.0.0.1:9470\n"
          ".fi\n"
          ".SH SEE ALSO\n"
          ".BR sluice (1),\n"
          ".BR systemd.service (5)\n",
          f);
}
