/*
 * settings.h - persisted operator settings (levels, pools, the sink).
 */
#ifndef SLUICE_SETTINGS_H
#define SLUICE_SETTINGS_H

#include <stddef.h>
#include <stdint.h>

struct bk;
struct pool;

/* settings_load reads the persisted level, pool and sink settings into b (at
 * open, before the first pass). Returns SL_OK or a store error. */
int settings_load(struct bk *b);

/* settings_save_pool, settings_save_level and settings_save_sink write one
 * pool's, level's or the sink's settings into the open write transaction
 * (committed with the pass). A store failure is logged. */
void settings_save_pool(struct bk *b, const struct pool *p);
void settings_save_level(struct bk *b, unsigned level);
void settings_save_sink(struct bk *b);

/* settings_save_tag_rule writes one tag pattern's settings (tagset.h),
 * settings_del_tag_rule forgets the pattern of that order, and
 * settings_save_tag_pause writes (or deletes) a tag's pause, into the open
 * write transaction. A store failure is logged. */
struct tagset_rule;
void settings_save_tag_rule(struct bk *b, const struct tagset_rule *r);
void settings_del_tag_rule(struct bk *b, uint32_t order);
void settings_save_tag_pause(struct bk *b, const char *tag, size_t len, int paused);

/* settings_commit_ended ends a commit with result rc: when it was refused
 * and held a settings change, the levels', pools' and sink's settings are
 * read back from the store (the committed ones) and applied, so that the
 * change the operator was told is not stored is not live either. A pool a
 * refused batch created stays (the idle reaper removes it); one it deleted
 * comes back without members. */
void settings_commit_ended(struct bk *b, int rc);

/* settings_commit_started notes that the changes made so far go with the
 * commit that starts (with the log, the next batch's go on meanwhile). */
void settings_commit_started(struct bk *b);

#endif /* SLUICE_SETTINGS_H */
