/*
 * ha_recv.h - a standby's copy of its primary's store, received into a
 * directory beside its data and swapped in for its store (ha_recv.c).
 */
#ifndef SLUICE_HA_RECV_H
#define SLUICE_HA_RECV_H

#include <stddef.h>
#include <stdint.h>

typedef struct ha_recv ha_recv;

/* ha_recv_begin prepares DATA.copy beside data_dir for a copy of size
 * bytes (a cut-short copy there is removed first; anything else there is
 * kept aside). SL_OK, SL_EIO, SL_ENOMEM; logged. */
int ha_recv_begin(const char *data_dir, uint64_t size, ha_recv **out);

/* ha_recv_write writes the chunk at off after checking it (the offset is
 * the next, it fits the size, its CRC-32C is sum). SL_OK; SL_ECORRUPT (a
 * bad chunk); SL_EIO or SL_ENOSPC (the disk); logged. */
int ha_recv_write(ha_recv *r, uint64_t off, const unsigned char *p, size_t len, uint32_t sum);

/* ha_recv_end checks the whole copy (size, CRC-32C), flushes the file and
 * the directory, writes the epoch file into it and marks it complete.
 * SL_OK; SL_ECORRUPT; SL_EIO. */
int ha_recv_end(ha_recv *r, uint64_t size, uint32_t sum, uint64_t epoch);

/* ha_recv_got returns the bytes written so far; ha_recv_sum their CRC-32C. */
uint64_t ha_recv_got(const ha_recv *r);
uint32_t ha_recv_sum(const ha_recv *r);

/* ha_recv_free ends: a copy not complete is removed (the store is left as
 * it is). Accepts NULL, NULLs *r. */
void ha_recv_free(ha_recv **r);

/* ha_recv_swap puts a complete DATA.copy in place of data_dir (its store
 * closed), the old one kept aside as DATA.replaced-EPOCH-SEQ-TIME (named
 * in aside). SL_OK, SL_ENOTFOUND (no complete copy), SL_EIO; logged. */
int ha_recv_swap(const char *data_dir, uint64_t old_epoch, uint64_t old_seq, char *aside, size_t aside_len);

#endif /* SLUICE_HA_RECV_H */
