/*
 * bk.c - the broker object: what it owns and the order it opens and closes.
 *
 * Owns: the configuration, the data-directory lock, and the modules (store,
 * queue, conns, leases, pools, dispatch state, meter, coord, net, the HTTP
 * server and its bridge, the service manager's socket). bk_open takes the lock, opens the
 * store, rebuilds the queue view, loads the persisted settings, sets up the
 * meter and binds, then starts the HTTP server and reads $NOTIFY_SOCKET
 * last, so that nobody can reach a half-open broker; bk_close undoes it in the reverse order. Nothing else
 * lives here: each path through the broker has its own file.
 *
 *   handle   routes each message to the module below; no work of its own
 *   admit    the publish policy (PUT)
 *   deliver  dispatch: pick, ask the meter, lease, queue the DELIVER
 *   settle   ack, nack, touch, throttled, reject, expiry, dropped peers
 *   member   pool membership and the POOL messages that announce it
 *   cron     everything on a timer, and what the loop does between commits
 *   admin, stats, explain, settings   the operator's side
 *   publish, notify, reload   running it as a service: the HTTP server's
 *            snapshot, systemd's notifications, SIGHUP
 *   meter, queue, store, net, conn, lease, pool, disp, rl, breaker, tmr
 *            the modules the paths use
 *
 * Who may include whom (no circles): every file may include bk.h, which
 * declares only the struct and its open/close; bk.c itself calls down into
 * the modules it opens (settings_load among them, whose file includes bk.h:
 * the one exception). Otherwise a file includes only headers of layers
 * below its own, never of its own layer or above:
 *
 *   1  main             5  explain, cron, auth                9  conn, store
 *   2  loop             6  admit, deliver, settle, settings, 10 rec, rl, breaker, tmr,
 *   3  handle, reload      publish                               hist, share
 *   4  admin, stats     7  member                            11 crc32c, grow
 *                       8  queue, meter, lease, net, pool,   12 log, units, proto
 *                          disp, conf, notify, zap, coord
 *
 * (store.c and its sibling files share store_int.h, the module's private
 * header.)
 *
 * Costs: open is O(levels + delayed + settings); close is O(everything held).
 */
#include "bk.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"
#include "coord.h"
#include "log.h"
#include "bridge.h"
#include "http.h"
#include "publish.h"
#include "net.h"
#include "notify.h"
#include "settings.h"
#include "store.h"
#include "units.h"

/* open_coord sets up the capacity leases when --coord is given: the sink
 * runs on the reserved rate until Redis grants slices. The password comes
 * from --coord-password-file or SLUICE_COORD_PASSWORD, the ACL user from
 * --coord-user or SLUICE_COORD_USER. */
static int open_coord(bk *b)
{
    const conf *cfg = &b->cfg;
    char password[512] = "", host[256] = "", name[1400], err[512];
    const char *env = getenv("SLUICE_COORD_PASSWORD"), *user = cfg->coord_user[0] ? cfg->coord_user : getenv("SLUICE_COORD_USER");
    if (!cfg->coord_url[0])
        return SL_OK;
    if (cfg->coord_password_file[0]) {
        FILE *f = fopen(cfg->coord_password_file, "r");
        if (!f || !fgets(password, sizeof password, f)) {
            log_error("bk", "cannot read the Redis password from %s: %s", cfg->coord_password_file,
                      f ? "empty file" : strerror(errno));
            if (f)
                fclose(f);
            return SL_EINVAL;
        }
        fclose(f);
        password[strcspn(password, "\r\n")] = '\0';
    } else if (env) {
        snprintf(password, sizeof password, "%s", env);
    }
    gethostname(host, sizeof host - 1);
    snprintf(name, sizeof name, "%s %s", host, cfg->listen);
    coord_cfg cc = {.url = cfg->coord_url, .sink = cfg->coord_name, .broker = name, .user = user,
                    .password = password[0] ? password : NULL, .reserved_milli = cfg->reserved_rate * 1000,
                    .limit_milli = b->meter.sink.rate_milli, .ttl_ms = cfg->coord_ttl_ms, .slices = cfg->coord_slices};
    int rc = coord_new(&cc, &b->coord, err, sizeof err);
    memset(password, 0, sizeof password);
    if (rc != SL_OK) {
        log_error("bk", "%s", err);
        return rc;
    }
    b->meter.sink.coordinated = 1;
    b->meter.sink.reserved_milli = cc.reserved_milli;
    b->coord_wake_ns = b->mono_ns;
    log_info("bk", "sink %s shared through %s: reserved %llu/s until Redis grants slices", cfg->coord_name,
             cfg->coord_url, (unsigned long long)cfg->reserved_rate);
    return SL_OK;
}

/* open_http starts the HTTP server (--http) and its bridge to the loop. */
static int open_http(bk *b)
{
    const conf *cfg = &b->cfg;
    if (!cfg->http[0])
        return SL_OK;
    int rc = bridge_open(b->net, BK_BRIDGE_TIMEOUT_MS, &b->bridge);
    if (rc != SL_OK)
        return rc;
    http_cfg hc = {.addr_port = cfg->http, .cert_file = cfg->http_cert, .key_file = cfg->http_key,
                   .max_conns = cfg->http_max_conns, .max_conns_per_addr = cfg->http_max_conns_per_addr,
                   .header_timeout_ms = cfg->http_header_timeout_ms, .idle_timeout_ms = cfg->http_idle_timeout_ms,
                   .session_idle_ms = cfg->http_session_idle_ms, .auth = cfg->auth_file[0] != '\0',
                   .max_body = cfg->max_body, .bridge = b->bridge};
    if ((rc = http_open(&hc, &b->http)) != SL_OK)
        bridge_close(&b->bridge);
    return rc;
}

/* lock_dir creates dir if needed and locks it; *fd is the lock's. The lock
 * that keeps a second broker out is the store's, on data.mdb and wal.log
 * themselves (store_open): this file can be deleted while the broker runs,
 * and then locks nothing; it stays so that the usual refusal names the
 * directory at once. */
static int lock_dir(const char *dir, int *fd_out)
{
    char path[4200];
    if (mkdir(dir, 0750) != 0 && errno != EEXIST) {
        log_error("bk", "cannot create data directory %s: %s", dir, strerror(errno));
        return SL_EIO;
    }
    snprintf(path, sizeof path, "%s/sluiced.lock", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0) {
        log_error("bk", "cannot open %s: %s", path, strerror(errno));
        return SL_EIO;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        log_error("bk", "another sluiced is using %s (%s is locked)", dir, path);
        close(fd);
        return SL_ESTATE;
    }
    *fd_out = fd;
    return SL_OK;
}

int bk_open(const conf *cfg, uint64_t mono_ns, uint64_t wall_ns, bk **out)
{
    store_level_info info[PROTO_MAX_LEVELS];
    int rc;
    bk *b = calloc(1, sizeof *b);
    if (!b)
        return SL_ENOMEM;
    b->cfg = *cfg;
    b->mono_ns = b->started_mono_ns = mono_ns;
    b->wall_ns = wall_ns;
    b->all_mask = (uint32_t)((1ULL << cfg->levels) - 1);
    rc = lock_dir(cfg->data_dir, &b->lock_fd);
    if (rc != SL_OK)
        goto free_b;
    store_cfg scfg = {.dir = cfg->data_dir, .levels = cfg->levels, .map_bytes = cfg->map_bytes,
                      .wal_bytes = cfg->wal_bytes, .wal_buffered = cfg->wal_buffered, .checkpoint_ns = (uint64_t)cfg->checkpoint_ms * NS_PER_MS};
    rc = store_open(&scfg, &b->st, info);
    if (rc != SL_OK)
        goto unlock;
    queue_open(&b->q, b->st, cfg->levels, info);
    room_init(&b->room, b->cfg.data_dir, cfg->soft_limit_pct, cfg->map_max_bytes);
    rc = conn_table_init(&b->conns);
    if (rc != SL_OK)
        goto queue_close;
    rc = lease_table_init(&b->leases);
    if (rc != SL_OK)
        goto conns_fini;
    pool_table_init(&b->pools);
    b->pools.max = cfg->pool_max;
    disp_init(&b->disp, cfg->overdue_share_pct);
    meter_init(&b->meter, cfg->levels, cfg->breaker_threshold_pct, cfg->breaker_window,
               cfg->breaker_cooldown_ms * NS_PER_MS);
    rc = settings_load(b);
    if (rc == SL_OK)
        rc = open_coord(b);
    if (rc != SL_OK)
        goto pools_fini;
    meter_sink_apply(&b->meter, mono_ns);
    for (unsigned l = 0; l < cfg->levels; l++)
        meter_level_apply(&b->meter, l, mono_ns);
    b->next_hb_ns = mono_ns + cfg->heartbeat_ms * NS_PER_MS;
    b->meter_wake_ns = TMR_NEVER;
    char secret[AUTH_KEY_LEN + 1], err[600];
    if (cfg->curve_secret_file[0] && (rc = auth_secret_load(cfg->curve_secret_file, secret, err, sizeof err))) {
        log_error("bk", "--curve-secret: %s", err);
        goto pools_fini;
    }
    net_cfg ncfg = {.endpoint = cfg->listen, .max_body_bytes = cfg->max_body, .heartbeat_ms = (int)cfg->heartbeat_ms,
                    .curve_secret = cfg->curve_secret_file[0] ? secret : NULL,
                    .admin_endpoint = cfg->admin_listen[0] ? cfg->admin_listen : NULL,
                    .http_bridge = cfg->http[0] != '\0',
                    .stream_endpoint = cfg->stream_listen[0] ? cfg->stream_listen : NULL};
    rc = net_open(&ncfg, &b->net);
    if (rc != SL_OK)
        goto pools_fini;
    if ((rc = auth_open(b)) != SL_OK) /* before READY; until then the ZAP handler refuses everyone */
        goto net_close;
    if ((rc = open_http(b)) != SL_OK)
        goto auth_fini;
    publish_figures(b);
    notify_open(&b->notify, mono_ns); /* last: nothing after it can fail */

    uint64_t total = 0, delayed = 0;
    for (unsigned l = 0; l < cfg->levels; l++) {
        total += info[l].count;
        delayed += b->q.lv[l].delayed;
    }
    log_info("bk", "data %s: %llu messages ready, %llu delayed, in %u levels; listening on %s%s%s%s%s%s%s",
             cfg->data_dir, (unsigned long long)total, (unsigned long long)delayed, cfg->levels,
             cfg->listen, cfg->admin_listen[0] ? " (admin: " : "", cfg->admin_listen, cfg->admin_listen[0] ? ")" : "",
             cfg->stream_listen[0] ? " (stream: " : "", cfg->stream_listen, cfg->stream_listen[0] ? ")" : "");
    *out = b;
    return SL_OK;

auth_fini:
    auth_close(b);
net_close:
    net_close(&b->net);
pools_fini:
    coord_destroy(&b->coord);
    pool_table_fini(&b->pools);
    lease_table_fini(&b->leases);
conns_fini:
    conn_table_fini(&b->conns);
queue_close:
    queue_close(&b->q);
    store_close(&b->st);
unlock:
    close(b->lock_fd);
free_b:
    free(b);
    return rc;
}

void bk_close(bk **bp)
{
    bk *b = bp ? *bp : NULL;
    if (!b)
        return;
    notify_close(&b->notify);
    http_close(&b->http);     /* its requests to the loop are answered SL_ESHUTDOWN first */
    bridge_close(&b->bridge); /* before net_close: its socket lives in net's context */
    net_close(&b->net);
    auth_close(b);
    coord_destroy(&b->coord);
    pool_table_fini(&b->pools);
    lease_table_fini(&b->leases);
    conn_table_fini(&b->conns);
    queue_close(&b->q);
    store_close(&b->st);
    close(b->lock_fd);
    free(b);
    *bp = NULL;
}
