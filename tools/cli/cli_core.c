/*
 * cli_core.c - the ground the `sluice` command's files share.
 *
 * Errors from the library are reported once, by the command that made the
 * call, with what it was doing, the error's name, and the broker's own words
 * when they add something to the generic message. A timeout before the
 * broker has answered anything is reported as "cannot reach", since that is
 * nearly always what it means.
 *
 * The global options (-b, --timeout, --client-key, --key, --server-key) are
 * applied here, whether they come before the command or after its name:
 * cli_core_globals_take lifts them out of the command's argv before the
 * command's own getopt sees it. A value of another option that reads like a
 * global option must follow "--". One clash: `send --key` (and -k) is the
 * idempotency key, so after `send` only --client-key names the key file.
 */
#include "cli_core.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "cli_text.h"

void cli_core_help_print(const cli_core_help *h, FILE *out)
{
    fprintf(out, "Usage:\n%s", h->body);
    if (h->examples)
        fprintf(out, "\nExamples:\n%s", h->examples);
    fputs("\nGlobal options (-b, --timeout, --client-key, --server-key) and exit status:\n"
          "'sluice --help'. Every command's help: 'sluice help --all', or man sluice.\n",
          out);
}

int cli_core_help_show(cli_core *g, const char *cmd)
{
    if (g->help)
        cli_core_help_print(g->help, stdout);
    return cli_core_output_done(cmd);
}

/* distance is the optimal string alignment distance of a and b (edits,
 * a swap of neighbours counting one), at most 32 bytes of each. */
static size_t distance(const char *a, const char *b)
{
    size_t la = strnlen(a, 32), lb = strnlen(b, 32), d[33][33];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[la][lb];
}

const char *cli_core_nearest(const cli_core_command *table, size_t n, const char *word)
{
    const char *best = NULL, *prefixed = NULL;
    size_t best_d = SIZE_MAX, prefixes = 0, len = strlen(word);
    for (size_t i = 0; i < n; i++) {
        size_t d = distance(word, table[i].name);
        if (d < best_d)
            best_d = d, best = table[i].name;
        if (len >= 2 && strncmp(table[i].name, word, len) == 0)
            prefixes++, prefixed = table[i].name;
    }
    if (best && best_d <= (strlen(best) > 4 ? 2u : 1u) && best_d < len)
        return best;
    return prefixes == 1 ? prefixed : NULL;
}

int cli_core_run(cli_core *g, const char *group, const cli_core_command *table, size_t n, int argc,
                 char **argv)
{
    char names[200] = "", cmd[64];
    if (group && argc > 0 && (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0))
        return cli_core_help_show(g, group);
    for (size_t i = 0; i < n; i++) {
        if (argc > 0 && strcmp(argv[0], table[i].name) == 0) {
            snprintf(cmd, sizeof cmd, "%s%s%s", group ? group : "", group ? " " : "", argv[0]);
            if (table[i].help)
                g->help = table[i].help;
            return table[i].fn(g, cmd, argc, argv);
        }
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                 i == 0       ? ""
                 : i + 1 == n ? " or "
                              : ", ",
                 table[i].name);
    }
    if (argc == 0)
        return cli_text_usage_error(group, "no command given (%s)", names);
    const char *near = cli_core_nearest(table, n, argv[0]);
    if (near)
        return cli_text_usage_error(group, "unknown command '%s': did you mean '%s'?", argv[0], near);
    return cli_text_usage_error(group, "unknown command '%s' (%s)", argv[0], names);
}

int cli_core_global_set(cli_core *g, const char *name, const char *value)
{
    uint64_t timeout_ms;
    if (strcmp(name, "broker") == 0) {
        g->endpoint = value;
        return CLI_CORE_GO_ON;
    }
    if (strcmp(name, "key") == 0 || strcmp(name, "server-key") == 0) {
        *(name[0] == 'k' ? &g->key_file : &g->server_key_file) = value;
        return CLI_CORE_GO_ON;
    }
    if (!cli_text_duration_parse(value, 1, false, INT_MAX, &timeout_ms) || !timeout_ms)
        return cli_text_usage_error(NULL, "bad --timeout '%s' (expected milliseconds, or 5s, 1m)", value);
    g->timeout_ms = (int)timeout_ms;
    return CLI_CORE_GO_ON;
}

int cli_core_globals_take(cli_core *g, int argc, char **argv)
{
    int out = 1, i = 1;
    /* `send --key KEY` is the message's idempotency key, not a key file */
    const bool send_cmd = argc > 0 && strcmp(argv[0], "send") == 0;
    for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
        const char *a = argv[i], *name = NULL, *value = NULL;
        if (strcmp(a, "-b") == 0 || strcmp(a, "--broker") == 0)
            name = "broker";
        else if (strcmp(a, "--timeout") == 0)
            name = "timeout";
        else if (strcmp(a, "--server-key") == 0)
            name = "server-key";
        else if (strcmp(a, "--client-key") == 0 || (strcmp(a, "--key") == 0 && !send_cmd))
            name = "key";
        else if (strncmp(a, "--server-key=", 13) == 0)
            name = "server-key", value = a + 13;
        else if (strncmp(a, "--client-key=", 13) == 0)
            name = "key", value = a + 13;
        else if (strncmp(a, "--key=", 6) == 0 && !send_cmd)
            name = "key", value = a + 6;
        else if (strncmp(a, "-b", 2) == 0 && a[2] != '\0')
            name = "broker", value = a + 2;
        else if (strncmp(a, "--broker=", 9) == 0)
            name = "broker", value = a + 9;
        else if (strncmp(a, "--timeout=", 10) == 0)
            name = "timeout", value = a + 10;
        if (!name) {
            argv[out++] = argv[i];
            continue;
        }
        if (!value) {
            if (i + 1 >= argc)
                return -cli_text_usage_error(NULL, "option '%s' needs a value", a);
            value = argv[++i];
        }
        int st = cli_core_global_set(g, name, value);
        if (st != CLI_CORE_GO_ON)
            return -st;
    }
    while (i < argc)
        argv[out++] = argv[i++];
    argv[out] = NULL;
    return out;
}

/* keys_read fills o's CURVE keys from --key and --server-key (or
 * SLUICE_KEY, SLUICE_SERVER_KEY). Returns CLI_CORE_GO_ON or the exit status. */
static int keys_read(cli_core *g, const char *cmd, sl_options *o, char *pub, char *sec, char *server)
{
    if (!g->key_file && !g->server_key_file)
        return CLI_CORE_GO_ON;
    if (!g->key_file || !g->server_key_file)
        return cli_text_usage_error(cmd, "%s needs %s too (or $%s)",
                                    g->key_file ? "--client-key" : "--server-key",
                                    g->key_file ? "--server-key" : "--client-key",
                                    g->key_file ? "SLUICE_SERVER_KEY" : "SLUICE_KEY");
    int rc = sl_key_read(g->key_file, pub, sec);
    if (rc || !pub[0] || !sec[0])
        return cli_text_usage_error(cmd, "--client-key %s: %s", g->key_file,
                                    rc == SL_ENOTFOUND ? "cannot read it"
                                                       : "not a .key file from `sluice keygen` (public and secret keys)");
    rc = sl_key_read(g->server_key_file, server, NULL);
    if (rc || !server[0])
        return cli_text_usage_error(cmd, "--server-key %s: %s", g->server_key_file,
                                    rc == SL_ENOTFOUND ? "cannot read it"
                                                       : "not a .pub file from `sluice keygen` (a public key)");
    o->public_key = pub, o->secret_key = sec, o->server_key = server;
    return CLI_CORE_GO_ON;
}

int cli_core_connect(cli_core *g, const char *cmd)
{
    /* a long heartbeat: a broker that stalls (stopped, a long commit) for up
     * to a minute keeps its connection, and what is in flight is answered
     * when it goes on; a broker that exits closes the connection at once */
    sl_options o = {.timeout_ms = g->timeout_ms, .heartbeat_ms = CLI_CORE_HEARTBEAT_MS};
    char pub[SL_KEY_BYTES], sec[SL_KEY_BYTES], server[SL_KEY_BYTES];
    int st = keys_read(g, cmd, &o, pub, sec, server);
    if (st != CLI_CORE_GO_ON)
        return st;
    int rc = sl_connect(g->endpoint, &o, &g->c);
    if (rc == SL_EINVAL)
        return cli_text_usage_error(cmd,
                                    "invalid broker endpoint '%s' (expected tcp://HOST:PORT "
                                    "or ipc://PATH)",
                                    g->endpoint);
    if (rc)
        return cli_core_broker_error(g, cmd, rc, "cannot create the client", NULL);
    return 0;
}

int cli_core_broker_error(cli_core *g, const char *cmd, int rc, const char *context,
                          const char *extra)
{
    if (rc == SL_ETIMEDOUT && !g->answered) {
        cli_text_say(NULL, "cannot reach broker at %s (timed out after %d ms); is sluiced running?",
                     g->endpoint, g->timeout_ms);
        return CLI_TEXT_EXIT_FAILURE;
    }
    if (rc == SL_ECONNECT && !g->answered) {
        cli_text_say(NULL, "cannot reach broker at %s (connection refused); is sluiced running?", g->endpoint);
        return CLI_TEXT_EXIT_FAILURE;
    }
    const char *generic = sl_strerror(rc);
    const char *text = g->c ? sl_last_error(g->c) : generic;
    bool detail = strcmp(text, generic) != 0 && text[0];
    char safe[1024]; /* the broker's words may quote a client's text */
    cli_text_safe(text, strlen(text), safe, sizeof safe);
    cli_text_say(cmd, "%s%s%s (%s)%s%s%s", context, context[0] ? ": " : "", generic, sl_errname(rc),
                 detail ? ": " : "", detail ? safe : "", extra ? extra : "");
    return CLI_TEXT_EXIT_FAILURE;
}

/* levels_list writes the broker's level names as "high, normal, low". */
static void levels_list(cli_core *g, char *buf, size_t size)
{
    unsigned n = 0;
    const char *const *names = NULL;
    size_t used = 0;
    buf[0] = '\0';
    if (sl_levels(g->c, &n, &names))
        return;
    for (unsigned i = 0; i < n && used < size; i++) {
        int w = snprintf(buf + used, size - used, "%s%s", i ? ", " : "", names[i]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

int cli_core_level_resolve(cli_core *g, const char *cmd, const char *text, unsigned *level)
{
    int rc = sl_level_parse(g->c, text, level);
    if (rc == SL_OK) {
        g->answered = true;
        return 0;
    }
    if (rc != SL_ENOLEVEL)
        return cli_core_broker_error(g, cmd, rc, "reading the broker's levels", NULL);
    char names[SL_MAX_LEVELS * 70];
    levels_list(g, names, sizeof names);
    return cli_text_usage_error(cmd, "no such level '%s' (the broker has: %s)", text, names);
}

const char *cli_core_level_name(cli_core *g, unsigned level, char *buf, size_t size)
{
    unsigned n = 0;
    const char *const *names = NULL;
    if (sl_levels(g->c, &n, &names) == SL_OK && level < n)
        return names[level];
    snprintf(buf, size, "%u", level);
    return buf;
}

int cli_core_show_args(cli_core *g, const char *cmd, int argc, char **argv, bool *json)
{
    int st = cli_core_plain_args(g, cmd, argc, argv, json, 0, "");
    if (st == CLI_CORE_GO_ON && (st = cli_core_connect(g, cmd)) == 0)
        st = CLI_CORE_GO_ON;
    return st;
}

int cli_core_plain_args(cli_core *g, const char *cmd, int argc, char **argv, bool *json,
                        int noperands, const char *operands)
{
    static const struct option with_json[] = {
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const struct option *opts = json ? with_json : with_json + 1;
    int ch;
    optind = 0;
    while ((ch = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (ch) {
        case 'j': *json = true; break;
        case 'h': return cli_core_help_show(g, cmd);
        default: return cli_text_option_error(cmd, ch, argv);
        }
    }
    if (argc - optind < noperands)
        return cli_text_usage_error(cmd, "expected %s", operands);
    if (argc - optind > noperands)
        return cli_text_usage_error(cmd, "unexpected argument '%s'", argv[optind + noperands]);
    return CLI_CORE_GO_ON;
}

int cli_core_pool_check(const char *cmd, const char *name)
{
    if (!name[0] || strlen(name) > CLI_CORE_NAME_MAX_BYTES)
        return cli_text_usage_error(cmd, "bad pool name '%s' (1 to %d bytes)", name,
                                    CLI_CORE_NAME_MAX_BYTES);
    return CLI_CORE_GO_ON;
}

int cli_core_output_done(const char *cmd)
{
    if (fflush(stdout) || ferror(stdout)) {
        cli_text_say(cmd, "writing to standard output: %s", cli_text_strerror(errno));
        return CLI_TEXT_EXIT_FAILURE;
    }
    return 0;
}

int64_t cli_core_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int cli_core_id_args(cli_core *g, const char *cmd, int argc, char **argv, uint64_t *id)
{
    int st = cli_core_plain_args(g, cmd, argc, argv, NULL, 1, "a message id");
    if (st != CLI_CORE_GO_ON)
        return st;
    if (!cli_text_u64_parse(argv[optind], id))
        return cli_text_usage_error(cmd, "bad message id '%s' (expected a number)", argv[optind]);
    if ((st = cli_core_connect(g, cmd)))
        return st;
    return CLI_CORE_GO_ON;
}
