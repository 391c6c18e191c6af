/*
 * cli_pool.c - `sluice pool`: the commands that look after the broker's
 * consumer pools (list, resize, pause, resume, autoscale, delete). The level
 * commands are in cli_level.c, the sink's in cli_sink.c.
 *
 * Each is one request through the client library (its administration
 * calls), whose answer is printed: lists as a table or as JSON, changes as
 * one line that says what now holds, on standard output. Settings given in
 * seconds, and rates in units per second, are read and shown exactly
 * (cli_text.c), so what an operator set is what the list shows. The broker
 * checks every value against its own limits and says which one it refused;
 * this file checks only what it must to build the request.
 */
#include "cli_pool.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli_table.h"
#include "cli_text.h"

/* `sluice pool --help`; the layout is cli_core.h's */
const cli_core_help cli_pool_help = {
    .summary = "look after consumer pools: list, resize, pause, autoscale, delete",
    .body =
        "  sluice pool list [--json]\n"
        "      Show each consumer pool: the levels it serves, its size (the most\n"
        "      deliveries its members hold at once; \"-\" for no limit), its members,\n"
        "      the deliveries they hold, deliveries per second, the size autoscaling\n"
        "      would choose, and whether it is paused or autoscaled.\n"
        "  sluice pool resize NAME SIZE\n"
        "      Let pool NAME hold at most SIZE deliveries at once (0: no limit),\n"
        "      creating it, for all levels, if needed. Shrinking never takes back a\n"
        "      delivery in progress. Members are told their share of the size.\n"
        "  sluice pool pause NAME\n"
        "  sluice pool resume NAME\n"
        "      Stop, or restart, deliveries to the pool's members.\n"
        "  sluice pool delete NAME [--force] [--json]\n"
        "      Delete pool NAME and its settings. A pool with members is refused\n"
        "      unless --force, which drops them as if they had said goodbye (their\n"
        "      deliveries return uncharged). A pool consumers created by naming it,\n"
        "      and nobody sized, paused or autoscaled, goes away by itself once idle\n"
        "      for --pool-reap-ms (a minute); the broker holds --pool-max pools.\n"
        "  sluice pool autoscale NAME --min A --max B --target-wait DURATION\n"
        "  sluice pool autoscale NAME --off\n"
        "      Let the broker size the pool between A and B from its backlog, its\n"
        "      arrival rate and how long messages take, so that a message waits\n"
        "      about DURATION (seconds, fractions allowed, or 500ms, 2m) before it\n"
        "      is delivered. --off stops that and keeps the current size.\n"
        "  Changes to pools take effect at once and survive a broker restart.\n",
    .examples =
        "  sluice pool resize render 8                  8 at once across the pool\n"
        "  sluice pool autoscale render --min 1 --max 32 --target-wait 2s\n"
        "  sluice pool pause render                     hold deliveries to render\n",
};

/* Long-only options get values outside the char range. */
enum {
    OPT_MIN = 256,
    OPT_MAX,
    OPT_TARGET_WAIT,
    OPT_OFF,
    OPT_FORCE
};

/* ---- pool ---- */

/* The broker's level names, read once per command; n is 0 when they could
 * not be read, and levels then show as numbers. */
typedef struct level_names {
    unsigned n;
    const char *const *names;
} level_names;

static const char *level_label(const level_names *ln, unsigned level, char *buf, size_t size)
{
    if (level < ln->n)
        return ln->names[level];
    snprintf(buf, size, "%u", level);
    return buf;
}

/* mask_format writes the levels in mask as "high,normal" ("-" for none). */
static void mask_format(const level_names *ln, uint32_t mask, char *buf, size_t size)
{
    size_t used = 0;
    snprintf(buf, size, "-");
    for (unsigned l = 0; l < 32 && used < size; l++) {
        if (!(mask >> l & 1))
            continue;
        char number[16];
        int w = snprintf(buf + used, size - used, "%s%s", used ? "," : "",
                         level_label(ln, l, number, sizeof number));
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

static void pools_json(const level_names *ln, const sl_pool_info *pools, unsigned n)
{
    printf("{\"pools\":[");
    for (unsigned i = 0; i < n; i++) {
        const sl_pool_info *p = &pools[i];
        printf("%s{\"name\":", i ? "," : "");
        cli_text_json_string(p->name);
        printf(",\"levels\":[");
        for (unsigned l = 0, first = 1; l < 32; l++) {
            char number[16];
            if (!(p->levels_mask >> l & 1))
                continue;
            printf("%s", first ? "" : ",");
            cli_text_json_string(level_label(ln, l, number, sizeof number));
            first = 0;
        }
        printf("],\"size\":%" PRIu32 ",\"members\":%" PRIu32 ",\"inflight\":%" PRIu32
               ",\"rate_per_s\":%.3f,\"recommended\":%" PRIu32 ",\"paused\":%s"
               ",\"autoscale\":%s}",
               p->size, p->members, p->inflight, p->rate_per_s, p->recommended,
               p->paused ? "true" : "false", p->autoscale ? "true" : "false");
    }
    printf("]}\n");
}

static int pools_table(const level_names *ln, const sl_pool_info *pools, unsigned n)
{
    static const char *const head[] = {"NAME",     "LEVELS", "SIZE",        "MEMBERS",
                                       "INFLIGHT", "RATE/S", "RECOMMENDED", "FLAGS"};
    cli_table *t = cli_table_new(8, head, "llrrrrrl", n);
    if (!t)
        return -1;
    for (unsigned i = 0; i < n; i++) {
        const sl_pool_info *p = &pools[i];
        char levels[SL_MAX_LEVELS * 66];
        mask_format(ln, p->levels_mask, levels, sizeof levels);
        cli_table_add(t, "%s", p->name);
        cli_table_add(t, "%s", levels);
        if (p->size)
            cli_table_add(t, "%" PRIu32, p->size);
        else
            cli_table_add(t, "-");
        cli_table_add(t, "%" PRIu32, p->members);
        cli_table_add(t, "%" PRIu32, p->inflight);
        cli_table_add(t, "%.1f", p->rate_per_s);
        cli_table_add(t, "%" PRIu32, p->recommended);
        cli_table_add(t, "%s",
                      p->paused && p->autoscale ? "paused,autoscale"
                      : p->paused               ? "paused"
                      : p->autoscale            ? "autoscale"
                                                : "-");
    }
    int rc = cli_table_print(t);
    cli_table_destroy(&t);
    return rc;
}

static int pool_list(cli_core *g, const char *cmd, int argc, char **argv)
{
    bool json = false;
    int st = cli_core_show_args(g, cmd, argc, argv, &json);
    if (st != CLI_CORE_GO_ON)
        return st;
    sl_pool_info pools[SL_MAX_POOLS];
    unsigned n = 0;
    int rc = sl_pool_list(g->c, pools, &n);
    if (rc)
        return cli_core_broker_error(g, cmd, rc, "", NULL);
    g->answered = true;
    level_names ln = {0};
    if (sl_levels(g->c, &ln.n, &ln.names))
        ln.n = 0;
    if (json) {
        pools_json(&ln, pools, n);
    } else if (pools_table(&ln, pools, n)) {
        cli_text_say(cmd, "out of memory");
        return CLI_TEXT_EXIT_FAILURE;
    }
    return cli_core_output_done(cmd);
}

static int pool_resize(cli_core *g, const char *cmd, int argc, char **argv)
{
    int st = cli_core_plain_args(g, cmd, argc, argv, NULL, 2, "a pool name and a size");
    if (st != CLI_CORE_GO_ON)
        return st;
    const char *name = argv[optind], *size_text = argv[optind + 1];
    long size;
    if (cli_core_pool_check(cmd, name) != CLI_CORE_GO_ON)
        return CLI_TEXT_EXIT_USAGE;
    if (!cli_text_number_parse(size_text, 0, UINT32_MAX, &size))
        return cli_text_usage_error(cmd, "bad size '%s' (expected a number; 0 for no limit)",
                                    size_text);
    if ((st = cli_core_connect(g, cmd)))
        return st;
    int rc = sl_pool_resize(g->c, name, (uint32_t)size);
    if (rc)
        return cli_core_broker_error(g, cmd, rc, name, NULL);
    if (size)
        printf("pool %s: size %ld\n", name, size);
    else
        printf("pool %s: no size limit\n", name);
    return cli_core_output_done(cmd);
}

/* pool_pause is both "pool pause" and "pool resume". */
static int pool_pause(cli_core *g, const char *cmd, int argc, char **argv)
{
    bool pause = strcmp(argv[0], "pause") == 0;
    int st = cli_core_plain_args(g, cmd, argc, argv, NULL, 1, "a pool name");
    if (st != CLI_CORE_GO_ON)
        return st;
    const char *name = argv[optind];
    if (cli_core_pool_check(cmd, name) != CLI_CORE_GO_ON)
        return CLI_TEXT_EXIT_USAGE;
    if ((st = cli_core_connect(g, cmd)))
        return st;
    int rc = sl_pool_pause(g->c, name, pause);
    if (rc)
        return cli_core_broker_error(g, cmd, rc, name, NULL);
    printf("pool %s: %s\n", name, pause ? "paused" : "resumed");
    return cli_core_output_done(cmd);
}

/* pool_name_arg takes the one operand of a pool command, a pool name, as
 * *name: CLI_CORE_GO_ON, or the usage error's exit status. */
static int pool_name_arg(const char *cmd, int argc, char **argv, const char **name)
{
    if (argc - optind != 1)
        return argc - optind
                   ? cli_text_usage_error(cmd, "unexpected argument '%s'", argv[optind + 1])
                   : cli_text_usage_error(cmd, "expected a pool name");
    *name = argv[optind];
    return cli_core_pool_check(cmd, *name) == CLI_CORE_GO_ON ? CLI_CORE_GO_ON : CLI_TEXT_EXIT_USAGE;
}

static int pool_delete(cli_core *g, const char *cmd, int argc, char **argv)
{
    static const struct option opts[] = {
        {"force", no_argument, NULL, OPT_FORCE},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool force = false, json = false;
    int ch;
    optind = 0;
    while ((ch = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (ch) {
        case OPT_FORCE: force = true; break;
        case 'j': json = true; break;
        case 'h': return cli_core_help_show(g, cmd);
        default: return cli_text_option_error(cmd, ch, argv);
        }
    }
    const char *name = NULL;
    int st = pool_name_arg(cmd, argc, argv, &name);
    if (st != CLI_CORE_GO_ON)
        return st;
    st = cli_core_connect(g, cmd);
    if (st)
        return st;
    int rc = sl_pool_delete(g->c, name, force);
    if (rc)
        return cli_core_broker_error(g, cmd, rc, name, NULL);
    if (json) {
        fputs("{\"pool\":", stdout);
        cli_text_json_string(name);
        printf(",\"deleted\":true,\"forced\":%s}\n", force ? "true" : "false");
    } else {
        printf("pool %s: deleted\n", name);
    }
    return cli_core_output_done(cmd);
}

static int pool_autoscale(cli_core *g, const char *cmd, int argc, char **argv)
{
    static const struct option opts[] = {
        {"min", required_argument, NULL, OPT_MIN},
        {"max", required_argument, NULL, OPT_MAX},
        {"target-wait", required_argument, NULL, OPT_TARGET_WAIT},
        {"off", no_argument, NULL, OPT_OFF},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    long min = -1, max = -1;
    uint64_t wait_ms = 0;
    bool off = false, have_wait = false;
    int ch;
    optind = 0;
    while ((ch = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (ch) {
        case OPT_MIN:
        case OPT_MAX:
            if (!cli_text_number_parse(optarg, 1, UINT32_MAX, ch == OPT_MIN ? &min : &max))
                return cli_text_usage_error(cmd, "bad --%s '%s' (expected a positive number)",
                                            ch == OPT_MIN ? "min" : "max", optarg);
            break;
        case OPT_TARGET_WAIT:
            if (!cli_text_seconds_parse(optarg, false, &wait_ms) || wait_ms == 0)
                return cli_text_usage_error(cmd,
                                            "bad --target-wait '%s' (expected seconds, such as 2 "
                                            "or 0.5, at most 3 decimals)",
                                            optarg);
            have_wait = true;
            break;
        case OPT_OFF: off = true; break;
        case 'h': return cli_core_help_show(g, cmd);
        default: return cli_text_option_error(cmd, ch, argv);
        }
    }
    const char *name = NULL;
    int st = pool_name_arg(cmd, argc, argv, &name);
    if (st != CLI_CORE_GO_ON)
        return st;
    bool any = min >= 0 || max >= 0 || have_wait;
    if (off && any)
        return cli_text_usage_error(cmd, "--off takes no --min, --max or --target-wait");
    if (!off && (min < 0 || max < 0 || !have_wait))
        return cli_text_usage_error(cmd, "give --min, --max and --target-wait, or --off");
    if (!off && min > max)
        return cli_text_usage_error(cmd, "--min %ld is more than --max %ld", min, max);
    st = cli_core_connect(g, cmd);
    if (st)
        return st;
    int rc = off ? sl_pool_autoscale(g->c, name, 0, 0, 0, 0)
                 : sl_pool_autoscale(g->c, name, (uint32_t)min, (uint32_t)max, wait_ms, 1);
    if (rc)
        return cli_core_broker_error(g, cmd, rc, name, NULL);
    char wait[32];
    cli_text_seconds_format(wait_ms, wait, sizeof wait);
    if (off)
        printf("pool %s: autoscaling off; the size stays as it is\n", name);
    else
        printf("pool %s: autoscaling between %ld and %ld, for a wait of about %s\n", name, min, max,
               wait);
    return cli_core_output_done(cmd);
}

int cli_pool_main(cli_core *g, const char *cmd, int argc, char **argv)
{
    static const cli_core_command subs[] = {
        {"list", pool_list, NULL},    {"resize", pool_resize, NULL},       {"pause", pool_pause, NULL},
        {"resume", pool_pause, NULL}, {"autoscale", pool_autoscale, NULL},
        {"delete", pool_delete, NULL},
    };
    return cli_core_run(g, cmd, subs, sizeof subs / sizeof subs[0], argc - 1, argv + 1);
}
