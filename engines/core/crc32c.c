/*
 * crc32c.c: CRC-32C by the SSE4.2 crc32 instruction or slicing-by-8
 * tables (Intel's "slicing-by-8", Kounavis and Berry 2005), chosen once at
 * start-up; the three-lane record checksum (crc32c.h).
 */
#include "engines/core/crc32c.h"

#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define ANN_X86 1
#endif

#define POLY 0x82F63B78u

static uint32_t table[8][256];

__attribute__((constructor)) static void tables_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
        table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
}

/* The raw (not inverted) CRC state over len bytes. */
static uint32_t sw_raw(uint32_t c, const unsigned char *p, size_t len)
{
    while (len && ((uintptr_t)p & 7)) {
        c = (c >> 8) ^ table[0][(c ^ *p++) & 0xff];
        len--;
    }
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        w ^= c; /* little-endian: the low 4 bytes meet the state */
        c = table[7][w & 0xff] ^ table[6][(w >> 8) & 0xff] ^ table[5][(w >> 16) & 0xff] ^
            table[4][(w >> 24) & 0xff] ^ table[3][(w >> 32) & 0xff] ^
            table[2][(w >> 40) & 0xff] ^ table[1][(w >> 48) & 0xff] ^ table[0][w >> 56];
        p += 8;
        len -= 8;
    }
    while (len--)
        c = (c >> 8) ^ table[0][(c ^ *p++) & 0xff];
    return c;
}

uint32_t ann_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
    return ~sw_raw(~crc, buf, len);
}

#ifdef ANN_X86
__attribute__((target("sse4.2"))) static uint32_t hw_raw(uint32_t c, const unsigned char *p,
                                                         size_t len)
{
    uint64_t c64 = c;
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c64 = _mm_crc32_u64(c64, w);
        p += 8;
        len -= 8;
    }
    c = (uint32_t)c64;
    while (len--)
        c = _mm_crc32_u8(c, *p++);
    return c;
}

/* Three lanes of lane bytes each (a multiple of 8), interleaved. */
__attribute__((target("sse4.2"))) static void hw_lanes(const unsigned char *p, size_t lane,
                                                       uint32_t out[3])
{
    uint64_t a = ~0u, b = ~0u, c = ~0u;
    const unsigned char *q = p + lane, *r = p + 2 * lane;
    for (size_t i = 0; i < lane; i += 8) {
        uint64_t x, y, z;
        memcpy(&x, p + i, 8);
        memcpy(&y, q + i, 8);
        memcpy(&z, r + i, 8);
        a = _mm_crc32_u64(a, x);
        b = _mm_crc32_u64(b, y);
        c = _mm_crc32_u64(c, z);
    }
    out[0] = (uint32_t)a;
    out[1] = (uint32_t)b;
    out[2] = (uint32_t)c;
}
#endif

static int use_hw;

__attribute__((constructor)) static void impl_init(void)
{
#ifdef ANN_X86
    __builtin_cpu_init();
    use_hw = __builtin_cpu_supports("sse4.2");
#endif
}

const char *ann_crc32c_impl(void)
{
    return use_hw ? "sse4.2" : "table";
}

uint32_t ann_crc32c(uint32_t crc, const void *buf, size_t len)
{
#ifdef ANN_X86
    if (use_hw)
        return ~hw_raw(~crc, buf, len);
#endif
    return ann_crc32c_sw(crc, buf, len);
}

static inline uint32_t rotl32(uint32_t x, int r)
{
    return (x << r) | (x >> (32 - r));
}

uint32_t ann_checksum(const void *buf, size_t len)
{
    if (len < 192)
        return ann_crc32c(0, buf, len);
    const unsigned char *p = buf;
    size_t lane = (len / 3) & ~(size_t)7;
    uint32_t l[3];
#ifdef ANN_X86
    if (use_hw) {
        hw_lanes(p, lane, l);
        /* the third lane runs on over the remainder */
        l[2] = hw_raw(l[2], p + 3 * lane, len - 3 * lane);
        for (int i = 0; i < 3; i++)
            l[i] = ~l[i];
        return l[0] ^ rotl32(l[1], 11) ^ rotl32(l[2], 22);
    }
#endif
    l[0] = ann_crc32c_sw(0, p, lane);
    l[1] = ann_crc32c_sw(0, p + lane, lane);
    l[2] = ann_crc32c_sw(0, p + 2 * lane, len - 2 * lane);
    return l[0] ^ rotl32(l[1], 11) ^ rotl32(l[2], 22);
}
