/* main.c — runs every registered test (or those whose name contains one of the
 * comma-separated words of argv[1]) and
 * prints "N passed, N failed, N skipped" (with the Python tests' counts folded in when
 * TOPKP_MORE_RESULTS names them). Exit status 1 when anything failed.
 * `--list [FILTER]` prints the selected names, one a line, and runs nothing. */
#include <stdarg.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

#define MAX_TESTS 512

static struct {
    const char *name;
    test_fn fn;         /* a TEST(name) */
    test_fn_arg fn_arg; /* or a test_register_arg one, called with arg */
    const void *arg;
} tests[MAX_TESTS];
static int n_tests, current_failed;
static const char *current_skip;

static void add(const char *name, test_fn fn, test_fn_arg fn_arg, const void *arg)
{
    if (n_tests == MAX_TESTS) {
        fprintf(stderr, "too many tests (raise MAX_TESTS in tests/main.c)\n");
        exit(2);
    }
    tests[n_tests].name = name;
    tests[n_tests].fn = fn;
    tests[n_tests].fn_arg = fn_arg;
    tests[n_tests++].arg = arg;
}

void test_register(const char *name, test_fn fn) { add(name, fn, NULL, NULL); }

void test_register_arg(const char *name, test_fn_arg fn, const void *arg)
{
    add(name, NULL, fn, arg);
}

void test_register_named(const char *prefix, const char *suffix, test_fn_arg fn,
                         const void *arg)
{
    char *name;
    if (asprintf(&name, "%s%s", prefix, suffix) < 0) {
        fprintf(stderr, "out of memory registering %s%s\n", prefix, suffix);
        exit(2);
    }
    test_register_arg(name, fn, arg);
}

void test_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    if (current_failed < 5) {
        fprintf(stderr, "  %s:%d: ", file, line);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
    }
    current_failed++;
}

int test_failed(void) { return current_failed > 0; }

void test_skip(const char *why) { current_skip = why; }

/* Does `name` contain one of the comma-separated words of `filter`? */
static int selected(const char *name, const char *filter)
{
    char words[1024];
    snprintf(words, sizeof words, "%s", filter);
    for (char *save, *w = strtok_r(words, ",", &save); w; w = strtok_r(NULL, ",", &save))
        if (strstr(name, w))
            return 1;
    return 0;
}

/* No filter selects every test. */
static bool wanted(const char *name, const char *filter)
{
    return !filter || selected(name, filter);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* `make test` runs the Python package's tests first and names their counts file,
 * "passed failed skipped", in TOPKP_MORE_RESULTS (scripts/test-python.sh): they join this
 * suite's one last line. A named file that cannot be read counts as one failure. */
static void more_results(int *passed, int *failed, int *skipped)
{
    const char *path = getenv("TOPKP_MORE_RESULTS");
    if (!path || !*path)
        return;
    FILE *f = fopen(path, "r");
    int p = 0, fl = 0, s = 0;
    if (!f || fscanf(f, "%d %d %d", &p, &fl, &s) != 3 || p < 0 || fl < 0 || s < 0) {
        printf("FAIL python tests (no counts in %s)\n", path);
        p = 0, fl = 1, s = 0;
    } else
        printf("python tests (tests/python, %s): %d passed, %d failed, %d skipped\n", path, p,
               fl, s);
    if (f)
        fclose(f);
    *passed += p, *failed += fl, *skipped += s;
}

int main(int argc, char **argv)
{
    const bool list = argc > 1 && strcmp(argv[1], "--list") == 0;
    const char *filter = argc > 1 + list ? argv[1 + list] : NULL;
    qsort(tests, (size_t)n_tests, sizeof tests[0], by_name);
    if (list) {
        for (int i = 0; i < n_tests; i++)
            if (wanted(tests[i].name, filter))
                printf("%s\n", tests[i].name);
        return 0;
    }
    int passed = 0, failed = 0, skipped = 0;
    for (int i = 0; i < n_tests; i++) {
        if (!wanted(tests[i].name, filter))
            continue;
        current_failed = 0;
        current_skip = NULL;
        if (tests[i].fn)
            tests[i].fn();
        else
            tests[i].fn_arg(tests[i].arg);
        if (current_skip && !current_failed) {
            skipped++;
            printf("skip %s (%s)\n", tests[i].name, current_skip);
        } else if (current_failed) {
            failed++;
            printf("FAIL %s (%d failed checks)\n", tests[i].name, current_failed);
        } else {
            passed++;
            printf("ok   %s\n", tests[i].name);
        }
        fflush(stdout);
    }
    more_results(&passed, &failed, &skipped);
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    fflush(stdout); /* before LeakSanitizer's exit-time report, which ends the process (SAN=1) */
    return failed ? 1 : 0;
}
