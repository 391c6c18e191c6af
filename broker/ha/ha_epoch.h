/*
 * ha_epoch.h - the highest epoch this node has seen, kept on its disk
 * (ha_epoch.c), so that a Redis that lost its data never makes it go back.
 */
#ifndef SLUICE_HA_EPOCH_H
#define SLUICE_HA_EPOCH_H

#include <stdint.h>

#define HA_EPOCH_FILE "ha.epoch"

/* ha_epoch_load reads dir's epoch file: *epoch 0 when there is none.
 * SL_OK, SL_ECORRUPT (unreadable content), SL_EIO; logged. */
int ha_epoch_load(const char *dir, uint64_t *epoch);

/* ha_epoch_save writes epoch durably (a new file flushed, renamed over the
 * old, the directory flushed) before the caller acts on it. SL_OK or SL_EIO. */
int ha_epoch_save(const char *dir, uint64_t epoch);

#endif /* SLUICE_HA_EPOCH_H */
