/*
 * conf_help.c - sluiced --help and the manual pages sluiced(8) and
 * sluice.conf(5), generated from the settings table.
 *
 * Settings are shown grouped by their INI section, each with its flags, its
 * placeholder, its help text and, in brackets, its default, its bounds and
 * its INI key where that is not the long option with underscores. Text is
 * wrapped at HELP_WIDTH columns. Nothing here is hand-written per setting:
 * a new line in CONF_SETTINGS shows up here by itself.
 *
 * conf_man_page writes the manual pages from the same table and the same
 * text: sluiced(8), whose OPTIONS are --help's, in roff; and sluice.conf(5),
 * the INI file: its syntax, then every key by section with its value, unit,
 * default, bounds, option and whether a SIGHUP applies it (CONF_LIVE in
 * conf.c). The rest of each page (description, signals, systemd, files, the
 * example) is written here once. make builds the pages with `sluiced --man`
 * and `sluiced --man=sluice.conf` and installs them; tests/e2e/test_install.c fails
 * when an option of --help is missing from sluiced(8), when groff warns
 * about a page, or when the example of sluice.conf(5) does not load.
 *
 * Paths name the installed layout of a system install: the config file is
 * /etc/sluice/sluice.conf; make install rewrites /etc/sluice/ in the pages
 * it installs when SYSCONFDIR is elsewhere.
 */
#include "conf.h"
#include "conf_decl.h"

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

/* fill prints text as a paragraph from column 0, wrapped at HELP_WIDTH. */
static void fill(FILE *f, const char *text)
{
    while (*text) {
        size_t n = strlen(text);
        if (n > HELP_WIDTH) { /* break at the last space that fits, else after the long word */
            for (n = HELP_WIDTH; n && text[n] != ' '; n--)
                ;
            if (!n)
                n = strcspn(text, " ");
        }
        fprintf(f, "%.*s\n", (int)n, text);
        text += n + (text[n] == ' ');
    }
}

/* live_keys writes the INI keys a SIGHUP applies at once into buf,
 * separated by ", ", and returns buf. */
static const char *live_keys(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < conf_setting_count() && used < len; i++)
        if (conf_setting_live(conf_setting_at(i)))
            used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "", conf_setting_at(i)->key);
    return buf;
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
          "its long name with underscores unless shown, in the section named below;\n"
          "sluice.conf(5) describes the file. make install puts an example in\n"
          "/etc/sluice/sluice.conf (PREFIX/etc/sluice/sluice.conf if PREFIX is not /usr).\n",
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
    char signals[1024], live[512];
    snprintf(signals, sizeof signals,
             "Signals: SIGTERM or SIGINT finish the current commit, confirm or refuse every "
             "pending publish, and close the store. SIGHUP reopens the log file and re-reads, "
             "from the --config file, the settings that can change live (%s); the others keep "
             "their value until a restart. Under systemd (Type=notify) it sends READY, STOPPING, "
             "STATUS and watchdog pings to $NOTIFY_SOCKET. See sluiced(8). Exit status: 0 after "
             "a clean shutdown, 1 after a failure while running, 2 for a usage or configuration "
             "error.",
             live_keys(live, sizeof live));
    fputc('\n', f);
    fill(f, signals);
    fputs("\n"
          "Examples:\n"
          "  sluiced                  # ./sluice-data, serving on tcp://127.0.0.1:7470\n"
          "  sluiced -d /var/lib/sluice -l tcp://0.0.0.0:7470 --levels 5\n"
          "  sluiced --config /etc/sluice/sluice.conf --log-level debug\n"
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

/* The five pages of Sluice, for SEE ALSO. */
static const struct {
    const char *name;
    unsigned section;
} pages[] = {{"sluice", 1}, {"sluice-bench", 1}, {"sluice-sink", 1}, {"sluice.conf", 5}, {"sluiced", 8}};

/* see_also writes the SEE ALSO section of page self: the other pages of
 * Sluice, then extra (roff, or ""). */
static void see_also(FILE *f, const char *self, const char *extra)
{
    fputs(".SH SEE ALSO\n", f);
    int first = 1;
    for (size_t i = 0; i < sizeof pages / sizeof pages[0]; i++) {
        if (!strcmp(pages[i].name, self))
            continue;
        fputs(first ? "" : ",\n", f);
        fputs(".BR ", f);
        roff(f, pages[i].name);
        fprintf(f, " (%u)", pages[i].section);
        first = 0;
    }
    fprintf(f, "%s\n%s", extra[0] ? "," : "", extra);
}

/* man_sluiced writes sluiced(8). */
static void man_sluiced(FILE *f)
{
    char text[1024];
    fputs(".\\\" Generated by sluiced --man from the settings table (broker/core/conf.c): do not edit.\n"
          ".TH SLUICED 8 \"\" \"Sluice " SLUICE_VERSION "\" \"System Administration\"\n"
          ".nh\n.ad l\n"
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
          "underscores unless shown, in the section named below;\n"
          ".BR sluice.conf (5)\n"
          "describes the file.\n"
          ".SH OPTIONS\n",
          f);
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
    char live[512];
    fputs(".SH SIGNALS\n"
          ".TP\n.BR SIGTERM \", \" SIGINT\n"
          "Finish the pass in progress and its commit, confirm its publishes, refuse what arrives after\n"
          "it, close the store and exit 0.\n"
          ".TP\n.B SIGHUP\n"
          "Reopen the log file (\\fB\\-\\-log\\-file\\fR, after rotation), re\\-read the \\fB\\-\\-auth\\fR\n"
          "file, and re\\-read, from the \\fB\\-\\-config\\fR file, the settings that can change live: ",
          f);
    roff(f, live_keys(live, sizeof live));
    fputs(".\nOthers keep their value until a restart, with a warning naming them (see RELOADING in\n"
          ".BR sluice.conf (5)).\n"
          ".SH SYSTEMD\n"
          "Run as \\fBType=notify\\fR: sluiced sends READY=1 once it serves, STATUS lines with its\n"
          "backlog every 5 s, RELOADING=1 and READY=1 around a SIGHUP reload, STOPPING=1 on shutdown,\n"
          "and WATCHDOG=1 every half of \\fBWatchdogSec=\\fR, as datagrams to $NOTIFY_SOCKET.\n"
          "The unit shipped as sluiced.service runs it as its own user with\n"
          "\\fBStateDirectory=sluice\\fR and \\fBProtectSystem=strict\\fR, with\n"
          "\\fB\\-\\-config /etc/sluice/sluice.conf \\-\\-data /var/lib/sluice\\fR.\n"
          ".SH HTTP\n"
          "With \\fB\\-\\-http\\fR \\fIADDR:PORT\\fR (or its older name \\fB\\-\\-metrics\\fR),\n"
          "http://ADDR:PORT/ serves a web console, /api/v1/ its JSON API, and /metrics Prometheus\n"
          "metrics (sluice_ prefix), all from a snapshot the broker refreshes once a second; the\n"
          "console's actions are the admin commands, under the same roles as on ZeroMQ. With\n"
          "\\fB\\-\\-auth\\fR, \\fBsluice web login\\fR prints a one-time link for the caller's\n"
          "principal. Beyond loopback it needs \\fB\\-\\-http\\-cert\\fR and \\fB\\-\\-http\\-key\\fR\n"
          "(HTTPS) or \\fB\\-\\-insecure\\fR. The API is described in the source's proto/HTTP.md.\n"
          ".SH EXIT STATUS\n"
          "0 after a clean shutdown (or \\fB\\-\\-help\\fR, \\fB\\-\\-version\\fR, \\fB\\-\\-man\\fR,\n"
          "\\fB\\-\\-man=sluice.conf\\fR); 1 after a failure while running (for example a failed commit);\n"
          "2 for a usage or configuration error, or when the broker cannot start.\n"
          ".SH FILES\n"
          ".TP\n.I /etc/sluice/sluice.conf\nthe INI file the systemd unit passes to \\fB\\-\\-config\\fR;\n"
          "see\n.BR sluice.conf (5).\n"
          ".TP\n.I /var/lib/sluice\nthe data directory under systemd (StateDirectory): data.mdb, lock.mdb,\n"
          "sluiced.lock.\n"
          ".SH EXAMPLES\n"
          ".nf\n"
          "sluiced\n"
          "sluiced \\-d /var/lib/sluice \\-l tcp://0.0.0.0:7470 \\-\\-levels 5\n"
          "sluiced \\-\\-config /etc/sluice/sluice.conf \\-\\-http 127.0.0.1:9470\n"
          ".fi\n",
          f);
    see_also(f, "sluiced", ".BR systemd.service (5)\n");
}

/* What a value is, by its placeholder in --help: the unit of a number, the
 * kind of a text. A placeholder missing here is shown as it is. */
static const struct {
    const char *unit, *words;
} units[] = {
    {"MS", "milliseconds"}, {"S", "seconds"}, {"MB", "MiB"}, {"BYTES", "bytes"}, {"B", "bytes"},
    {"N", "a number"}, {"PCT", "percent"}, {"RATE", "units per second"}, {"DIR", "a directory"},
    {"FILE", "a file"}, {"ENDPOINT", "a ZeroMQ endpoint"}, {"ADDR:PORT", "an IPv4 address and a port"},
    {"URL", "a URL"}, {"SINK", "a name"}, {"USER", "a user name"},
};

/* value_text writes what s's value is (its kind, unit and bounds) into
 * buf, as a sentence without its full stop, and returns buf. */
static const char *value_text(const conf_setting *s, char *buf, size_t len)
{
    const char *words = s->unit ? s->unit : "text";
    for (size_t i = 0; s->unit && i < sizeof units / sizeof units[0]; i++)
        if (!strcmp(units[i].unit, s->unit))
            words = units[i].words;
    switch (s->type) {
    case CONF_BOOL: snprintf(buf, len, "yes or no (or true, false, on, off)"); break;
    case CONF_LOG_LEVEL: snprintf(buf, len, "error, warn, info or debug"); break;
    case CONF_NAMES: snprintf(buf, len, "names separated by commas, without spaces, one per level"); break;
    case CONF_LEVEL: snprintf(buf, len, "a level, by name or number"); break;
    case CONF_RULE: snprintf(buf, len, "a glob, a space, and a level by name or number"); break;
    case CONF_NUM:
    case CONF_MB:
        if (s->max == UINT64_MAX)
            snprintf(buf, len, "%s, %llu or more", words, (unsigned long long)s->min);
        else
            snprintf(buf, len, "%s, from %llu to %llu", words, (unsigned long long)s->min,
                     (unsigned long long)s->max);
        break;
    default: snprintf(buf, len, "%s", words); break;
    }
    if (buf[0] >= 'a' && buf[0] <= 'z')
        buf[0] = (char)(buf[0] - 'a' + 'A');
    return buf;
}

/* The example of sluice.conf(5); tests/e2e/test_install.c loads it. */
static const char conf_example[] =
    "[broker]\n"
    "listen = tcp://0.0.0.0:7470\n"
    "curve_secret = /etc/sluice/broker.key\n"
    "auth = /etc/sluice/principals\n"
    "http = 127.0.0.1:9470\n"
    "log_level = info\n"
    "\n"
    "[levels]\n"
    "levels = 5\n"
    "level_names = urgent,high,normal,low,bulk\n"
    "default_level = normal\n"
    "\n"
    "[leases]\n"
    "lease_ms = 60000\n"
    "max_attempts = 10\n"
    "; keep dead letters a week\n"
    "dead_max_age = 604800\n"
    "\n"
    "[sink]\n"
    "throttle_backoff_ms = 2000\n"
    "; the sink's limits, as sluice sink set\n"
    "max-rate = 100\n"
    "max-rate = 5000/min\n"
    "burst = 10\n"
    "\n"
    "[tag_rules]\n"
    "rule = paying-* high\n"
    "rule = batch:* bulk\n"
    "\n"
    "[level urgent]\n"
    "deadline = 30s\n"
    "\n"
    "[level normal]\n"
    "fair = tag\n"
    "\n"
    "[pool render]\n"
    "size = 8\n"
    "\n"
    "[tag \"gold-*\"]\n"
    "weight = 4\n";

/* man_conf writes sluice.conf(5). */
static void man_conf(FILE *f)
{
    fputs(".\\\" Generated by sluiced --man=sluice.conf from the settings table (broker/core/conf.c): do not edit.\n"
          ".TH SLUICE.CONF 5 \"\" \"Sluice " SLUICE_VERSION "\" \"File Formats\"\n"
          ".nh\n.ad l\n"
          ".SH NAME\nsluice.conf \\- the configuration file of sluiced, the Sluice broker\n"
          ".SH SYNOPSIS\n.I /etc/sluice/sluice.conf\n"
          ".SH DESCRIPTION\n"
          ".BR sluiced (8)\n"
          "reads its settings from the file its \\fB\\-\\-config\\fR option names. The systemd unit\n"
          "shipped with Sluice passes /etc/sluice/sluice.conf, where \\fBmake install\\fR puts an\n"
          "example (and keeps a file already there).\n"
          ".PP\n"
          "Each setting comes from its default, then this file, then the command line: the command\n"
          "line wins over the file. Every key is an option of sluiced too; this page and\n"
          "\\fBsluiced \\-\\-help\\fR come from one table, so they give the same defaults and bounds.\n"
          "The unit passes \\fB\\-\\-data /var/lib/sluice\\fR on its command line, so \\fBdata\\fR\n"
          "in this file has no effect there.\n"
          ".SH FILE FORMAT\n"
          "The file is INI text, read a line at a time:\n"
          ".TP\n\\fB[\\fR\\fIsection\\fR\\fB]\\fR\n"
          "starts a section. Each key belongs in the section it is listed under below (sluiced\n"
          "accepts it in any section but [tag_rules], which holds rule lines only).\n"
          ".TP\n\\fIkey\\fR \\fB=\\fR \\fIvalue\\fR\n"
          "sets a key (a colon may stand for the equals sign). Spaces around the key and around\n"
          "the value are dropped; the value runs to the end of the line as written, quotes\n"
          "included.\n"
          ".TP\n\\fB;\\fR or \\fB#\\fR\n"
          "at the start of a line (spaces aside) makes it a comment; so does a \\fB;\\fR after a\n"
          "space, to the end of the line.\n"
          ".TP\nan indented line\n"
          "continues the one before it: it sets the same key again, to its own text (for\n"
          "\\fBrule\\fR, it adds a rule).\n"
          ".PP\n"
          "A key given twice keeps its last value; \\fBrule\\fR adds a rule each time (for the\n"
          "sections of DECLARED SETTINGS, see there). An unknown\n"
          "section or key, a value out of bounds or a line that is none of the above stops sluiced\n"
          "at start (exit status 2) with a message naming the file, the line and the key; on SIGHUP\n"
          "it changes nothing (see RELOADING).\n"
          ".SH VALUES\n"
          "Numbers are decimal integers, without a unit or separators, within the bounds given for\n"
          "each key; the key's entry gives the unit (keys ending in _ms are in milliseconds, those\n"
          "ending in _mb in MiB). A flag is yes or no (or true and false, on and off). Text is taken\n"
          "as written, without quotes.\n"
          ".SH KEYS\n"
          "Each key with its value, its default, the option of sluiced that sets it too, and what\n"
          "a SIGHUP does with a new value (see RELOADING).\n",
          f);
    char text[1024], buf[256];
    for (size_t g = 0; g < conf_nsections; g++) {
        if (!conf_sections[g].name)
            continue;
        fprintf(f, ".SS \"[%s]: ", conf_sections[g].name);
        roff(f, conf_sections[g].title);
        fputs("\"\n", f);
        for (size_t i = 0; i < conf_setting_count(); i++) {
            const conf_setting *s = conf_setting_at(i);
            if (!in_section(s, g))
                continue;
            fputs(".TP\n\\fB", f);
            roff(f, s->key);
            fputs("\\fR", f);
            if (s->alias) {
                fputs(" (or \\fB", f);
                roff(f, s->alias);
                fputs("\\fR)", f);
            }
            fputs(" = \\fI", f);
            roff(f, s->type == CONF_RULE ? "GLOB LEVEL" : s->type == CONF_BOOL ? "yes|no" : s->unit ? s->unit : "VALUE");
            fputs("\\fR\n", f);
            snprintf(text, sizeof text, "%s", s->help);
            if (text[0] >= 'a' && text[0] <= 'z')
                text[0] = (char)(text[0] - 'a' + 'A');
            roff(f, text);
            fputs(".\n.br\n", f);
            roff(f, value_text(s, buf, sizeof buf));
            conf_default_text(s, buf, sizeof buf);
            fputs(buf[0] ? "; default " : "; no default", f);
            roff(f, buf);
            fputs(buf[0] && buf[strlen(buf) - 1] == '.' ? " Option " : ". Option ", f);
            if (s->short_opt)
                fprintf(f, "\\fB\\-%c\\fR, ", s->short_opt);
            fputs("\\fB\\-\\-", f);
            roff(f, s->long_opt);
            fputs(conf_setting_live(s) ? "\\fR. SIGHUP applies a new value at once.\n"
                                       : "\\fR. A new value waits for a restart.\n",
                  f);
        }
    }
    fputs(".SH DECLARED SETTINGS\n"
          "Besides the broker's own keys, the file may declare what \\fBsluice\\fR(1) sets while\n"
          "the broker runs and the store keeps: levels, the sink's limits, pools and per-tag settings,\n"
          "so that a broker set up by configuration management needs no script of CLI calls.\n"
          "Keys are the CLI's option names and values the CLI's values:\n"
          ".TP\n\\fB[level\\fR \\fINAME\\fR\\fB]\\fR\n"
          "a level, by name or number, as \\fBsluice level set\\fR and \\fBlevel pause\\fR.\n"
          ".TP\n\\fB[sink]\\fR\n"
          "the sink's limits, as \\fBsluice sink set\\fR, beside the section's own keys above.\n"
          ".TP\n\\fB[pool\\fR \\fINAME\\fR\\fB]\\fR\n"
          "a pool, made (for every level) if it does not exist, as \\fBsluice pool resize\\fR,\n"
          "\\fBpause\\fR and \\fBautoscale\\fR.\n"
          ".TP\n\\fB[tag \"\\fR\\fIPATTERN\\fR\\fB\"]\\fR\n"
          "a tag pattern, as \\fBsluice tag set\\fR (in the file's order, the first that matches a\n"
          "tag wins); \\fBpaused\\fR pauses the exact tag named, as \\fBsluice tag pause\\fR.\n"
          ".PP\n"
          "A name in quotes may hold any character (\\e\" and \\e\\e, \\en, \\et and \\exHH\n"
          "escapes); a pattern is at most 255 bytes, a pool's name 64. In these sections a key may be\n"
          "given once, except \\fBmax-rate\\fR, which is repeated for each window of a limit.\n"
          "A \\fIDURATION\\fR is off, seconds (0.5), or a number with a unit: 500ms, 30s, 5m, 1h,\n"
          "1d; a \\fIRATE\\fR units per second with up to three decimals, or off.\n"
          ".PP\n"
          "Precedence: at start, after the stored settings are loaded, and on every SIGHUP, each\n"
          "declared setting whose running value differs is applied as the CLI would apply it (checked,\n"
          "logged, stored): the file wins for what it declares. What it does not declare keeps what\n"
          "the store holds: the last change made with the CLI, or the default. A change made with the\n"
          "CLI to a declared setting lasts until the next SIGHUP or restart; taking a declaration out\n"
          "of the file changes nothing (declare the value wanted instead). A declaration the broker\n"
          "refuses (\\fBfair = tag\\fR for a level holding messages) is logged with its line and the\n"
          "others still apply; a declaration that does not read stops sluiced at start, like a bad key.\n"
          "\\fBsluice settings export\\fR prints the running settings in this syntax: loaded into a\n"
          "fresh broker, they export the same again.\n",
          f);
    static const char *const kinds[] = {"[sink]", "[level]", "[pool]", "[tag]"};
    static const struct {
        const char *key, *alias, *value, *help;
        unsigned kinds;
    } dkeys[] = {
#define DECL_KEY_DOC_(id, name, alias, in, type, value, help) {name, alias, value, help, in},
        DECL_KEYS(DECL_KEY_DOC_)
#undef DECL_KEY_DOC_
    };
    for (size_t i = 0; i < sizeof dkeys / sizeof dkeys[0]; i++) {
        fputs(".TP\n\\fB", f);
        roff(f, dkeys[i].key);
        fputs("\\fR", f);
        if (dkeys[i].alias) {
            fputs(" (or \\fB", f);
            roff(f, dkeys[i].alias);
            fputs("\\fR)", f);
        }
        fputs(" = \\fI", f);
        roff(f, dkeys[i].value);
        fputs("\\fR\nIn", f);
        for (unsigned k = 0, first = 1; k < DECL_KINDS; k++)
            if (dkeys[i].kinds >> k & 1) {
                fprintf(f, "%s%s", first ? " " : ", ", kinds[k]);
                first = 0;
            }
        fputs(": ", f);
        roff(f, dkeys[i].help);
        fputs(".\n", f);
    }
    char live[512];
    fputs(".SH RELOADING\n"
          "\\fBsystemctl reload sluiced\\fR sends SIGHUP: sluiced then reads this file again, and its\n"
          "command line, which still wins, between two passes of its loop. These keys take their\n"
          "new value at once, for what comes next (the next delivery's lease, the next publish's\n"
          "limits, the next log line), each change logged with its old and its new value:\n"
          ".IP\n",
          f);
    roff(f, live_keys(live, sizeof live));
    fputs(".\n"
          ".PP\n"
          "Every other key keeps its value until sluiced restarts, and a warning names each one\n"
          "that changed. SIGHUP also reopens the \\fBlog_file\\fR (after rotation), reads the\n"
          "principals of the \\fBauth\\fR file again (a new name for either waits for a restart), and\n"
          "applies the DECLARED SETTINGS again.\n"
          "A file that no longer reads changes nothing: the error is logged, and every setting\n"
          "stays as it was.\n"
          ".SH EXAMPLE\n"
          "A broker that serves other machines, with CURVE and principals, its console and metrics on\n"
          "loopback, five levels, two tag rules, the sink's limits, a deadline, a level served fair by\n"
          "tag, a pool and a tag pattern:\n"
          ".PP\n.RS 4\n.nf\n",
          f);
    roff(f, conf_example);
    fputs(".fi\n.RE\n"
          ".SH FILES\n"
          ".TP\n.I /etc/sluice/sluice.conf\nthe file the systemd unit passes to sluiced.\n",
          f);
    see_also(f, "sluice.conf", ".BR systemd.service (5)\n");
}

int conf_man_page(FILE *f, unsigned section)
{
    if (section == 8)
        man_sluiced(f);
    else if (section == 5)
        man_conf(f);
    else
        return SL_EINVAL;
    return SL_OK;
}
