/*
 * test_crc32c.c: CRC-32C against its check value and published vectors,
 * the SSE4.2 and table implementations equal on every length and
 * alignment, and the record checksum catching every single flipped bit of
 * records of the sizes the formats store.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "engines/core/crc32c.h"
#include "tests/support/testutil.h"

#include <stdlib.h>
#include <string.h>

static void test_known_values(void **state)
{
    (void)state;
    assert_int_equal(ann_crc32c(0, "123456789", 9), 0xE3069283u);
    assert_int_equal(ann_crc32c_sw(0, "123456789", 9), 0xE3069283u);
    unsigned char zeros[32] = { 0 }, ones[32];
    memset(ones, 0xff, sizeof ones);
    /* RFC 3720, appendix B.4 */
    assert_int_equal(ann_crc32c(0, zeros, 32), 0x8A9136AAu);
    assert_int_equal(ann_crc32c(0, ones, 32), 0x62A8AB43u);
    assert_int_equal(ann_crc32c(0, "", 0), 0);
    /* continuing a CRC equals one pass */
    assert_int_equal(ann_crc32c(ann_crc32c(0, "1234", 4), "56789", 5), 0xE3069283u);
    print_message("crc32c implementation: %s\n", ann_crc32c_impl());
}

static void test_hw_equals_table(void **state)
{
    (void)state;
    unsigned char *buf = malloc(5000 + 8);
    uint64_t s = 3;
    for (size_t i = 0; i < 5008; i++)
        buf[i] = (unsigned char)tu_rand(&s);
    for (size_t off = 0; off < 8; off++)
        for (size_t len = 0; len <= 5000; len += len < 300 ? 1 : 97)
            if (ann_crc32c(7, buf + off, len) != ann_crc32c_sw(7, buf + off, len))
                fail_msg("offset %zu length %zu differ", off, len);
    free(buf);
}

static void test_checksum_catches_every_bit(void **state)
{
    (void)state;
    static const size_t sizes[] = { 1, 100, 191, 192, 644, 3332, 4100 };
    uint64_t s = 11;
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
        size_t n = sizes[z];
        unsigned char *rec = malloc(n);
        for (size_t i = 0; i < n; i++)
            rec[i] = (unsigned char)tu_rand(&s);
        uint32_t good = ann_checksum(rec, n);
        for (size_t bit = 0; bit < n * 8; bit++) {
            rec[bit / 8] ^= (unsigned char)(1u << (bit % 8));
            if (ann_checksum(rec, n) == good)
                fail_msg("size %zu: flipping bit %zu is not caught", n, bit);
            rec[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        }
        assert_int_equal(ann_checksum(rec, n), good);
        free(rec);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_values),
        cmocka_unit_test(test_hw_equals_table),
        cmocka_unit_test(test_checksum_catches_every_bit),
    };
    return cmocka_run_group_tests_name("crc32c", tests, NULL, NULL);
}
