/*
 * test_paged.c: the id-indexed arrays of engines/core/paged.h.  A bit set
 * and a row array grow by pages as ids are written, read back what was
 * written and nothing else, and free what they hold; ann_idrows_run hands
 * out consecutive rows in place within a page and copied across a page
 * boundary (the pending scan's blocks, diskann-record's search.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "engines/core/paged.h"

#include <stdlib.h>
#include <string.h>

static void test_idbits(void **state)
{
    (void)state;
    ann_idbits b;
    assert_int_equal(ann_idbits_init(&b), 0);
    const uint32_t ids[] = { 0, 7, ANN_PAGE_IDS - 1, ANN_PAGE_IDS, 3u * ANN_PAGE_IDS + 5,
                             UINT32_MAX };
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        assert_false(ann_idbits_test(&b, ids[i]));
        assert_int_equal(ann_idbits_set(&b, ids[i], 1), 0);
        assert_true(ann_idbits_test(&b, ids[i]));
    }
    assert_false(ann_idbits_test(&b, 1));
    assert_false(ann_idbits_test(&b, 2u * ANN_PAGE_IDS)); /* a page never written */
    assert_int_equal(ann_idbits_set(&b, 7, 0), 0);
    assert_false(ann_idbits_test(&b, 7));
    assert_true(ann_idbits_test(&b, 0));
    assert_int_equal(ann_idbits_set(&b, 2u * ANN_PAGE_IDS, 0), 0); /* clearing: no page made */
    assert_null(ann_paged_peek_(&b, 2u * ANN_PAGE_IDS));
    ann_paged_fini(&b);
    ann_paged_fini(&b); /* twice: a no-op */
}

static void test_idrows_run(void **state)
{
    (void)state;
    enum { ROW = 64, N = 96 };
    ann_idrows r;
    assert_int_equal(ann_idrows_init(&r, ROW), 0);
    assert_null(ann_idrows_get(&r, 5));
    /* rows ANN_PAGE_IDS - 40 .. ANN_PAGE_IDS + 55: two pages */
    const uint32_t first = ANN_PAGE_IDS - 40;
    for (uint32_t i = 0; i < N; i++) {
        uint8_t *row = ann_idrows_put(&r, first + i);
        assert_non_null(row);
        memset(row, (int)(i + 1), ROW);
    }
    static uint8_t buf[N * ROW];
    /* within the first page: in place */
    const uint8_t *a = ann_idrows_run(&r, first, 40, buf);
    assert_ptr_equal(a, ann_idrows_get(&r, first));
    /* across the boundary: copied, every row in order */
    const uint8_t *b = ann_idrows_run(&r, first, N, buf);
    assert_ptr_equal(b, buf);
    for (uint32_t i = 0; i < N; i++)
        for (uint32_t k = 0; k < ROW; k++)
            assert_int_equal(b[i * ROW + k], (uint8_t)(i + 1));
    /* within the second page: in place again */
    assert_ptr_equal(ann_idrows_run(&r, ANN_PAGE_IDS, 56, buf), ann_idrows_get(&r, ANN_PAGE_IDS));
    /* a run reaching a page never written */
    assert_null(ann_idrows_run(&r, 2u * ANN_PAGE_IDS - 10, 20, buf));
    assert_null(ann_idrows_run(&r, 5u * ANN_PAGE_IDS, 20, buf));
    /* ids wrap mod 2^32: the last page and page 0 */
    memset(ann_idrows_put(&r, UINT32_MAX), 0xab, ROW);
    memset(ann_idrows_put(&r, 0), 0xcd, ROW);
    const uint8_t *w = ann_idrows_run(&r, UINT32_MAX, 2, buf);
    assert_ptr_equal(w, buf);
    assert_int_equal(w[0], 0xab);
    assert_int_equal(w[ROW], 0xcd);
    ann_paged_fini(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_idbits),
        cmocka_unit_test(test_idrows_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
