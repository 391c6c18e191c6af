/*
 * crc32c.c - CRC-32C for record checksums, in hardware when the CPU allows.
 *
 * LMDB 0.9 keeps no page checksums, so the store seals every record with a
 * CRC-32C and checks it on every read. That puts this code on the path of
 * every enqueue and every delivery, over bodies of up to 16 MiB.
 *
 * Two implementations compute the same function:
 *
 *   - On x86-64 CPUs with SSE4.2, the crc32 instruction consumes eight bytes
 *     per step (a few GB/s on one core). The function is compiled with
 *     target("sse4.2") so the rest of the program needs no -msse4.2, and is
 *     only called after __builtin_cpu_supports("sse4.2") said yes.
 *   - Everywhere else, slicing-by-8: eight 256-entry tables (8 KiB) let one
 *     step fold eight bytes with eight lookups (roughly 1 GB/s).
 *
 * The tables and the CPU check are set up once, on first use, under
 * pthread_once, so the functions are safe to call from any thread (the
 * offline tools read the store too). After that nothing here changes.
 *
 * Conventions: the CRC is reflected, with initial value and final XOR
 * 0xFFFFFFFF; crc32c_extend takes and returns finished values, so that
 * checksums can be built from pieces.
 */
#include "crc32c.h"

#include <pthread.h>
#include <string.h>

#define CRC32C_POLY_REFLECTED 0x82F63B78u

static pthread_once_t crc32c_once = PTHREAD_ONCE_INIT;
static uint32_t crc32c_table[8][256];
static int crc32c_use_sse42;

static void crc32c_setup(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int bit = 0; bit < 8; bit++)
            c = (c & 1) ? (c >> 1) ^ CRC32C_POLY_REFLECTED : c >> 1;
        crc32c_table[0][i] = c;
    }
    /* table[k][i] is the CRC of byte i followed by k zero bytes. */
    for (int k = 1; k < 8; k++)
        for (int i = 0; i < 256; i++) {
            uint32_t prev = crc32c_table[k - 1][i];
            crc32c_table[k][i] = (prev >> 8) ^ crc32c_table[0][prev & 0xff];
        }
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    crc32c_use_sse42 = __builtin_cpu_supports("sse4.2") != 0;
#endif
}

/* Little-endian 32-bit load from any address; compiles to one load on x86. */
static uint32_t crc32c_load_le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Runs on the inverted register value, as the hardware instruction does. */
static uint32_t crc32c_soft_run(uint32_t c, const unsigned char *p, size_t len)
{
    const uint32_t (*t)[256] = crc32c_table;
    while (len >= 8) {
        uint32_t lo = c ^ crc32c_load_le32(p);
        uint32_t hi = crc32c_load_le32(p + 4);
        c = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^
            t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^ t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
        p += 8;
        len -= 8;
    }
    for (; len > 0; len--)
        c = (c >> 8) ^ t[0][(c ^ *p++) & 0xff];
    return c;
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("sse4.2")))
static uint32_t crc32c_sse42_run(uint32_t c, const unsigned char *p, size_t len)
{
    uint64_t c64 = c;
    while (len >= 8) {
        uint64_t word;
        memcpy(&word, p, sizeof word);
        c64 = __builtin_ia32_crc32di(c64, word);
        p += 8;
        len -= 8;
    }
    c = (uint32_t)c64;
    for (; len > 0; len--)
        c = __builtin_ia32_crc32qi(c, *p++);
    return c;
}
#endif

uint32_t crc32c_extend_soft(uint32_t crc, const void *buf, size_t len)
{
    pthread_once(&crc32c_once, crc32c_setup);
    return ~crc32c_soft_run(~crc, buf, len);
}

uint32_t crc32c_extend(uint32_t crc, const void *buf, size_t len)
{
    pthread_once(&crc32c_once, crc32c_setup);
#if defined(__x86_64__) && defined(__GNUC__)
    if (crc32c_use_sse42)
        return ~crc32c_sse42_run(~crc, buf, len);
#endif
    return ~crc32c_soft_run(~crc, buf, len);
}

uint32_t crc32c_value(const void *buf, size_t len)
{
    return crc32c_extend(0, buf, len);
}

int crc32c_hardware(void)
{
    pthread_once(&crc32c_once, crc32c_setup);
    return crc32c_use_sse42;
}
