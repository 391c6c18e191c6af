/*
 * store_repl.c - the store's side of replication: every batch a record,
 * the stream's position kept with the data, a primary's records applied.
 *
 * A primary (store_repl_on) turns every batch it commits into one record,
 * whichever way the batch is made durable: the write-ahead log's record
 * when it is logged, and a record built the same way (whole, however large)
 * when a checkpoint carries it instead. The record is the log's own bytes
 * (store_wal.c: the final state of every key the batch touched), so the
 * stream ships them opaquely: a change to what a message record holds
 * replicates with no change here. Each record also writes meta "repl"
 * (the epoch it was made in and its sequence number in the stream) through
 * the same transaction, so the position travels inside the record and a
 * standby's store says, atomically with its data, how far it has applied.
 *
 * A standby (store_repl_apply) checks a record's checksum and puts its
 * entries into its own transaction with notes, so its own log makes them
 * durable with one flush; applying a record twice changes nothing (each
 * entry is a key's final value or its absence).
 *
 * Costs: a primary copies each record once (the bytes the stream keeps
 * until the standby acknowledges them) and writes one meta key per batch;
 * a batch a checkpoint carries is read back once to build its record.
 */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "log.h"
#include "store_int.h"

#define REPL_KEY "repl"

void store_repl_on(store *s, uint64_t epoch, uint64_t seq)
{
    s->repl_on = 1;
    s->repl_epoch = epoch;
    s->repl_seq = seq;
}

void store_repl_off(store *s)
{
    s->repl_on = 0;
    s->repl_ready = 0;
}

int store_repl_pos(store *s, uint64_t *epoch, uint64_t *seq)
{
    MDB_val v;
    *epoch = *seq = 0;
    int err = store_meta_read(s, REPL_KEY, sizeof REPL_KEY - 1, &v);
    if (err == SL_ENOTFOUND)
        return SL_OK;
    if (err != SL_OK)
        return err;
    if (v.mv_size < 16)
        return SL_ECORRUPT;
    *epoch = get_le64(v.mv_data);
    *seq = get_le64((const unsigned char *)v.mv_data + 8);
    return SL_OK;
}

int store_repl_capture(store *s)
{
    unsigned char v[16];
    put_le64(v, s->repl_epoch);
    put_le64(v + 8, s->repl_seq + 1);
    int err = store_meta_write(s, REPL_KEY, sizeof REPL_KEY - 1, v, sizeof v);
    if (err == SL_OK)
        err = store_wal_build(s, 1);
    if (err != SL_OK)
        return err;
    const unsigned char *p;
    size_t len;
    store_wal_record(s, &p, &len);
    unsigned char *b = grow_array(s->repl_buf, &s->repl_cap, len, 1, 16384);
    if (!b)
        return SL_ENOMEM;
    s->repl_buf = b;
    memcpy(b, p, len);
    s->repl_len = len;
    s->repl_seq++;
    s->repl_ready = 1;
    return SL_OK;
}

int store_repl_take(store *s, const unsigned char **p, size_t *len, uint64_t *seq)
{
    if (!s->repl_ready)
        return 0;
    s->repl_ready = 0;
    *p = s->repl_buf;
    *len = s->repl_len;
    *seq = s->repl_seq;
    return 1;
}

int store_repl_apply(store *s, const unsigned char *p, size_t len)
{
    if (!s->wal)
        return SL_ESTATE;
    int err = store_wal_apply(s, p, len, 1);
    if (err == SL_ECORRUPT)
        log_error("store", "a replicated record failed its checks (%zu bytes): not applied", len);
    return err;
}

void store_repl_free(store *s)
{
    free(s->repl_buf);
    s->repl_buf = NULL;
    s->repl_cap = s->repl_len = 0;
}
