/*
 * byteorder.h - fixed-width integers in the byte order of the broker's
 * formats: records, the write-ahead log and meta values are little-endian;
 * LMDB keys are big-endian, so that LMDB's default memcmp order is their
 * numeric order. Unaligned access through memcpy, which compilers turn into
 * one load or store. Pure.
 */
#ifndef SLUICE_BYTEORDER_H
#define SLUICE_BYTEORDER_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

static inline void put_le16(unsigned char *p, uint16_t v) { v = htole16(v); memcpy(p, &v, sizeof v); }
static inline void put_le32(unsigned char *p, uint32_t v) { v = htole32(v); memcpy(p, &v, sizeof v); }
static inline void put_le64(unsigned char *p, uint64_t v) { v = htole64(v); memcpy(p, &v, sizeof v); }
static inline void put_be64(unsigned char *p, uint64_t v) { v = htobe64(v); memcpy(p, &v, sizeof v); }
static inline uint16_t get_le16(const unsigned char *p) { uint16_t v; memcpy(&v, p, sizeof v); return le16toh(v); }
static inline uint32_t get_le32(const unsigned char *p) { uint32_t v; memcpy(&v, p, sizeof v); return le32toh(v); }
static inline uint64_t get_le64(const unsigned char *p) { uint64_t v; memcpy(&v, p, sizeof v); return le64toh(v); }
static inline uint64_t get_be64(const unsigned char *p) { uint64_t v; memcpy(&v, p, sizeof v); return be64toh(v); }

#endif /* SLUICE_BYTEORDER_H */
