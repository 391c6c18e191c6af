/*
 * ha_node.c - the broker as the primary of a high-availability group.
 *
 * Owns: the lease in Redis (coord/ha_lease.c) while this node is primary,
 * the replication stream (ha/ha_prim.c), and the record whose batch's
 * confirmations wait (one at a time: the loop has at most one commit out,
 * and holds the next until this one is confirmed or refused).
 *
 * The rules it applies, each checked where the loop acts:
 *   - confirm (ha_node_confirmable): the lease is valid by this node's
 *     monotonic clock (counted from the send time of its last renewal:
 *     fencing), and the batch's record is durable on the standby, or Redis
 *     records sync = none (then no standby may promote) and --repl-strict
 *     is off;
 *   - dispatch (ha_node_may_dispatch): the lease is valid here, so a
 *     deposed primary stops feeding the sink before a new one can start;
 *   - sync: the standby becomes "in sync" when it has acknowledged every
 *     record; Redis is told at once (sync = NAME), and only that standby may
 *     promote. Acks missing for --repl-standby-timeout-ms drop it: the
 *     primary records sync = none while it holds the lease, and confirms
 *     alone only once Redis has said so;
 *   - deposed: a renewal that finds another leader (or an epoch above this
 *     node's) ends serving at once; main starts the node again, and it
 *     follows as a standby.
 *
 * Costs: a lease renewal per TTL/3; per batch one record copied and sent;
 * the batch's confirmations wait for the slower of the local flush and the
 * standby's (one round trip plus its flush).
 */
#include "ha_node.h"

#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "ha_copy.h"
#include "ha_epoch.h"
#include "ha_lease.h"
#include "ha_prim.h"
#include "log.h"
#include "snap.h"
#include "store.h"
#include "units.h"

typedef struct ha_node ha_node;
struct ha_node {
    ha_lease *lease;
    ha_prim *prim;
    uint64_t epoch;
    uint64_t wait_seq;         /* the record whose batch's confirmations wait (0: none) */
    int deposed;
    int strict;
    int handing;               /* a switchover is under way: fenced, the lease handed to the standby */
    uint64_t promotions;       /* times this node went from standby to primary (main counts them) */
    char rows_text[HA_NODES_MAX + 1][3][PROTO_MAX_NAME + 1]; /* ha.status's strings, until encoded */
    char told[PROTO_MAX_NAME + 2]; /* the sync asked of Redis last ("" none) */
};

static int lease_valid(const ha_node *h, uint64_t now_ns)
{
    const ha_view *v = ha_lease_view(h->lease);
    return !h->deposed && !h->handing && v->role == HA_ROLE_PRIMARY && v->epoch == h->epoch && now_ns < v->valid_until_ns;
}

/* row fills row i of rep's ha_rows, its strings kept in h. */
static void row(ha_node *h, proto_msg *rep, const char *node, const char *role, const char *ep, int in_sync,
                uint64_t lag)
{
    unsigned i = rep->ha_rows.n;
    if (i >= HA_NODES_MAX)
        return;
    char (*t)[PROTO_MAX_NAME + 1] = h->rows_text[i];
    snprintf(t[0], sizeof t[0], "%s", node);
    snprintf(t[1], sizeof t[1], "%s", role);
    snprintf(t[2], sizeof t[2], "%s", ep);
    rep->ha_rows.v[i] = (proto_row_ha){.present = PROTO_ROW_ALL(ha),
                                       .node = {t[0], (uint32_t)strlen(t[0])},
                                       .role = {t[1], (uint32_t)strlen(t[1])},
                                       .endpoint = {t[2], (uint32_t)strlen(t[2])},
                                       .in_sync = (uint64_t)in_sync,
                                       .lag_records = lag};
    rep->ha_rows.n = i + 1;
}

/* admin answers ha.status and ha.switchover (b->ha_admin). */
static int admin(bk *b, int cmd, proto_msg *rep, char *text, size_t text_len)
{
    ha_node *h = b->ha;
    const ha_view *v = ha_lease_view(h->lease);
    ha_prim_stats st;
    ha_prim_stats_get(h->prim, b->mono_ns, &st);
    if (cmd == PROTO_CMD_ha_recover) {
        snprintf(text, text_len, "this node is the group's primary in epoch %llu: there is nothing to recover "
                 "(ha.recover is for a group whose Redis lost its record)", (unsigned long long)h->epoch);
        return SL_ESTATE;
    }
    if (cmd == PROTO_CMD_ha_switchover) {
        const char *in_sync = ha_prim_in_sync(h->prim);
        if (!in_sync || strcmp(in_sync, v->sync) != 0) {
            snprintf(text, text_len, "no standby is in sync (Redis records %s): a switchover would lose what only "
                     "this node holds", v->sync[0] ? v->sync : "none");
            return SL_ESTATE;
        }
        if (h->handing) {
            snprintf(text, text_len, "a switchover is already under way");
            return SL_ESTATE;
        }
        if (ha_lease_handover(h->lease) != 0) {
            snprintf(text, text_len, "Redis cannot be asked now: retry");
            return SL_ESTATE;
        }
        h->handing = 1; /* fenced from now on: nothing more is confirmed or dispatched here */
        log_info("ha", "switchover to %s asked: this node confirms and dispatches nothing more", in_sync);
        return SL_OK;
    }
    rep->present |= PF(epoch) | PF(ha_rows);
    rep->epoch = h->epoch;
    rep->ha_rows.n = 0;
    row(h, rep, b->cfg.ha_node, lease_valid(h, b->mono_ns) ? "primary" : "fenced", b->cfg.advertise, 1, 0);
    for (unsigned i = 0; i < v->nnodes; i++) {
        const ha_node_seen *n = &v->nodes[i];
        if (!strcmp(n->name, b->cfg.ha_node))
            continue;
        int synced = st.in_sync && !strcmp(n->name, st.name) && !strcmp(n->name, v->sync);
        int live = n->silent_ms < b->cfg.ha_ttl_ms;
        row(h, rep, n->name, live ? "standby" : "unreachable", n->ep, synced,
            !strcmp(n->name, st.name) ? st.seq - st.acked : 0);
    }
    return SL_OK;
}

int ha_node_start(bk *b, ha_lease *hl, uint64_t epoch, uint64_t promotions)
{
    ha_node *h = calloc(1, sizeof *h);
    uint64_t e = 0, seq = 0;
    int rc = h ? store_repl_pos(b->st, &e, &seq) : SL_ENOMEM;
    if (rc != SL_OK) {
        free(h);
        ha_lease_destroy(&hl);
        return rc;
    }
    char secret[AUTH_KEY_LEN + 1], err[600];
    if (b->cfg.curve_secret_file[0] && auth_secret_load(b->cfg.curve_secret_file, secret, err, sizeof err) != SL_OK) {
        log_error("ha", "--curve-secret: %s", err);
        free(h);
        ha_lease_destroy(&hl);
        return SL_EINVAL;
    }
    /* the auth file's replica keys: standbys presenting a --repl-key of their own */
    const char **replicas = b->auth && b->auth->n ? malloc(b->auth->n * sizeof *replicas) : NULL;
    size_t nreplicas = 0;
    for (size_t i = 0; replicas && i < b->auth->n; i++)
        if (b->auth->v[i].role == PROTO_ROLE_REPLICA)
            replicas[nreplicas++] = b->auth->v[i].key;
    ha_prim_cfg pc = {.endpoint = b->cfg.repl_listen, .curve_secret = b->cfg.curve_secret_file[0] ? secret : NULL,
                      .replicas = replicas, .nreplicas = nreplicas,
                      .epoch = epoch, .seq = seq, .epoch_start = e < epoch ? seq : 0,
                      .buffer_bytes = b->cfg.repl_buffer_bytes,
                      .timeout_ns = (uint64_t)b->cfg.repl_standby_timeout_ms * NS_PER_MS};
    rc = ha_prim_open(&pc, &h->prim);
    free(replicas);
    if (rc != SL_OK) {
        free(h);
        ha_lease_destroy(&hl);
        return rc;
    }
    h->lease = hl;
    h->epoch = epoch;
    h->promotions = promotions;
    h->strict = b->cfg.repl_strict;
    store_repl_on(b->st, epoch, seq);
    b->ha = h;
    b->ha_admin = admin;
    b->ha_wake_ns = b->mono_ns;
    log_info("ha", "primary of group %s in epoch %llu; stream on %s from record %llu", b->cfg.ha_group,
             (unsigned long long)epoch, b->cfg.repl_listen, (unsigned long long)seq + 1);
    return SL_OK;
}

void ha_node_stop(bk *b)
{
    ha_node *h = b->ha;
    if (!h)
        return;
    store_repl_off(b->st);
    b->ha_admin = NULL;
    ha_prim_close(&h->prim);
    ha_lease_destroy(&h->lease);
    free(h);
    b->ha = NULL;
}


uint64_t ha_node_tick(bk *b)
{
    ha_node *h = b->ha;
    uint64_t now = b->mono_ns;
    ha_prim_poll(h->prim, now);
    const char *in_sync = ha_prim_in_sync(h->prim);
    const char *want = in_sync ? in_sync : "";
    if (strcmp(want, h->told) != 0) { /* a change of sync: tell Redis at once */
        snprintf(h->told, sizeof h->told, "%s", want);
        ha_lease_poke(h->lease);
        log_info("ha", "%s%s: recording it in Redis", in_sync ? "in sync: standby " : "no standby in sync",
                 in_sync ? in_sync : "");
    }
    ha_copy_tick(b, h->prim, !h->told[0] && !ha_lease_view(h->lease)->sync[0]); /* a standby that cannot resume */
    ha_prim_stats st;
    ha_prim_stats_get(h->prim, now, &st);
    uint64_t next = ha_lease_tick(h->lease, now, h->epoch, h->told, st.seq - st.acked);
    const ha_view *v = ha_lease_view(h->lease);
    if (h->handing && v->handover == -1) { /* refused: serve on */
        h->handing = 0;
        ha_lease_handover_clear(h->lease);
    }
    if (h->handing == 1 && v->handover == 1) { /* recorded: tell the standby, which asks at once */
        h->handing = 2;
        ha_prim_switch(h->prim);
    }
    if (!h->deposed && v->answers && (v->role != HA_ROLE_PRIMARY || v->epoch != h->epoch)) {
        h->deposed = 1;
        log_error("ha", "deposed: Redis names %s primary in epoch %llu (this node: epoch %llu); stopping to "
                  "follow it", v->leader[0] ? v->leader : "nobody", (unsigned long long)v->epoch,
                  (unsigned long long)h->epoch);
    }
    uint64_t w = ha_prim_next_wake(h->prim);
    if (w < next)
        next = w;
    if (v->valid_until_ns > now && v->valid_until_ns < next)
        next = v->valid_until_ns; /* the fence */
    if (h->wait_seq && next > now + NS_PER_MS * 10)
        next = now + NS_PER_MS * 10; /* (acks also wake the loop through the stream's descriptor) */
    return next;
}

void ha_node_shipped(bk *b)
{
    ha_node *h = b->ha;
    const unsigned char *p;
    size_t len;
    uint64_t seq;
    if (!store_repl_take(b->st, &p, &len, &seq))
        return;
    int rc = ha_prim_ship(h->prim, seq, p, len, b->mono_ns);
    if (rc != SL_OK)
        log_error("ha", "cannot keep record %llu for the standby (%s): it will need a new copy",
                  (unsigned long long)seq, proto_strerror(rc));
    h->wait_seq = seq;
}

int ha_node_confirmable(bk *b)
{
    ha_node *h = b->ha;
    if (!h->wait_seq)
        return 1;
    if (!lease_valid(h, b->mono_ns))
        return 0; /* fenced: nothing is confirmed until the lease is renewed */
    const ha_view *v = ha_lease_view(h->lease);
    int ok = ha_prim_acked(h->prim, h->wait_seq) ||
             (!h->strict && !v->sync[0] && !h->told[0]); /* Redis records no standby in sync: alone */
    if (ok)
        h->wait_seq = 0;
    return ok;
}

void ha_node_forget(bk *b)
{
    b->ha->wait_seq = 0;
}

int ha_node_may_dispatch(const bk *b)
{
    return !b->ha || lease_valid(b->ha, b->mono_ns);
}

uint64_t ha_node_epoch(const bk *b)
{
    return b->ha ? b->ha->epoch : 0;
}

int ha_node_deposed(const bk *b)
{
    return b->ha && b->ha->deposed;
}

int ha_node_waiting(const bk *b)
{
    return b->ha && b->ha->wait_seq;
}

void ha_node_figures(const bk *b, snap *s)
{
    const ha_node *h = b->ha;
    if (!h)
        return;
    ha_prim_stats st;
    ha_prim_stats_get(h->prim, b->mono_ns, &st);
    const ha_view *v = ha_lease_view(h->lease);
    s->ha = 1;
    s->ha_role = SNAP_HA_PRIMARY;
    s->ha_promotions = h->promotions;
    s->ha_epoch = h->epoch;
    s->ha_mode = !lease_valid(h, b->mono_ns) ? SNAP_HA_FENCED : v->sync[0] ? SNAP_HA_SYNC : SNAP_HA_ALONE;
    s->ha_lag_records = st.seq - st.acked;
    s->ha_lag_ns = st.lag_ns;
    s->ha_records = st.seq;
    s->ha_diverged = st.diverged;
}

int ha_node_pollfds(bk *b, struct pollfd *pfd, int *ready)
{
    int n = 0, r = 0;
    ha_node *h = b->ha;
    int fd = ha_prim_fd(h->prim, &r);
    if (fd >= 0)
        pfd[n++] = (struct pollfd){.fd = fd, .events = POLLIN};
    *ready = r;
    short ev = 0;
    fd = ha_lease_pollfd(h->lease, &ev);
    if (fd >= 0)
        pfd[n++] = (struct pollfd){.fd = fd, .events = ev};
    return n;
}
