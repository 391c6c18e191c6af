/*
 * conf_decl.h - the live settings a config file may declare besides the
 * broker's own (conf.c's table): levels, the sink, pools and tag patterns,
 * in sections of their own ([level NAME], [pool NAME], [tag "PATTERN"]) and
 * in [sink], named and written as the CLI's options and values. The one
 * table of those keys: admin/decl.c reads and applies them, admin/decl_export.c
 * writes them back (settings.export), conf_help.c documents them in
 * sluice.conf(5). A new key is a line here and its value's field in
 * decl_obj (admin/decl_int.h).
 */
#ifndef SLUICE_CONF_DECL_H
#define SLUICE_CONF_DECL_H

/* The kinds of object a section declares, in the order export writes them. */
enum decl_kind { DECL_SINK, DECL_LEVEL, DECL_POOL, DECL_TAG, DECL_KINDS };

#define DECL_IN_LEVEL (1u << DECL_LEVEL)
#define DECL_IN_SINK (1u << DECL_SINK)
#define DECL_IN_POOL (1u << DECL_POOL)
#define DECL_IN_TAG (1u << DECL_TAG)

/* How a key's value is written (admin/decl_text.c). */
enum decl_type { DECL_DURATION, DECL_COUNT, DECL_RATE, DECL_WINDOWS, DECL_BOOL, DECL_FAIR };

/* X(ID, "key", "alias" or NULL, kinds, type, "VALUE", "help"): the order is
 * the order export writes a section's keys in. */
#define DECL_KEYS(X)                                                                                               \
    X(deadline, "deadline", NULL, DECL_IN_LEVEL, DURATION, "DURATION",                                             \
      "a message that has waited longer than this is served before higher levels (sluice level set --deadline)")  \
    X(aging, "aging-step", NULL, DECL_IN_LEVEL, DURATION, "DURATION",                                              \
      "each time a message has waited this long it counts as one level higher (--aging-step)")                    \
    X(size, "size", NULL, DECL_IN_POOL, COUNT, "N",                                                                \
      "the most deliveries the pool's members hold at once, 0 for no limit (sluice pool resize); left out of an "  \
      "export while autoscale is on")                                                                             \
    X(weight, "weight", NULL, DECL_IN_TAG, COUNT, "1..1000",                                                       \
      "turns per round of the fair pick for each tag the pattern matches (sluice tag set --weight)")              \
    X(max_rate, "max-rate", "rate", DECL_IN_LEVEL | DECL_IN_SINK | DECL_IN_TAG, WINDOWS, "WINDOW",                 \
      "a window of the rate limit, as --max-rate: RATE per second (its burst is burst's), COUNT/PERIOD such as "  \
      "500/min or 8/10s (its burst is COUNT), either with :BURST, or off; repeat the key for up to 4 windows")    \
    X(min_rate, "min-rate", NULL, DECL_IN_LEVEL, RATE, "RATE",                                                     \
      "units per second of the sink's rate the level gets before lower levels, or off (--min-rate)")              \
    X(burst, "burst", NULL, DECL_IN_LEVEL | DECL_IN_SINK | DECL_IN_TAG, COUNT, "N",                                \
      "the burst of the limit's per-second window (--burst); a tag's needs a per-second rate")                    \
    X(inflight, "inflight", NULL, DECL_IN_SINK | DECL_IN_TAG, COUNT, "N",                                          \
      "the most deliveries out at once, 0 or off for no cap (--inflight)")                                        \
    X(each, "each", NULL, DECL_IN_TAG, BOOL, "yes|no",                                                             \
      "a bucket and an in-flight cap for each tag the pattern matches, instead of one shared (--each)")           \
    X(fair, "fair", NULL, DECL_IN_LEVEL, FAIR, "tag|fifo",                                                         \
      "how the level is served: fair by tag, or in publish order (--fair); changed only while the level is empty") \
    X(autoscale, "autoscale", NULL, DECL_IN_POOL, BOOL, "on|off",                                                  \
      "let the broker size the pool between min and max (sluice pool autoscale)")                                 \
    X(min, "min", NULL, DECL_IN_POOL, COUNT, "N", "the smallest size autoscaling chooses (--min)")                 \
    X(max, "max", NULL, DECL_IN_POOL, COUNT, "N", "the largest size autoscaling chooses (--max)")                  \
    X(target_wait, "target-wait", NULL, DECL_IN_POOL, DURATION, "DURATION",                                        \
      "the wait before delivery autoscaling aims for (--target-wait)")                                            \
    X(paused, "paused", NULL, DECL_IN_LEVEL | DECL_IN_POOL | DECL_IN_TAG, BOOL, "yes|no",                          \
      "nothing is delivered from the level, to the pool, or of the exact tag named (level|pool|tag pause)")

enum decl_key {
#define DECL_KEY_ENUM_(id, name, alias, kinds, type, value, help) DECL_K_##id,
    DECL_KEYS(DECL_KEY_ENUM_)
#undef DECL_KEY_ENUM_
    DECL_K_COUNT_
};

#endif /* SLUICE_CONF_DECL_H */
