/*
 * decl.c - settings declared in sluice.conf, so that a broker set up by
 * configuration management needs no script of CLI calls:
 *
 *   [sink]                   the broker's [sink] section; besides its
 *   max-rate = 100           settings (breaker_*, throttle_backoff_ms)
 *   burst = 20               the sink's limits, as `sluice sink set`
 *
 *   [level high]             a level by name or number, as `sluice level set`
 *   deadline = 30s
 *   max-rate = 50/s
 *   max-rate = 2000/min      (repeated: several windows, all of which hold)
 *   fair = tag
 *
 *   [pool render]            as `sluice pool resize|pause|autoscale`
 *   size = 8
 *
 *   [tag "gold-*"]           a pattern, as `sluice tag set` (paused: the
 *   weight = 4               exact tag, as `sluice tag pause`)
 *
 * Keys are the CLI's option names, values the CLI's values (decl_text.c);
 * DECL_KEYS (decl_int.h) lists them. conf.c hands these sections (and the
 * [sink] keys that are not its own) over to this file, which reads the file
 * itself: a tag pattern up to 255 bytes in a header is beyond inih's lines.
 *
 * Precedence. At start (after the stored settings are loaded) and on every
 * SIGHUP, each declared setting whose running value differs is applied by
 * the admin command the CLI would send, so it is checked, logged and stored
 * like a change made with the CLI: the file wins for what it declares. What
 * it does not declare keeps what the store holds (the last change made with
 * the CLI, or the default); a change made with the CLI to a declared setting
 * lasts until the next SIGHUP or restart; removing a declaration from the
 * file changes nothing (declare the value wanted instead). A command the
 * broker refuses (fair = tag on a level holding messages) is logged with
 * the file's line, and the others still apply; a file that does not read
 * stops the start (exit 2) and, on SIGHUP, changes nothing.
 *
 * Costs: a read of the file, and per declared object a compare of its
 * values as text; only what differs costs a command (and a stored write).
 */
#include "decl_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "bk.h"
#include "conf.h"
#include "log.h"
#include "net.h"

/* ---- reading the file ---- */

typedef struct reader {
    const conf *cfg;
    decl_list *l;
    int line;
    char *err;
    size_t errlen;
} reader;

__attribute__((format(printf, 2, 3))) static int fail(reader *r, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(r->err, r->errlen, "%s:%d: %s", r->l->path, r->line, msg);
    return SL_EINVAL;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && strchr(" \t\r\n", s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* unquote reads a quoted name at *p ('"' first, escapes \" \\ \n \t \xHH)
 * into out; *p ends past the closing quote. -1 when unterminated. */
static int unquote(const char **p, char *out, size_t cap, size_t *len)
{
    const char *s = *p + 1;
    size_t n = 0;
    for (; *s && *s != '"'; s++) {
        int c = (unsigned char)*s;
        if (c == '\\') {
            s++;
            if (*s == 'n')
                c = '\n';
            else if (*s == 't')
                c = '\t';
            else if (*s == 'x' && s[1] && s[2] && sscanf(s + 1, "%2x", (unsigned *)&c) == 1)
                s += 2;
            else if (*s)
                c = (unsigned char)*s;
            else
                return -1;
        }
        if (n + 1 >= cap)
            return -1;
        out[n++] = (char)c;
    }
    if (*s != '"')
        return -1;
    out[n] = '\0';
    *len = n;
    *p = s + 1;
    return 0;
}

/* find returns the list's object of that kind and name (or level), or NULL. */
static decl_obj *find(decl_list *l, int kind, const char *name, size_t len, unsigned level)
{
    for (size_t i = 0; i < l->n; i++) {
        decl_obj *o = &l->v[i];
        if (o->kind == kind && (kind == DECL_SINK || (kind == DECL_LEVEL && o->level == level) ||
                                (kind > DECL_LEVEL && o->name_len == len && !memcmp(o->name, name, len))))
            return o;
    }
    return NULL;
}

/* section opens the object a header names (text after '['), or sets *o
 * NULL for a section of the broker's own ([sink] gives the sink). */
static int section(reader *r, const char *text, decl_obj **o)
{
    static const char *const kinds[] = {"sink", "level", "pool", "tag"};
    char name[PROTO_MAX_TAG + 2], head[64];
    size_t len = 0;
    int kind;
    *o = NULL;
    const char *p = text;
    while (*p == ' ' || *p == '\t')
        p++;
    if (!conf_declared_section(p)) {
        size_t n = strcspn(p, "]");
        snprintf(head, sizeof head, "%.*s", (int)n, p);
        if (strcmp(trim(head), "sink"))
            return SL_OK; /* the broker's own: conf.c's */
        kind = DECL_SINK;
    } else {
        for (kind = DECL_LEVEL; strncmp(p, kinds[kind], strlen(kinds[kind])); kind++)
            ;
        p += strlen(kinds[kind]);
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '"') {
            if (unquote(&p, name, sizeof name, &len))
                return fail(r, "a quoted name needs its closing quote, and at most %d bytes", PROTO_MAX_TAG);
            while (*p == ' ' || *p == '\t')
                p++;
            if (*p != ']')
                return fail(r, "expected ] after the quoted name");
        } else {
            const char *close = strchr(p, ']'); /* a name holding ']' is quoted */
            if (!close)
                return fail(r, "expected ] at the end of the section's name");
            len = (size_t)(close - p);
            while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
                len--;
            if (len > PROTO_MAX_TAG)
                return fail(r, "a name is at most %d bytes", PROTO_MAX_TAG);
            memcpy(name, p, len);
            name[len] = '\0';
        }
        if (!len || (kind == DECL_POOL && len > PROTO_MAX_NAME) || memchr(name, '\0', len))
            return fail(r, "[%s NAME]: a %s of 1 to %d bytes", kinds[kind], kind == DECL_POOL ? "pool name" : "name",
                        kind == DECL_POOL ? PROTO_MAX_NAME : PROTO_MAX_TAG);
    }
    unsigned level = 0;
    if (kind == DECL_LEVEL) {
        unsigned long v;
        char *end;
        for (level = 0; level < r->cfg->levels && strcmp(r->cfg->level_names[level], name); level++)
            ;
        if (level == r->cfg->levels && name[0] >= '0' && name[0] <= '9' && (v = strtoul(name, &end, 10)) < r->cfg->levels &&
            !*end)
            level = (unsigned)v;
        if (level == r->cfg->levels)
            return fail(r, "[level %s]: no such level (the levels are %s ...; or 0 to %u)", name,
                        r->cfg->level_names[0], r->cfg->levels - 1);
    }
    *o = find(r->l, kind, name, len, level);
    if (*o)
        return SL_OK;
    if (r->l->n == r->l->cap) {
        size_t cap = r->l->cap ? r->l->cap * 2 : 16;
        decl_obj *v = realloc(r->l->v, cap * sizeof *v);
        if (!v)
            return SL_ENOMEM;
        r->l->v = v;
        r->l->cap = cap;
    }
    *o = &r->l->v[r->l->n++];
    memset(*o, 0, sizeof **o);
    (*o)->kind = kind;
    (*o)->level = level;
    (*o)->line = r->line;
    memcpy((*o)->name, name, len);
    (*o)->name_len = len;
    return SL_OK;
}

/* entry reads "key = value" into o (in [sink], a key of the broker's own
 * is conf.c's). */
static int entry(reader *r, decl_obj *o, char *line)
{
    char *sep = line + strcspn(line, "=:");
    if (!*sep)
        return fail(r, "expected [section] or key = value");
    *sep = '\0';
    char *key = trim(line), *value = sep + 1;
    for (char *c = value; *c; c++) /* an inline comment: " ;" */
        if (*c == ';' && c > value && (c[-1] == ' ' || c[-1] == '\t')) {
            *c = '\0';
            break;
        }
    value = trim(value);
    static const char *const kinds[] = {"[sink]", "[level]", "[pool]", "[tag]"};
    int k;
    for (k = 0; k < DECL_K_COUNT_; k++)
        if (!strcmp(decl_keys[k].name, key) || (decl_keys[k].alias && !strcmp(decl_keys[k].alias, key)))
            break;
    if (k == DECL_K_COUNT_ || !(decl_keys[k].kinds >> o->kind & 1)) {
        if (o->kind == DECL_SINK && conf_ini_known("sink", key))
            return SL_OK;
        return fail(r, "unknown key '%s' in a %s section; see sluice.conf(5)", key, kinds[o->kind]);
    }
    if ((o->set >> k & 1) && decl_keys[k].type != DECL_WINDOWS)
        return fail(r, "'%s' given twice for one %s", key, kinds[o->kind] + 1);
    const char *why = decl_value_parse(o, k, value);
    if (why)
        return fail(r, "%s = %s: %s", key, value, why);
    o->set |= 1u << k;
    o->key_line[k] = r->line;
    return SL_OK;
}

int decl_read(const conf *cfg, const char *path, decl_list **out, char *err, size_t errlen)
{
    decl_list *l = calloc(1, sizeof *l);
    *out = l;
    if (!l)
        return SL_ENOMEM;
    if (!path || !path[0])
        return SL_OK;
    snprintf(l->path, sizeof l->path, "%s", path);
    FILE *f = fopen(l->path, "re");
    if (!f) {
        snprintf(err, errlen, "cannot read config file %s: %s", l->path, strerror(errno));
        return SL_ENOTFOUND;
    }
    reader r = {.cfg = cfg, .l = l, .err = err, .errlen = errlen};
    char *buf = NULL;
    size_t cap = 0;
    int rc = SL_OK, in_section = 0;
    decl_obj *o = NULL;
    while (rc == SL_OK && getline(&buf, &cap, f) > 0) {
        r.line++;
        char *line = trim(buf);
        if (r.line == 1 && !strncmp(line, "\xef\xbb\xbf", 3))
            line += 3; /* a UTF-8 byte order mark, as inih allows */
        if (!*line || *line == ';' || *line == '#')
            continue;
        if (*line == '[') {
            rc = section(&r, line + 1, &o);
            in_section = 1;
            if (rc == SL_OK && o)
                o->line = o->line ? o->line : r.line;
        } else if (o) {
            rc = entry(&r, o, line);
        } else if (!in_section) {
            rc = SL_OK; /* before any section: conf.c reports it */
        }
    }
    free(buf);
    fclose(f);
    for (size_t i = 0; rc == SL_OK && i < l->n; i++) {
        const char *why = decl_value_finish(&l->v[i]);
        if (why) {
            r.line = l->v[i].key_line[DECL_K_max_rate] ? l->v[i].key_line[DECL_K_max_rate] : l->v[i].line;
            rc = fail(&r, "%s", why);
        }
    }
    return rc;
}

void decl_free(decl_list **list)
{
    if (!list || !*list)
        return;
    free((*list)->v);
    free(*list);
    *list = NULL;
}

/* ---- applying ---- */

static proto_msg req, rep; /* large: off the stack (one broker per process, on the loop's thread) */

/* Who sends a declaration's commands: the config file, the operator's own,
 * trusted as the admin endpoint is. */
static const admin_caller config_file = {"sluice.conf", "", PROTO_ROLE_ADMIN, NET_ADMIN};

static void start(proto_cmd cmd)
{
    const char *name = proto_cmd_name(cmd);
    proto_init(&req, PROTO_ADMIN);
    proto_set(&req, seq, 0);
    proto_set_str(&req, PROTO_F_cmd, name, strlen(name));
}

/* run sends req through the admin table; a refusal is logged with the
 * line of the first key it carried. Returns 1 when refused. */
static unsigned run(bk *b, const decl_list *l, const decl_obj *o, int key)
{
    char text[PROTO_MAX_STR];
    proto_init(&rep, PROTO_ADMIN_OK);
    int rc = admin_run(b, &req, &config_file, &rep, text, sizeof text);
    if (rc == SL_OK)
        return 0;
    log_error("decl", "%s:%d: %s refused: %s (%s)", l->path, key >= 0 ? o->key_line[key] : o->line,
              proto_cmd_name((proto_cmd)proto_cmd_of(req.cmd.ptr, req.cmd.len)), text, proto_errname(rc));
    return 1;
}

/* windows sets o's windows as req's window rows (none: one of count 0). */
static void windows(const decl_obj *o)
{
    proto_rows_window *rows = &req.window_rows;
    req.present |= PF(window_rows);
    rows->n = o->nwin ? o->nwin : 1;
    for (unsigned i = 0; i < rows->n; i++)
        rows->v[i] = (proto_row_window){
            .present = 1u << PROTO_COL_window_count_milli | 1u << PROTO_COL_window_period_ms |
                       1u << PROTO_COL_window_burst,
            .count_milli = o->nwin ? o->win[i].count_milli : 0,
            .period_ms = o->nwin ? o->win[i].period_ms : 1000,
            .burst = o->nwin ? o->win[i].burst : 0,
        };
}

static unsigned apply_level(bk *b, const decl_list *l, const decl_obj *o, uint32_t diff)
{
    unsigned refused = 0;
    if (diff >> DECL_K_fair & 1) { /* alone: refused while the level holds messages, and the rest goes on */
        start(PROTO_CMD_level_set);
        proto_set(&req, level, o->level);
        proto_set_str(&req, PROTO_F_state, o->fair ? "tag" : "fifo", o->fair ? 3 : 4);
        refused += run(b, l, o, DECL_K_fair);
    }
    uint32_t set_keys = 1u << DECL_K_deadline | 1u << DECL_K_aging | 1u << DECL_K_max_rate | 1u << DECL_K_min_rate |
                        1u << DECL_K_burst;
    if (diff & set_keys) {
        start(PROTO_CMD_level_set);
        proto_set(&req, level, o->level);
        if (diff >> DECL_K_deadline & 1)
            proto_set(&req, deadline_ms, o->deadline_ms);
        if (diff >> DECL_K_aging & 1)
            proto_set(&req, aging_ms, o->aging_ms);
        if (diff >> DECL_K_min_rate & 1)
            proto_set(&req, min_rate_milli, o->min_rate_milli);
        if (diff >> DECL_K_burst & 1)
            proto_set(&req, burst, o->burst);
        if (diff >> DECL_K_max_rate & 1)
            windows(o);
        refused += run(b, l, o, __builtin_ctz(diff & set_keys));
    }
    if (diff >> DECL_K_paused & 1) {
        start(o->paused ? PROTO_CMD_level_pause : PROTO_CMD_level_resume);
        proto_set(&req, level, o->level);
        refused += run(b, l, o, DECL_K_paused);
    }
    return refused;
}

static unsigned apply_sink(bk *b, const decl_list *l, const decl_obj *o, uint32_t diff)
{
    if (!diff)
        return 0;
    start(PROTO_CMD_sink_set);
    if (diff >> DECL_K_max_rate & 1)
        windows(o);
    if (diff >> DECL_K_burst & 1)
        proto_set(&req, burst, o->burst);
    if (diff >> DECL_K_inflight & 1)
        proto_set(&req, max_inflight, o->inflight);
    return run(b, l, o, __builtin_ctz(diff));
}

static unsigned apply_pool(bk *b, const decl_list *l, const decl_obj *o, const decl_obj *now, uint32_t diff)
{
    unsigned refused = 0;
    if (!now->exists || (diff >> DECL_K_size & 1)) { /* made, for every level, when it does not exist */
        start(PROTO_CMD_pool_resize);
        proto_set_str(&req, PROTO_F_pool, o->name, o->name_len);
        proto_set(&req, size, (o->set >> DECL_K_size & 1) ? o->size : now->size);
        refused += run(b, l, o, (o->set >> DECL_K_size & 1) ? DECL_K_size : -1);
    }
    uint32_t auto_keys = 1u << DECL_K_autoscale | 1u << DECL_K_min | 1u << DECL_K_max | 1u << DECL_K_target_wait;
    if (diff & auto_keys) {
        int on = (o->set >> DECL_K_autoscale & 1) ? o->autoscale : now->autoscale;
        start(PROTO_CMD_pool_autoscale);
        proto_set_str(&req, PROTO_F_pool, o->name, o->name_len);
        proto_set(&req, enabled, on ? 1 : 0);
        proto_set(&req, min, (o->set >> DECL_K_min & 1) ? o->min : now->min);
        proto_set(&req, max, (o->set >> DECL_K_max & 1) ? o->max : now->max);
        proto_set(&req, target_wait_ms, (o->set >> DECL_K_target_wait & 1) ? o->target_wait_ms : now->target_wait_ms);
        refused += run(b, l, o, __builtin_ctz(diff & auto_keys));
    }
    if (diff >> DECL_K_paused & 1) {
        start(o->paused ? PROTO_CMD_pool_pause : PROTO_CMD_pool_resume);
        proto_set_str(&req, PROTO_F_pool, o->name, o->name_len);
        refused += run(b, l, o, DECL_K_paused);
    }
    return refused;
}

static unsigned apply_tag(bk *b, const decl_list *l, const decl_obj *o, const decl_obj *now, uint32_t diff)
{
    unsigned refused = 0;
    uint32_t rule_keys = 1u << DECL_K_weight | 1u << DECL_K_max_rate | 1u << DECL_K_burst | 1u << DECL_K_inflight |
                         1u << DECL_K_each;
    if ((o->set & rule_keys) && (!now->exists || (diff & rule_keys))) {
        uint32_t send = now->exists ? diff & rule_keys : o->set & rule_keys;
        start(PROTO_CMD_tag_set);
        proto_set_str(&req, PROTO_F_tag, o->name, o->name_len);
        proto_row_tag *row = &req.tag_rows.v[0];
        *row = (proto_row_tag){0};
        req.tag_rows.n = 1;
        req.present |= PF(tag_rows);
        if (send >> DECL_K_weight & 1)
            row->present |= 1u << PROTO_COL_tag_weight, row->weight = o->weight;
        if (send >> DECL_K_inflight & 1)
            row->present |= 1u << PROTO_COL_tag_max_inflight, row->max_inflight = o->inflight;
        if (send >> DECL_K_each & 1)
            row->present |= 1u << PROTO_COL_tag_each, row->each = (uint64_t)o->each;
        if (send >> DECL_K_burst & 1)
            row->present |= 1u << PROTO_COL_tag_burst, row->burst = o->burst;
        if (send >> DECL_K_max_rate & 1)
            windows(o);
        refused += run(b, l, o, __builtin_ctz(o->set & rule_keys));
    }
    if (diff >> DECL_K_paused & 1) {
        start(o->paused ? PROTO_CMD_tag_pause : PROTO_CMD_tag_resume);
        proto_set_str(&req, PROTO_F_tag, o->name, o->name_len);
        refused += run(b, l, o, DECL_K_paused);
    }
    return refused;
}

unsigned decl_apply(bk *b, const decl_list *l)
{
    unsigned refused = 0, objects = 0;
    for (size_t i = 0; l && i < l->n; i++) {
        const decl_obj *o = &l->v[i];
        static decl_obj now;
        char want[512], have[512];
        decl_running(b, o, &now);
        uint32_t diff = 0;
        for (int k = 0; k < DECL_K_COUNT_; k++) {
            if (!(o->set >> k & 1))
                continue;
            decl_value_text(o, k, want, sizeof want);
            decl_value_text(&now, k, have, sizeof have);
            if (strcmp(want, have))
                diff |= 1u << k;
        }
        uint32_t rule_keys = 1u << DECL_K_weight | 1u << DECL_K_max_rate | 1u << DECL_K_burst |
                             1u << DECL_K_inflight | 1u << DECL_K_each;
        int make = !now.exists && (o->kind == DECL_POOL || (o->kind == DECL_TAG && (o->set & rule_keys)));
        if (!diff && !make)
            continue; /* as declared already (a pool or a pattern that does not exist is made) */
        objects++;
        switch (o->kind) {
        case DECL_SINK: refused += apply_sink(b, l, o, diff); break;
        case DECL_LEVEL: refused += apply_level(b, l, o, diff); break;
        case DECL_POOL: refused += apply_pool(b, l, o, &now, diff); break;
        default: refused += apply_tag(b, l, o, &now, diff); break;
        }
    }
    if (l && l->n)
        log_info("decl", "%s: %zu declared objects, %u changed, %u commands refused", l->path, l->n, objects,
                 refused);
    return refused;
}
