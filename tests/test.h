/* test.h — a tiny test runner: TEST(name) registers a function at load time; CHECK and
 * friends record a failure with file:line and a message (print the seed for randomized
 * cases). tests/main.c runs them all and ends with "N passed, N failed". */
#ifndef TKP_TEST_H
#define TKP_TEST_H

#include <stdio.h>

typedef void (*test_fn)(void);
void test_register(const char *name, test_fn fn);
/* A test made at load time with an argument: tests/test_conformance.c registers one of each
 * of its checks per module of the registry, `arg` being the module. `name` must outlive the
 * run (a string the caller allocated and never frees). */
typedef void (*test_fn_arg)(const void *arg);
void test_register_arg(const char *name, test_fn_arg fn, const void *arg);
/* test_register_arg under the name <prefix><suffix> (allocated here, kept for the run): one
 * test per module, the suffix its name (test_conformance.c, test_batch_invariance.c). */
void test_register_named(const char *prefix, const char *suffix, test_fn_arg fn,
                         const void *arg);
void test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int test_failed(void); /* has the running test failed so far? */
/* Mark the running test skipped (e.g. no GPU here); it counts neither as passed nor failed. */
void test_skip(const char *why);

#define TEST(name)                                                                       \
    static void name(void);                                                              \
    __attribute__((constructor)) static void register_##name(void)                       \
    {                                                                                    \
        test_register(#name, name);                                                      \
    }                                                                                    \
    static void name(void)

#define CHECK(cond, ...)                                                                 \
    do {                                                                                 \
        if (!(cond))                                                                     \
            test_fail(__FILE__, __LINE__, __VA_ARGS__);                                  \
    } while (0)

/* Stop the running test at the first failure of `cond`. */
#define REQUIRE(cond, ...)                                                               \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            test_fail(__FILE__, __LINE__, __VA_ARGS__);                                  \
            return;                                                                      \
        }                                                                                \
    } while (0)

#endif
