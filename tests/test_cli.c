/*
 * test_cli.c: the annlab program explains itself: `annlab --help` lists
 * every command, `annlab COMMAND --help` prints each one's flags (exit 0),
 * `annlab --version` names the version and the source commit, and bad
 * usage exits 2 with the list of commands.  Through the real binary
 * (ANNLAB_BIN; skipped when unset).
 */
#include "harness/version.h"
#include "tests/support/harness_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static char *annlab(int *rc, const char *a1, const char *a2)
{
    const char *args[] = { a1, a2, NULL };
    char *out = NULL;
    *rc = hf_annlab(NULL, &out, args);
    return out ? out : strdup("");
}

static void want(const char *out, const char *s)
{
    if (!strstr(out, s))
        fail_msg("output lacks \"%s\":\n%s", s, out);
}

static const char *const commands[] = { "engines", "dataset", "run", "table", "plot", "compare", "export" };

static void test_help_lists_every_command(void **state)
{
    (void)state;
    if (!hf_bin())
        skip();
    int rc;
    char *out = annlab(&rc, "--help", NULL);
    assert_int_equal(rc, 0);
    want(out, "usage: annlab COMMAND [ARGS...]");
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++) {
        char line[64];
        snprintf(line, sizeof line, "\n  %-9s ", commands[i]);
        want(out, line);
    }
    want(out, "--version");
    want(out, "`annlab COMMAND --help` lists a command's flags.");
    free(out);
    /* no command: the same list on stderr, exit 2 */
    const char *none[] = { NULL };
    out = NULL;
    assert_int_equal(hf_annlab(NULL, &out, none), 2);
    want(out, "\n  export    ");
    free(out);
    out = annlab(&rc, "frobnicate", NULL);
    assert_int_equal(rc, 2);
    want(out, "annlab: unknown command 'frobnicate'\nusage: annlab COMMAND");
    free(out);
}

static void test_each_command_explains_its_flags(void **state)
{
    (void)state;
    if (!hf_bin())
        skip();
    static const struct {
        const char *cmd, *flag;
    } cases[] = {
        { "engines", "-v, --params" },
        { "dataset", "annlab dataset import FILE... --out DIR" },
        { "run", "--dry-run" },
        { "table", "--baseline LABEL" },
        { "plot", "--recall-axis" },
        { "compare", "--report FILE.md" },
        { "export", "--format ann-benchmarks|big-ann|vectordbbench" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int rc;
        char *out = annlab(&rc, cases[i].cmd, "--help");
        if (rc != 0)
            fail_msg("annlab %s --help: exit %d\n%s", cases[i].cmd, rc, out);
        char usage[64];
        snprintf(usage, sizeof usage, "usage: annlab %s", cases[i].cmd);
        want(out, usage);
        want(out, cases[i].flag);
        free(out);
    }
}

static void test_version(void **state)
{
    (void)state;
    if (!hf_bin())
        skip();
    int rc;
    char *out = annlab(&rc, "--version", NULL);
    assert_int_equal(rc, 0);
    want(out, "annlab " ANNLAB_VERSION "\ncommit ");
    want(out, "\nSIMD kernels: ");
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help_lists_every_command),
        cmocka_unit_test(test_each_command_explains_its_flags),
        cmocka_unit_test(test_version),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
