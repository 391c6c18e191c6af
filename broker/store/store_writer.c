/*
 * store_writer.c - the writer thread: it makes the loop's writes durable
 * while the loop goes on.
 *
 * Two kinds of job. With the write-ahead log (store_wal.c), each batch is
 * one record: store_commit_start seals it on the loop (reads each touched
 * key's value) and the thread writes and flushes it; the store is not
 * frozen meanwhile: the next batch grows in the same transaction, which
 * LMDB commits only at a checkpoint. While a record is out, sealed_key and
 * sealed_head_* say which keys it carries: those are durable when it ends
 * (store_key_sealed), the keys written since only with the next record.
 * A checkpoint, and every commit without the log, is the second kind:
 *
 * A commit is where the broker waits for the disk: LMDB writes the dirty
 * pages, fdatasyncs the data file, then writes the meta page through its
 * O_DSYNC handle (two device flushes). The loop builds each pass's write
 * transaction in memory as before (LMDB's writes touch only malloc'd dirty
 * pages until the commit), and store_commit_start hands that transaction to
 * one writer thread, which calls mdb_txn_commit and posts the result on an
 * eventfd (store_commit_fd) that the loop polls beside its sockets;
 * store_commit_poll then finishes the commit on the loop thread.
 *
 * Why a transaction can change threads: LMDB binds a write transaction to a
 * thread only through its writer mutex and its reader slots in lock.mdb.
 * The environment is opened with MDB_NOLOCK (one process owns the data
 * directory: store.c holds an flock on data.mdb) and MDB_NOTLS, so neither
 * exists; the loop and the writer hand the transaction over under a mutex,
 * never using it at the same time.
 *
 * While a commit is out (frozen), the store's transaction pointer is a
 * read-only snapshot of the last committed state (rtxn), begun on the loop
 * before the hand-over: every read of the store sees committed data only,
 * and a write is refused (store_fail, SL_ESTATE, logged: the loop does not
 * write while frozen). The snapshot is safe without reader slots: the
 * committing transaction n only reuses pages freed by transactions before
 * n-1, and the snapshot is n-1's. A new snapshot is begun only when no
 * commit is out, so it never reads a meta page being written. (The map's
 * size and high-water mark for /metrics come from mdb_env_info, which may
 * read a meta page the writer is writing: those figures are only reported,
 * never used to find data.)
 *
 * After a commit the thread also keeps the data file extended by written
 * zeros (store_extend.c), before it posts the commit's result: the loop,
 * frozen until then, has no write transaction open that could spill pages
 * into the range being zeroed, and once it hears the writer is idle, so
 * nothing but the extender writes the file while it runs. That commit's
 * confirmations wait for the chunk (about 40 ms for 8 MiB here), once per
 * chunk.
 *
 * This file also holds the commit made on the calling thread
 * (store_commit_sync: at open, at shutdown, without a thread) and what the
 * loop asks of the pass (store_dirty, store_key_committed, ...).
 *
 * A record on the loop (store_log_inline). When the loop allows it (replies
 * wait for the record) and the recent records' write and flush averaged
 * under STORE_INLINE_FLUSH_NS, log_start leaves the record to the calling
 * thread instead of waking this one: two thread wake-ups cost more than a
 * fast disk's flush. The next store_commit_poll (or wait) writes and
 * flushes it there, so that the caller may first do what should overlap
 * the flush: a primary ships the record to its standby, whose flush then
 * runs beside this one instead of after it. The thread is idle meanwhile
 * (nothing is out), so its fields are the loop's; here_due tells
 * store_commit_poll the record is its to write, without the eventfd. Same
 * buffer, same pwrite and fdatasync: as durable as on the thread. A
 * checkpoint never runs inline.
 *
 * Costs: one thread; per commit a mutex hand-over and an eventfd write and
 * read, against the two flushes the loop no longer waits for (none of it
 * for a record written on the loop). The mutex is released before each
 * signal, so that the woken thread does not sleep on it again.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "store_backup.h"
#include "store_extend.h"
#include "store_int.h"

struct store_writer {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    MDB_txn *job;   /* the transaction to commit, or NULL */
    store_wal *log; /* or the log record to write, or NULL */
    int rc;         /* mdb_txn_commit's result, or the record's errno, for the last job */
    int stop;
    int efd;        /* written once per finished commit */
    int here_due;           /* the record is the loop's to write at its next poll (store_log_inline) */
    uint64_t flush_ns;      /* how long the last record's write and flush took */
    uint64_t flush_avg_ns;  /* the records' recent average (1/8 weight to the last), read on the loop */
    MDB_env *env;
    store_extend ext;  /* the writer thread's alone */
};

static uint64_t mono_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void *writer_main(void *arg)
{
    struct store_writer *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->job && !w->log && !w->stop)
            pthread_cond_wait(&w->cv, &w->mu);
        if (!w->job && !w->log)
            break;
        MDB_txn *txn = w->job;
        store_wal *log = w->log;
        pthread_mutex_unlock(&w->mu);
        uint64_t t0 = mono_ns();
        int rc = log ? store_wal_write(log) : mdb_txn_commit(txn); /* the flushes happen here, off the loop */
        uint64_t took = mono_ns() - t0;
        /* The chunk is written before the loop hears of the commit: the loop
         * opens no write transaction while frozen, and a transaction it
         * opened meanwhile could spill dirty pages (LMDB writes them to the
         * file once a transaction holds about 128K) into the range being
         * zeroed. So the commit's confirmations wait for the chunk, once per
         * chunk. */
        if (!log && rc == MDB_SUCCESS && store_extend_plan(&w->ext, w->env))
            store_extend_run(&w->ext);
        uint64_t one = 1;
        pthread_mutex_lock(&w->mu);
        w->rc = rc;
        w->flush_ns = took;
        w->job = NULL;
        w->log = NULL;
        /* The eventfd is written with the mutex released: the loop, woken by
         * it, takes the mutex at once to read rc, and would otherwise sleep
         * on it until this thread runs again (two more context switches per
         * commit on a busy machine). It cannot miss the result: it reads
         * the eventfd before it takes the mutex, and rc is set by then. */
        pthread_mutex_unlock(&w->mu);
        while (write(w->efd, &one, sizeof one) < 0 && errno == EINTR)
            ;
        pthread_mutex_lock(&w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

static int writer_start(store *s)
{
    struct store_writer *w = calloc(1, sizeof *w);
    if (!w)
        return SL_ENOMEM;
    w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (w->efd < 0) {
        log_error("store", "cannot create the writer's eventfd: %s", strerror(errno));
        free(w);
        return SL_EIO;
    }
    w->env = s->env;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old); /* signals go to the loop's thread, never the writer */
    int made = pthread_create(&w->th, NULL, writer_main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (made != 0) {
        log_error("store", "cannot start the writer thread: commits are made on the loop's thread");
        close(w->efd);
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        free(w);
        return SL_ENOMEM;
    }
    s->writer = w;
    return SL_OK;
}

/* hand_over gives the writer thread its job: a transaction to commit, or
 * the log record to write. */
static void hand_over(struct store_writer *w, MDB_txn *txn, store_wal *log)
{
    pthread_mutex_lock(&w->mu);
    w->job = txn;
    w->log = log;
    pthread_mutex_unlock(&w->mu);
    pthread_cond_signal(&w->cv); /* after the unlock: the writer, woken, does not sleep again on the mutex */
}

/* next_id_put writes meta "next_id" into the open transaction: it commits
 * with the records that use the ids. */
static int next_id_put(store *s, uint64_t next_id)
{
    unsigned char v[8];
    put_le64(v, next_id);
    return store_meta_write(s, "next_id", 7, v, sizeof v);
}

/* log_start seals the open batch into a log record and hands it to the
 * writer thread. Returns SL_OK with *started, SL_EFULL or SL_ENOMEM when a
 * checkpoint must carry the batch instead, or the transaction's error. */
static int log_start(store *s, int *started, int built)
{
    memcpy(s->sealed_key, s->last_key, sizeof s->sealed_key);
    memcpy(s->sealed_head_hi, s->head_hi, sizeof s->sealed_head_hi);
    memcpy(s->sealed_head_open, s->head_open, sizeof s->sealed_head_open);
    s->sealed_next_id = s->next_id;
    int err = built ? store_wal_place(s) : store_wal_seal(s);
    if (err != SL_OK)
        return err;
    memset(s->head_open, 0, sizeof s->head_open); /* heads put from now on belong to the next record */
    s->logging = 1;
    s->dirty = 0;
    struct store_writer *w = s->writer;
    if (s->log_inline_ok && w->flush_avg_ns < STORE_INLINE_FLUSH_NS) {
        w->here_due = 1; /* on the loop, at its next poll (store_log_inline): the thread stays asleep */
    } else {
        hand_over(w, NULL, s->wal);
    }
    *started = 1;
    return SL_OK;
}

int store_checkpoint_due(const store *s, uint64_t now_ns, int wanted)
{
    return !store_copying(s) && store_wal_due(s, now_ns, s->checkpoint_ns, wanted); /* none under a backup copy */
}

uint64_t store_checkpoint_at(const store *s, int wanted)
{
    return store_copying(s) ? UINT64_MAX : store_wal_due_at(s, s->checkpoint_ns, wanted);
}

int store_held(const store *s)
{
    return s->logging || store_wal_held(s);
}

int store_log_stuck(const store *s)
{
    return store_wal_stuck(s);
}

void store_durability_counts(const store *s, store_counts *out)
{
    uint64_t checkpoints;
    store_wal_stats(s, &out->log_records, &out->log_bytes, &checkpoints);
    out->lmdb_commits = s->lmdb_commits;
}

void store_log_inline(store *s, int allow)
{
    s->log_inline_ok = allow;
}

int store_commit_ready(const store *s)
{
    return s->writer && s->writer->here_due;
}

int store_commit_start(store *s, uint64_t now_ns, int want_checkpoint, int *started)
{
    int inline_ok = s->log_inline_ok;
    s->log_inline_ok = 0; /* for this start only */
    *started = 0;
    if (s->frozen || s->logging)
        return SL_ESTATE;
    s->ckpt_started_ns = now_ns;
    if (!s->writer && (s->writer_failed || (s->writer_failed = writer_start(s) != SL_OK)))
        return store_commit_sync(s); /* no thread (tried once, logged): commit here, as before */
    int err = s->failed;
    if (err == SL_OK && want_checkpoint && !s->txn) { /* an LMDB commit of nothing: it makes what the last one
                                                        * freed reusable (store_measure), so write a count */
        unsigned char v[8];
        put_le64(v, ++s->lmdb_forced);
        err = store_meta_write(s, "ckpt", 4, v, sizeof v);
    }
    if (err == SL_OK && s->next_id != s->next_id_saved)
        err = next_id_put(s, s->next_id);
    int built = 0;
    if (err == SL_OK && s->repl_on && s->txn && s->dirty) { /* a primary: the batch is a record of the stream */
        if ((err = store_repl_capture(s)) != SL_OK && s->failed == SL_OK)
            s->failed = err; /* (a lost note: the batch cannot be replicated, so it is not committed) */
        built = err == SL_OK;
    }
    if (err != SL_OK || !s->txn)
        return store_commit_sync(s); /* a poisoned pass aborts at once; an empty one has nothing to flush */
    int checkpoint = !s->wal || s->wal_nomem || store_wal_due(s, now_ns, s->checkpoint_ns, want_checkpoint) ||
                     (want_checkpoint && !store_wal_held(s));
    if (store_copying(s) && s->wal && !s->wal_nomem)
        checkpoint = 0; /* postponed while a backup copy reads (store_backup.c): the log carries the batch */
    if (!checkpoint && !s->dirty)
        return SL_OK; /* nothing since the last record: what waited for it may go */
    if (!checkpoint) {
        s->log_inline_ok = inline_ok;
        err = log_start(s, started, built);
        s->log_inline_ok = 0;
        if (err == SL_OK)
            return SL_OK;
        if (err != SL_EFULL && err != SL_ENOMEM)
            return store_commit_sync(s); /* the transaction failed while sealing: abort, put back */
    }
    store_backup_wait(s); /* an LMDB commit never runs under a backup copy's reads (store_backup.c) */
    /* the acknowledged keys still waiting go into this commit; then where
     * replay starts after it */
    if ((err = store_gone_flush(s)) != SL_OK || (s->wal && (err = store_wal_ckpt_put(s)) != SL_OK))
        return store_commit_sync(s);
    int rc = s->rtxn ? mdb_txn_renew(s->rtxn) : mdb_txn_begin(s->env, NULL, MDB_RDONLY, &s->rtxn);
    if (rc != MDB_SUCCESS) {
        log_error("store", "cannot begin a read snapshot (%s): committing on the loop", mdb_strerror(rc));
        if (s->rtxn)
            mdb_txn_abort(s->rtxn);
        s->rtxn = NULL;
        return store_commit_sync(s);
    }
    s->commit_next_id = s->next_id;
    s->wtxn = s->txn;
    s->txn = s->rtxn;
    s->frozen = 1;
    s->dirty = 0;
    hand_over(s->writer, s->wtxn, NULL);
    *started = 1;
    return SL_OK;
}

int store_committing(const store *s)
{
    return s->frozen;
}

int store_logging(const store *s)
{
    return s->logging;
}

int store_busy(const store *s)
{
    return s->frozen || s->logging;
}

int store_commit_fd(const store *s)
{
    return s->writer ? s->writer->efd : -1;
}

int store_commit_poll(store *s, int *result)
{
    struct store_writer *w = s->writer;
    uint64_t n;
    if (!s->frozen && !s->logging)
        return 0;
    int rc;
    uint64_t took;
    if (w->here_due) { /* on the loop: the same write and flush the writer thread makes, without
                        * waking it and being woken back. The thread is idle (nothing is out), so
                        * w's fields are the loop's. */
        w->here_due = 0;
        uint64_t t0 = mono_ns();
        rc = store_wal_write(s->wal);
        took = mono_ns() - t0;
    } else {
        if (read(w->efd, &n, sizeof n) != (ssize_t)sizeof n)
            return 0; /* EAGAIN: still flushing */
        pthread_mutex_lock(&w->mu);
        rc = w->rc;
        took = w->flush_ns;
        pthread_mutex_unlock(&w->mu);
    }
    if (s->logging) {
        int64_t d = (int64_t)took - (int64_t)w->flush_avg_ns;
        w->flush_avg_ns = (uint64_t)((int64_t)w->flush_avg_ns + d / 8); /* for store_log_inline */
        s->logging = 0;
        store_wal_written(s, rc == 0);
        memset(s->sealed_head_open, 0, sizeof s->sealed_head_open);
        if (rc == ENOSPC && store_wal_void(s) == 0) { /* refused: no record of it will ever replay */
            log_error("store", "cannot write the log: %s; this batch is refused and the broker goes on",
                      strerror(rc));
            int held = store_wal_held(s);
            store_txn_drop(s); /* the batch (and the next one's start) go with the transaction */
            *result = held && store_wal_reapply(s) != SL_OK ? SL_EIO : SL_ENOSPC;
            return 1;
        }
        if (rc != 0) {
            log_error("store", "cannot write the log: %s", strerror(rc));
            *result = SL_EIO;
            return 1;
        }
        memcpy(s->committed_key, s->sealed_key, sizeof s->committed_key);
        s->next_id_saved = s->sealed_next_id;
        s->nospace_logged = 0;
        *result = SL_OK;
        return 1;
    }
    mdb_txn_reset(s->rtxn); /* pointers read from the snapshot end here */
    s->txn = NULL;
    s->wtxn = NULL; /* LMDB freed it, committed or not */
    s->frozen = 0;
    s->failed = SL_OK;
    s->dirty = 0;
    s->txn_added_bytes = 0; /* now in the measure, or gone with the transaction */
    memset(s->head_open, 0, sizeof s->head_open); /* committed, or gone with the transaction */
    if (rc == MDB_SUCCESS) {
        s->next_id_saved = s->commit_next_id;
        memcpy(s->committed_key, s->last_key, sizeof s->committed_key); /* no appends while frozen */
        s->nospace_logged = 0;
        s->lmdb_commits++;
        *result = SL_OK;
    } else {
        *result = store_fail(s, rc, "commit");
        s->failed = SL_OK; /* the transaction is gone; the next one starts clean */
        if (s->damage_seen)
            *result = store_recheck(s);
    }
    if (s->wal) { /* a checkpoint: the log is free again, or its batches go back into a new transaction */
        int held = store_wal_held(s);
        store_wal_ckpt_done(s, rc == MDB_SUCCESS, s->ckpt_started_ns);
        if (rc != MDB_SUCCESS && held && store_wal_reapply(s) != SL_OK)
            *result = SL_EIO;
    }
    return 1;
}

int store_commit_wait(store *s, int *result)
{
    int logged = 0;
    while (s->frozen || s->logging) { /* until the commit ends: its result decides what the loop sends */
        struct pollfd p = {.fd = s->writer->efd, .events = POLLIN};
        if (!s->writer->here_due && poll(&p, 1, 1000) < 0 && errno != EINTR) {
            if (!logged++)
                log_error("store", "cannot wait for the writer's commit (%s): checking every millisecond",
                          strerror(errno));
            nanosleep(&(struct timespec){0, 1000000}, NULL);
        }
        store_commit_poll(s, result);
    }
    return SL_OK;
}

void store_txn_release(store *s)
{
    if (s->frozen || s->logging || !s->txn || s->dirty || s->failed != SL_OK || store_wal_held(s))
        return; /* (logged batches live in it until a checkpoint) */
    /* it only read: nothing to lose. An unsaved next_id is not lost either:
     * store_dirty stays true and the next commit writes it. */
    mdb_txn_abort(s->txn);
    s->txn = NULL;
}

int store_commit(store *s)
{
    int rc = SL_OK;
    if (s->frozen || s->logging)
        store_commit_wait(s, &rc);
    return rc != SL_OK ? rc : store_commit_sync(s);
}

void store_writer_close(store *s)
{
    struct store_writer *w = s->writer;
    int rc;
    if (!w)
        return;
    store_commit_wait(s, &rc);
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->th, NULL);
    store_extend_close(&w->ext);
    close(w->efd);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
    s->writer = NULL;
    if (s->txn == s->rtxn)
        s->txn = NULL; /* store_close aborts s->txn: not the snapshot twice */
    if (s->rtxn)
        mdb_txn_abort(s->rtxn);
    s->rtxn = NULL;
}

/* ---- the pass: the commit on the calling thread, and what the pass asks ---- */

int store_commit_sync(store *s)
{
    uint64_t next_id = s->next_id;
    int err = s->failed == SL_OK ? store_gone_flush(s) : s->failed, held = store_wal_held(s);
    if (err == SL_OK && next_id != s->next_id_saved)
        err = next_id_put(s, next_id);
    if (err == SL_OK && s->wal && s->txn) /* where replay starts after this commit */
        err = store_wal_ckpt_put(s);
    if (err == SL_OK && s->txn) {
        store_backup_wait(s); /* never under a backup copy's reads (store_backup.c) */
        int rc = mdb_txn_commit(s->txn);
        s->txn = NULL; /* LMDB frees it, committed or not */
        if (rc == MDB_SUCCESS) {
            s->next_id_saved = next_id;
            memcpy(s->committed_key, s->last_key, sizeof s->committed_key);
            s->nospace_logged = 0;
            s->lmdb_commits++;
        } else
            err = store_fail(s, rc, "commit");
    }
    store_txn_drop(s); /* committed (txn NULL), or gone with the transaction */
    if (s->wal)
        store_wal_ckpt_done(s, err == SL_OK, s->ckpt_started_ns);
    if (err != SL_OK && s->damage_seen) /* a damaged page: a level quarantined (the batch refused), or stop */
        err = store_recheck(s);
    if (err != SL_OK && held && store_wal_reapply(s) != SL_OK) /* confirmed batches were in it */
        err = SL_EIO;
    return err;
}

void store_txn_drop(store *s)
{
    if (s->txn)
        mdb_txn_abort(s->txn);
    s->txn = NULL;
    s->failed = SL_OK;
    s->dirty = 0;
    s->txn_added_bytes = 0;
    memset(s->head_open, 0, sizeof s->head_open);
    store_gone_drop(s);
    store_wal_forget(s);
}

int store_dirty(const store *s)
{
    return s->dirty || s->failed != SL_OK || s->next_id != s->next_id_saved;
}

int store_key_committed(const store *s, unsigned level, uint64_t key)
{
    return level < s->levels && key <= s->committed_key[level] &&
           !(s->head_open[level] && key <= s->head_hi[level]) &&
           !(s->logging && s->sealed_head_open[level] && key <= s->sealed_head_hi[level]);
}

int store_failed(const store *s)
{
    return s->failed;
}

uint64_t store_next_id(store *s)
{
    return s->next_id++;
}
