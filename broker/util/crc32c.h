/*
 * crc32c.h - CRC-32C (Castagnoli), the checksum on every stored record.
 *
 * The polynomial is 0x1EDC6F41 (reflected 0x82F63B78), with the usual
 * pre- and post-inversion, so crc32c_value("123456789", 9) == 0xE3069283.
 * The functions are pure and thread-safe.
 */
#ifndef SLUICE_CRC32C_H
#define SLUICE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* crc32c_extend returns the CRC-32C of the bytes summed so far (crc, which is
 * 0 for no bytes) followed by buf[0..len). So crc32c_extend(crc32c_value(a),
 * b) is the CRC of a followed by b. It uses the SSE4.2 crc32 instruction when
 * the CPU has it, and crc32c_extend_soft otherwise. buf may be NULL when len
 * is 0. */
uint32_t crc32c_extend(uint32_t crc, const void *buf, size_t len);

/* crc32c_value returns the CRC-32C of buf[0..len). */
uint32_t crc32c_value(const void *buf, size_t len);

/* crc32c_extend_soft is the portable table-driven implementation, exposed so
 * that tests can check it against the hardware path. */
uint32_t crc32c_extend_soft(uint32_t crc, const void *buf, size_t len);

/* crc32c_hardware tells whether crc32c_extend uses the CPU instruction. */
int crc32c_hardware(void);

#endif /* SLUICE_CRC32C_H */
