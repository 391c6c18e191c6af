/*
 * store_salvage_log.c - salvage's meta, its replay of the write-ahead log,
 * and what it rebuilds in the new store (see store_salvage.c).
 *
 * Meta. A value is copied only if its seal holds (a store of format 3;
 * before that, values are unsealed and taken as they are, the format
 * telling which); what the new store must not inherit is noted instead:
 * the format, the level count, the next id, the log's place ("wal"), the
 * keys the old broker set aside ("skip/") and the tag counter.
 *
 * The log. Replayed as the broker's open does (store_wal_file.c: each
 * record valid, of the file named by meta "wal", numbered in turn from the
 * place it names, the ring's start tried once when one is not), each entry
 * put into or deleted from the new store; a record's values pass the same
 * checks as the data file's. Without meta "wal" the log is not replayed: a
 * record older than the last checkpoint would bring back what the
 * checkpoint had changed since (a clean stop leaves nothing to replay).
 *
 * Rebuilt. Tag names a fair level's keys need and meta lost (from each
 * tag run's first record), the tag counter above every id, the TTL index
 * (from every record with a time to live), the next id above every id
 * met, the level count, the format.
 *
 * Costs: the log is read once, up to its ring; the rebuild reads every
 * record of the new store once more (the TTL index) and seeks once per tag.
 */
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crc32c.h"
#include "grow.h"
#include "log.h"
#include "rec.h"
#include "store_int.h"
#include "store_salvage.h"
#include "store_wal_int.h"

#define TAGID_PREFIX "tagid/"
#define TAGNAME_PREFIX "tagname/"

static int is(const void *key, size_t klen, const char *name)
{
    return klen == strlen(name) && memcmp(key, name, klen) == 0;
}

static int starts(const void *key, size_t klen, const char *prefix)
{
    return klen >= strlen(prefix) && memcmp(key, prefix, strlen(prefix)) == 0;
}

/* ---- meta ---- */

int salvage_meta(salvage *sv, const void *key, size_t klen, const void *val, size_t vlen)
{
    const unsigned char *v = val;
    size_t n = vlen;
    int sealed_ok = vlen >= STORE_META_SEAL &&
                    get_le32(v + vlen - STORE_META_SEAL) ==
                        crc32c_extend(crc32c_value(key, klen), v, vlen - STORE_META_SEAL);
    if (is(key, klen, "format")) { /* which of the two this store writes */
        sv->meta_sealed = vlen == 4 ? 0 : sealed_ok ? 1 : sv->meta_sealed;
        return SL_OK;
    }
    if (sv->meta_sealed != 0) { /* sealed, or not known: only a seal that holds is believed */
        if (!sealed_ok) {
            char name[96];
            store_meta_key_text(key, klen, name, sizeof name);
            log_warn("salvage", "meta \"%s\" failed its check: not copied", name);
            sv->r->meta_bad++;
            return SL_OK;
        }
        n -= STORE_META_SEAL;
    }
    if (is(key, klen, "wal") && n == 24) {
        sv->have_wal = 1;
        sv->wal_id = get_le64(v);
        sv->wal_seq = get_le64(v + 8);
        sv->wal_pos = get_le64(v + 16);
    } else if (is(key, klen, "levels") && n == 4) {
        sv->have_levels = 1;
        sv->levels_old = get_le32(v);
    } else if (is(key, klen, "next_id") && n == 8) {
        if (get_le64(v) > sv->next_id)
            sv->next_id = get_le64(v);
    } else if (starts(key, klen, "skip/")) {
        char name[40];
        unsigned level;
        uint64_t k;
        snprintf(name, sizeof name, "%.*s", (int)(klen < 39 ? klen : 39), (const char *)key);
        struct salvage_skip *p = grow_array(sv->skip, &sv->skip_cap, sv->nskip + 1, sizeof *p, 8);
        if (!p)
            return SL_ENOMEM;
        sv->skip = p;
        if (sscanf(name, "skip/%2x/%16" SCNx64, &level, &k) == 2)
            sv->skip[sv->nskip++] = (struct salvage_skip){level, k};
    } else if (!is(key, klen, "ckpt") && !is(key, klen, "tag_next")) {
        sv->r->meta++;
        return salvage_meta_put(sv, key, klen, v, n);
    }
    return SL_OK;
}

/* ---- the log ---- */

/* log_apply puts one log record's entries p[REC_HDR..len) into the new store. */
static int log_apply(salvage *sv, const unsigned char *p, size_t len, uint32_t n)
{
    size_t off = REC_HDR;
    for (uint32_t i = 0; i < n; i++) {
        if (off + ENT_HDR > len)
            return SL_ECORRUPT;
        const unsigned char *e = p + off;
        size_t nlen = e[1], klen = (size_t)e[2] | (size_t)e[3] << 8, vlen = get_le32(e + 4);
        char name[16];
        if (nlen == 0 || nlen >= sizeof name || off + ENT_HDR + nlen + klen + vlen > len ||
            (e[0] != OP_PUT && e[0] != OP_DEL))
            return SL_ECORRUPT;
        memcpy(name, e + ENT_HDR, nlen);
        name[nlen] = '\0';
        const unsigned char *key = e + ENT_HDR + nlen, *val = key + klen;
        off += ENT_HDR + nlen + klen + vlen;
        sv->r->log_entries++;
        int err = SL_OK, records = strncmp(name, "q.", 2) == 0 || strncmp(name, "dead.", 5) == 0 ||
                                   strcmp(name, "delayed") == 0;
        if (strcmp(name, "ttl") == 0 || (records && klen == STORE_ANCHOR_BYTES))
            continue; /* rebuilt; anchors come with the open */
        if (e[0] == OP_PUT)
            err = strcmp(name, "meta") == 0 ? salvage_meta(sv, key, klen, val, vlen)
                  : records ? salvage_record(sv, name, key, klen, val, vlen, 0)
                            : salvage_put(sv, name, key, klen, val, vlen, 0);
        else if (strcmp(name, "meta") != 0 || !starts(key, klen, "skip/")) {
            MDB_dbi dbi;
            MDB_val k = {klen, (void *)key};
            err = salvage_dbi(sv, name, &dbi);
            int rc = err == SL_OK ? mdb_del(sv->txn, dbi, &k, NULL) : MDB_SUCCESS;
            if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND)
                err = SL_EIO;
        }
        if (err != SL_OK)
            return err;
    }
    return SL_OK;
}

/* log_read reads the record at pos if it is valid, of file id and numbered
 * seq, into *p (grown): its length and entry count. 1 when it is, 0 not. */
static int log_read(int fd, uint64_t ring, uint64_t id, uint64_t pos, uint64_t seq, unsigned char **p, size_t *cap,
                    uint32_t *len, uint32_t *n)
{
    unsigned char h[REC_HDR];
    if (pos < WAL_START || pos + WAL_PAGE > WAL_START + ring || store_wal_pread(fd, h, REC_HDR, pos) != 0)
        return 0;
    *len = get_le32(h + 24);
    if (get_le32(h) != REC_MAGIC || get_le64(h + 8) != id || get_le64(h + 16) != seq || *len < REC_HDR ||
        pos + store_wal_pad(*len) > WAL_START + ring)
        return 0;
    unsigned char *b = grow_array(*p, cap, *len, 1, 16384);
    if (!b)
        return 0;
    *p = b;
    if (store_wal_pread(fd, b, *len, pos) != 0 || get_le32(b + 4) != crc32c_value(b + 8, *len - 8))
        return 0;
    *n = get_le32(h + 28);
    return 1;
}

int salvage_log(salvage *sv, const char *dir)
{
    char path[4200];
    unsigned char h[WAL_PAGE];
    snprintf(path, sizeof path, "%s/%s", dir, STORE_WAL_FILE);
    if (!sv->have_wal || !sv->wal_id) {
        if (access(path, F_OK) == 0)
            log_warn("salvage", "meta does not say where the log's replay starts: the log %s is not replayed", path);
        return SL_OK;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        log_warn("salvage", "the log %s cannot be opened (%s): nothing replayed", path, strerror(errno));
        return SL_OK;
    }
    uint64_t ring = 0;
    if (store_wal_pread(fd, h, WAL_PAGE, 0) != 0 || memcmp(h, WAL_MAGIC, 8) != 0 || get_le32(h + 8) != WAL_VERSION ||
        get_le32(h + 12) != crc32c_value(h + 16, 16) || get_le64(h + 16) != sv->wal_id) {
        log_warn("salvage", "the log %s is not the one meta names (or its header is damaged): nothing replayed", path);
        close(fd);
        return SL_OK;
    }
    ring = get_le64(h + 24);
    unsigned char *p = NULL;
    size_t cap = 0;
    uint64_t pos = sv->wal_pos, seq = sv->wal_seq;
    int err = SL_OK;
    for (;;) {
        uint32_t len, n;
        int got = log_read(fd, ring, sv->wal_id, pos, seq, &p, &cap, &len, &n);
        if (!got && pos != WAL_START) /* the writer may have wrapped */
            got = log_read(fd, ring, sv->wal_id, pos = WAL_START, seq, &p, &cap, &len, &n);
        if (!got)
            break;
        if ((err = log_apply(sv, p, len, n)) != SL_OK)
            break;
        sv->r->log_records++;
        pos += store_wal_pad(len);
        seq++;
    }
    if (err == SL_ECORRUPT) {
        log_warn("salvage", "record %" PRIu64 " of the log %s is damaged past its checksum: the replay ends there",
                 seq, path);
        err = SL_OK;
    }
    free(p);
    close(fd);
    return err;
}

/* ---- what the new store rebuilds ---- */

/* tags gives every tag run of the fair levels' keys a name in meta (from
 * its first record) when meta lost it, and sets the tag counter. */
static int tags(salvage *sv)
{
    uint32_t top = 0;
    for (unsigned i = 0; i < sv->ndbs; i++) {
        if (strncmp(sv->dbs[i].name, "q.", 2) != 0)
            continue;
        MDB_cursor *cur;
        MDB_val k, v;
        unsigned char kb[8];
        if (mdb_cursor_open(sv->txn, sv->dbs[i].dbi, &cur) != MDB_SUCCESS)
            return SL_EIO;
        put_be64(kb, UINT64_C(1) << STORE_TAG_SHIFT);
        k = (MDB_val){8, kb};
        int rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE), err = SL_OK;
        while (rc == MDB_SUCCESS && err == SL_OK && k.mv_size == 8 && get_be64(k.mv_data) < STORE_KEY_MID) {
            uint32_t id = (uint32_t)(get_be64(k.mv_data) >> STORE_TAG_SHIFT);
            unsigned char nb[sizeof TAGNAME_PREFIX - 1 + 4];
            MDB_val nk = {sizeof nb, nb}, nv;
            MDB_dbi meta;
            rec_msg m;
            memcpy(nb, TAGNAME_PREFIX, sizeof TAGNAME_PREFIX - 1);
            put_be64(kb, id); /* the id's four low bytes, big-endian */
            memcpy(nb + sizeof TAGNAME_PREFIX - 1, kb + 4, 4);
            if (id > top)
                top = id;
            err = salvage_dbi(sv, "meta", &meta);
            if (err == SL_OK && mdb_get(sv->txn, meta, &nk, &nv) == MDB_NOTFOUND &&
                rec_decode(v.mv_data, v.mv_size, REC_LIVE, store_rec_key(&k), &m, NULL) == SL_OK) {
                unsigned char ib[4], tk[sizeof TAGID_PREFIX + PROTO_MAX_TAG];
                put_le32(ib, id);
                memcpy(tk, TAGID_PREFIX, sizeof TAGID_PREFIX - 1);
                memcpy(tk + sizeof TAGID_PREFIX - 1, m.tag, m.tag_len);
                MDB_val tkk = {sizeof TAGID_PREFIX - 1 + m.tag_len, tk}, tv;
                char tag[PROTO_MAX_TAG];
                memcpy(tag, m.tag, m.tag_len);
                err = salvage_meta_put(sv, nb, sizeof nb, tag, m.tag_len);
                if (err == SL_OK && mdb_get(sv->txn, meta, &tkk, &tv) == MDB_NOTFOUND)
                    err = salvage_meta_put(sv, tk, tkk.mv_size, ib, sizeof ib);
            }
            put_be64(kb, (uint64_t)(id + 1) << STORE_TAG_SHIFT); /* the next run */
            k = (MDB_val){8, kb};
            rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
        }
        mdb_cursor_close(cur);
        if (err != SL_OK)
            return err;
    }
    unsigned char b[4];
    put_le32(b, top + 1);
    return top ? salvage_meta_put(sv, "tag_next", 8, b, sizeof b) : SL_OK;
}

/* ttl writes the TTL index entry of every record with a time to live. */
static int ttl(salvage *sv)
{
    for (unsigned i = 0; i < sv->ndbs; i++) {
        int delayed = strcmp(sv->dbs[i].name, "delayed") == 0;
        if (!delayed && strncmp(sv->dbs[i].name, "q.", 2) != 0)
            continue;
        MDB_cursor *cur;
        MDB_val k, v;
        if (mdb_cursor_open(sv->txn, sv->dbs[i].dbi, &cur) != MDB_SUCCESS)
            return SL_EIO;
        int rc, err = SL_OK;
        for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == MDB_SUCCESS && err == SL_OK;
             rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
            rec_msg m;
            if (k.mv_size == STORE_ANCHOR_BYTES ||
                rec_decode(v.mv_data, v.mv_size, REC_LIVE, store_rec_key(&k), &m, NULL) != SL_OK || !m.expires_ns)
                continue;
            unsigned char tk[16], tv[9];
            put_be64(tk, m.expires_ns);
            put_be64(tk + 8, m.id);
            tv[0] = delayed ? STORE_TTL_DELAYED : m.level;
            put_le64(tv + 1, get_be64(k.mv_data)); /* an order key, or a due time */
            err = salvage_put(sv, "ttl", tk, sizeof tk, tv, sizeof tv, 0);
        }
        mdb_cursor_close(cur);
        if (err != SL_OK)
            return err;
    }
    return SL_OK;
}

int salvage_finish(salvage *sv)
{
    unsigned char b[8];
    int err = tags(sv);
    if (err == SL_OK)
        err = ttl(sv);
    unsigned levels = sv->have_levels && sv->levels_old > sv->levels_seen ? sv->levels_old : sv->levels_seen;
    if (levels < 1 || levels > PROTO_MAX_LEVELS)
        levels = levels < 1 ? 1 : PROTO_MAX_LEVELS;
    sv->r->levels = levels;
    sv->r->next_id = sv->next_id;
    put_le64(b, sv->next_id);
    if (err == SL_OK)
        err = salvage_meta_put(sv, "next_id", 7, b, 8);
    put_le32(b, levels);
    if (err == SL_OK)
        err = salvage_meta_put(sv, "levels", 6, b, 4);
    put_le32(b, STORE_FORMAT);
    if (err == SL_OK)
        err = salvage_meta_put(sv, "format", 6, b, 4);
    return err;
}
