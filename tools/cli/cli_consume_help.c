/*
 * cli_consume_help.c - what `sluice consume --help` says: the command's
 * usage, options and examples, kept apart from cli_consume.c's loop so
 * that the text and the code each read on their own. The layout is
 * cli_core.h's (cli_core_help); at most 80 lines, one screen.
 */
#include "cli_consume.h"

/* `sluice consume --help`; the layout is cli_core.h's */
const cli_core_help cli_consume_help = {
    .summary = "receive messages: print them, run a command or POST them",
    .body =
        "  sluice consume [--pool NAME] [-p LEVELS] [-n COUNT] [--workers N]\n"
        "                 [-c CREDIT] [--exec CMD | --post URL [--header H]...\n"
        "                 [--http-timeout DURATION] [--tag-limit-header NAME[=VALUE]]]\n"
        "                 [--verbose] [--idle-exit DURATION]\n"
        "      Receive messages, print each body on its own line, and acknowledge it\n"
        "      once printed. Runs until SIGINT or SIGTERM unless -n or --idle-exit\n"
        "      ends it; messages in progress are then settled, the others return to\n"
        "      the broker (a second signal stops at once). A broker that stalls for\n"
        "      up to a minute keeps the connection; one that restarts or is gone\n"
        "      longer is said on standard error and reconnected to (every 0.1 s) for\n"
        "      up to 10 minutes before consume exits 1; what was not settled is\n"
        "      delivered again. With -b A,B: one consumer per broker.\n"
        "      --pool NAME          consumer pool to join (default: \"default\")\n"
        "      -p, --levels LEVELS  comma-separated level names or numbers, such as\n"
        "                           high,normal or 0,2 (default: all levels)\n"
        "      -n, --count COUNT    stop after COUNT messages acked, nacked or\n"
        "                           returned as throttled\n"
        "      --workers N          process up to N messages at once, each in its own\n"
        "                           thread (default 1, at most 256); with a pool size,\n"
        "                           the workers follow this member's share of it\n"
        "      -c, --credit CREDIT  deliveries to hold unacknowledged at once, those\n"
        "                           waiting for a worker included (default: the\n"
        "                           number of workers; at most 100000)\n"
        "      --exec CMD           run /bin/sh -c CMD for each message with the body\n"
        "                           on its standard input: exit 0 acks it; 65 (it can\n"
        "                           never succeed) rejects it, a dead letter at once\n"
        "                           whose reason keeps the status and the last line\n"
        "                           of standard error; 75 (the sink said \"too many\n"
        "                           requests\") returns it uncharged, and the broker\n"
        "                           pauses and slows the sink; 76 does that for its\n"
        "                           tag alone; anything else nacks it with --post's\n"
        "                           backoff. Bodies are not printed.\n"
        "      --post URL           POST each body to URL (http or https): 2xx acks;\n"
        "                           429 or 503 returns it as throttled, honouring\n"
        "                           Retry-After; another 5xx, no answer or a timeout\n"
        "                           nacks with backoff (0.5 s doubling, at most 60 s);\n"
        "                           another 4xx rejects it to the dead letters.\n"
        "      --header 'Name: value'  add a request header (repeatable)\n"
        "      --http-timeout DURATION  limit for each request (default 10s; a plain\n"
        "                           number is milliseconds)\n"
        "      --tag-limit-header NAME[=VALUE]\n"
        "                           a 429 or 503 carrying header NAME (with VALUE, any\n"
        "                           case) hit a per-tag limit: the message returns as\n"
        "                           throttled for its tag alone (as exit 76 of --exec)\n"
        "      -v, --verbose        prefix each body with\n"
        "                           \"id=ID level=NAME tag=TAG attempt=N \" (and\n"
        "                           \"cost=N \" when not 1); with --post, say what each\n"
        "                           429 and 5xx did\n"
        "      --idle-exit DURATION  exit once no message has arrived or been in\n"
        "                           progress for this long (milliseconds, or 2s, 5m)\n",
    .examples =
        "  sluice consume -p high,normal --exec ./job.sh --idle-exit 2s\n"
        "  sluice consume --pool render --workers 4 --exec ./render.sh\n"
        "  sluice consume --post http://127.0.0.1:8080/jobs --workers 8\n",
};
