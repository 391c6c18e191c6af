/*
 * store_fixture.h - a store of its own for each test of the store module
 * (test_store.c, test_store_layout.c; test_wal.c uses the directory and
 * opens its own stores, with the log), against a real LMDB environment, and
 * a store with a queue over it for the queue's tests without a broker
 * (test_fair_queue.c, test_tenants.c).
 *
 * Each test gets its own mkdtemp directory under /tmp (removed afterwards)
 * and a store whose data dir is a not-yet-existing "data" inside it, so
 * store_open's mkdir runs every time. Tests change what the store wrote from
 * outside it, with the LMDB API (sfix_lmdb_at), the way damage or an older
 * format would arrive in the field. Every test runs under
 * alarm(SFIX_TIMEOUT_S).
 */
#ifndef SLUICE_TESTS_STORE_FIXTURE_H
#define SLUICE_TESTS_STORE_FIXTURE_H

#include <lmdb.h>
#include <stdint.h>

#include "queue.h"
#include "store.h"

#define SFIX_TIMEOUT_S 60
#define SFIX_MAP_BYTES (UINT64_C(64) << 20)

typedef struct sfix {
    char tmp[64];                  /* the test's own directory */
    char dir[96];                  /* the store's data dir, inside tmp */
    store *s;
    store_level_info info[PROTO_MAX_LEVELS];
} sfix;

/* cmocka setup and teardown: a directory of its own; the store closed and
 * the directory removed afterwards. */
int sfix_setup(void **state);
int sfix_teardown(void **state);

/* sfix_reopen closes the fixture's store, if open, and opens it with levels
 * and map size; it returns store_open's result. */
int sfix_reopen(sfix *f, unsigned levels, uint64_t map_bytes);

/* sfix_append adds a message with a fresh id and body text to level;
 * returns its order key and, in *id if not NULL, its id. */
uint64_t sfix_append(store *s, unsigned level, const char *text, uint64_t *id);

void sfix_assert_body(const store_rec *rec, const char *text);

/* sfix_lmdb_at opens dir's environment and a write transaction on database
 * name, for a test to look at or change what the store wrote. */
void sfix_lmdb_at(const char *dir, const char *name, MDB_env **env, MDB_txn **txn, MDB_dbi *dbi);

/* sfix_queue_open opens a store of one level in dir (created if need be)
 * with a map of map_bytes, and queue q over it, the queue's wall clock at 1
 * (it dates what it moves aside). */
void sfix_queue_open(const char *dir, uint64_t map_bytes, store **st, queue *q);

/* sfix_meta_write_u32 overwrites a meta entry with the LMDB API directly,
 * as stores before format 3 wrote it (no seal); sfix_meta_write_sealed_u32
 * as format 3 does (the value, then a CRC-32C of the key and the value). */
void sfix_meta_write_u32(const char *dir, const char *name, uint32_t value);
void sfix_meta_write_sealed_u32(const char *dir, const char *name, uint32_t value);

/* sfix_as_format3 turns the closed store in dir, written by this build,
 * into what a broker of store format 3 (before headers) wrote: every
 * record of q.<L>, dead.<L> and delayed gets format byte 2 and its seal
 * again, and meta "format" becomes 3 (sealed). Records of format 3 with no
 * headers and no key differ from format 2 only in that byte, so the result
 * is byte for byte such a store; a record with either is a bug of the test
 * (asserted). Returns the number of records rewritten. */
unsigned sfix_as_format3(const char *dir);

#endif /* SLUICE_TESTS_STORE_FIXTURE_H */
