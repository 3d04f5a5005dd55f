/* test_dump_logits.c — scripts/dump_logits.py end to end on its tiny randomly initialised
 * model (no weights can be downloaded here): the file it writes is read by the harness's own
 * reader as the docs/DESIGN.md layout, `topkp apply` takes it, the same seed gives the same bytes,
 * a bf16 model still yields float32 logits, and a missing --text file is a clear error.
 * Skipped when /usr/bin/python3 lacks torch or h5py (scripts/install-python-deps.sh). */
#include <hdf5.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "h5util.h"
#include "logits_file.h"
#include "cli_util.h"
#include "test.h"

#define PYTHON "/usr/bin/python3"
#define SCRIPT "scripts/dump_logits.py"
#define PROMPT "'The quick brown fox jumps over the lazy dog.'"
/* Are torch and h5py installed? Found, not imported: importing torch takes seconds. */
#define HAVE_MODULES                                                                     \
    "import importlib.util as u, sys; "                                                  \
    "sys.exit(not (u.find_spec(\"torch\") and u.find_spec(\"h5py\")))"
#define TINY_ARGS "--tiny-random 1000 --prompt " PROMPT " --positions 6 --k 20 --p 0.9 -q"

/* 1 when the script can run here; otherwise marks the test skipped (or failed) and is 0. */
static int python_ready(void)
{
    static int ready = -1;
    if (ready < 0)
        ready = run_cmd(NULL, 0, "%s -c '%s'", PYTHON, HAVE_MODULES) == 0;
    if (!ready)
        test_skip("python3-torch/h5py not installed");
    else if (access(SCRIPT, R_OK) != 0) {
        test_fail(__FILE__, __LINE__, "%s not found (run the tests from the repository root)",
                  SCRIPT);
        return 0;
    }
    return ready;
}

/* Run the script with `args` writing `name` in the scratch folder; returns its path or NULL. */
static const char *dump(const char *name, const char *args)
{
    static char paths[4][512];
    static int slot;
    char *path = paths[slot++ % 4], out[4096];
    snprintf(path, 512, "%s/%s", scratch_dir(), name);
    int rc = run_cmd(out, sizeof out, "%s %s %s -o %s", PYTHON, SCRIPT, args, path);
    if (rc != 0) {
        test_fail(__FILE__, __LINE__, "dump_logits.py %s exited %d: %s", args, rc, out);
        return NULL;
    }
    return path;
}

/* The seed-0 tiny model's file, written once for the tests that read it. */
static const char *tiny_file(void)
{
    static const char *path;
    if (!path)
        path = dump("tiny.h5", TINY_ARGS);
    return path;
}

/* Is /logits stored as little-endian IEEE float32? */
static int logits_are_f32(const char *path)
{
    h5_quiet();
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0)
        return 0;
    hid_t d = H5Dopen2(f, "logits", H5P_DEFAULT), t = d < 0 ? -1 : H5Dget_type(d);
    int ok = t >= 0 && H5Tequal(t, H5T_IEEE_F32LE) > 0;
    if (t >= 0)
        H5Tclose(t);
    if (d >= 0)
        H5Dclose(d);
    H5Fclose(f);
    return ok;
}

TEST(dump_logits_tiny_random_file_has_the_layout_apply_reads)
{
    if (!python_ready())
        return;
    const char *path = tiny_file();
    REQUIRE(path, "no file");
    CHECK(logits_are_f32(path), "/logits is not stored as float32");
    struct tkp_batch b;
    struct tkp_error err;
    REQUIRE(tkp_logits_read(path, 0, 1.0f, &b, &err) == 0, "%s", err.msg);
    CHECK(b.batch == 6 && b.vocab == 1000, "/logits is [%lld, %lld], want [6, 1000]",
          (long long)b.batch, (long long)b.vocab);
    float lo = INFINITY, hi = -INFINITY;
    int finite = 1;
    for (int64_t i = 0; i < b.batch * b.vocab; i++) {
        finite &= isfinite(b.logits[i]) != 0;
        lo = fminf(lo, b.logits[i]);
        hi = fmaxf(hi, b.logits[i]);
    }
    CHECK(finite, "/logits has a non-finite value");
    CHECK(hi - lo > 1.0f, "/logits nearly constant: min %g max %g", (double)lo, (double)hi);
    for (int64_t r = 1; r < b.batch; r++)
        CHECK(memcmp(b.logits, b.logits + r * b.vocab, sizeof(float) * (size_t)b.vocab) != 0,
              "row %lld equals row 0", (long long)r);
    for (int64_t r = 0; r < b.batch; r++)
        CHECK(b.k[r] == 20 && b.p[r] == 0.9f, "row %lld: /k %d /p %g, want 20 and 0.9",
              (long long)r, b.k[r], (double)b.p[r]);
    tkp_batch_free(&b);

    static const char *const attrs[] = { "source_model", "text_sha256", "positions",
                                         "model_dtype", "torch_version", "created_utc", NULL };
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    REQUIRE(f >= 0, "cannot open %s", path);
    char v[256];
    for (int i = 0; attrs[i]; i++)
        CHECK(h5_get_attr_str(f, attrs[i], v, sizeof v) == 0 && v[0], "attribute %s missing",
              attrs[i]);
    CHECK(h5_get_attr_str(f, "text_sha256", v, sizeof v) == 0 && strlen(v) == 64,
          "text_sha256 is not 64 hex digits: '%s'", v);
    CHECK(h5_get_attr_str(f, "positions", v, sizeof v) == 0 && strcmp(v, "6") == 0,
          "positions attribute '%s', want 6", v);
    CHECK(h5_get_attr_str(f, "source_model", v, sizeof v) == 0 && strstr(v, "tiny-random"),
          "source_model '%s'", v);
    H5Fclose(f);
}

TEST(dump_logits_file_goes_through_topkp_apply)
{
    if (!python_ready())
        return;
    const char *path = tiny_file();
    REQUIRE(path, "no file");
    char res[512], out[4096];
    snprintf(res, sizeof res, "%s/tiny-apply.h5", scratch_dir());
    REQUIRE(run_cmd(out, sizeof out, "%s apply naive_sort --in %s --out %s --backend cpu",
                    topkp_bin(), path, res) == 0, "apply failed: %s", out);
    /* every row keeps at least one and at most k = 20 tokens (the file's /k) */
    h5_quiet();
    hid_t f = H5Fopen(res, H5F_ACC_RDONLY, H5P_DEFAULT);
    REQUIRE(f >= 0, "apply wrote no readable %s", res);
    uint8_t kept[6 * 1000];
    hid_t d = H5Dopen2(f, "kept", H5P_DEFAULT);
    CHECK(d >= 0 && H5Dread(d, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, kept) >= 0,
          "cannot read /kept [6, 1000]");
    for (int r = 0; d >= 0 && r < 6; r++) {
        int n = 0;
        for (int i = 0; i < 1000; i++)
            n += kept[r * 1000 + i];
        CHECK(n >= 1 && n <= 20, "row %d keeps %d tokens, want 1..20", r, n);
    }
    if (d >= 0)
        H5Dclose(d);
    H5Fclose(f);
}

TEST(dump_logits_same_seed_gives_identical_logits)
{
    if (!python_ready())
        return;
    const char *a = tiny_file(), *b = dump("tiny-again.h5", TINY_ARGS);
    REQUIRE(a && b, "no file");
    struct tkp_batch x, y;
    struct tkp_error err;
    REQUIRE(tkp_logits_read(a, 0, 1.0f, &x, &err) == 0, "%s", err.msg);
    if (tkp_logits_read(b, 0, 1.0f, &y, &err) != 0) {
        tkp_batch_free(&x);
        REQUIRE(0, "%s", err.msg);
    }
    CHECK(x.batch == y.batch && x.vocab == y.vocab &&
              memcmp(x.logits, y.logits, sizeof(float) * (size_t)(x.batch * x.vocab)) == 0,
          "two runs with seed 0 wrote different logits");
    tkp_batch_free(&x);
    tkp_batch_free(&y);
}

TEST(dump_logits_bf16_model_still_writes_float32_logits)
{
    if (!python_ready())
        return;
    const char *path = dump("tiny-bf16.h5", "--tiny-random 1000 --prompt " PROMPT
                                            " --positions all --dtype bfloat16 --gzip 4 -q");
    REQUIRE(path, "no file");
    CHECK(logits_are_f32(path), "/logits is not stored as float32");
    struct tkp_batch b;
    struct tkp_error err;
    REQUIRE(tkp_logits_read(path, 0, 1.0f, &b, &err) == 0, "%s", err.msg);
    /* --positions all: one row per byte token of the prompt */
    CHECK(b.batch == (int64_t)strlen(PROMPT) - 2 && b.vocab == 1000, "/logits is [%lld, %lld]",
          (long long)b.batch, (long long)b.vocab);
    int exact = 1, finite = 1;
    for (int64_t i = 0; i < b.batch * b.vocab; i++) {
        uint32_t u;
        memcpy(&u, &b.logits[i], sizeof u);
        exact &= (u & 0xFFFFu) == 0; /* a bf16 value upcast, not rounded again */
        finite &= isfinite(b.logits[i]) != 0;
    }
    CHECK(exact, "logits of a bf16 model at temperature 1 should be bf16 values in float32");
    CHECK(finite, "/logits has a non-finite value");
    tkp_batch_free(&b);
}

TEST(dump_logits_missing_text_file_is_an_error_naming_it)
{
    if (!python_ready())
        return;
    char missing[512], out[4096];
    snprintf(missing, sizeof missing, "%s/no-such-text.txt", scratch_dir());
    int rc = run_cmd(out, sizeof out, "%s %s --tiny-random 1000 --text %s -o %s/never.h5",
                     PYTHON, SCRIPT, missing, scratch_dir());
    CHECK(rc != 0, "exit status 0 for a missing --text file");
    CHECK(strstr(out, missing) != NULL, "the error does not name %s: %s", missing, out);
    char never[512];
    snprintf(never, sizeof never, "%s/never.h5", scratch_dir());
    CHECK(access(never, F_OK) != 0, "an output file was written anyway");
}

/* SIGTERM once the file is written to its temporary, before the rename (TKP_PAUSE_AT=
 * output-written, docs/ROBUSTNESS.md, "Signals"): the script ends by the signal, and neither the
 * output nor its temporary is left; an earlier output given again stays as it was. */
TEST(dump_logits_sigterm_leaves_no_half_written_output)
{
    if (!python_ready())
        return;
    char path[512], out[4096];
    snprintf(path, sizeof path, "%s/tiny-signalled.h5", scratch_dir());
    for (int earlier = 0; earlier < 2; earlier++) {
        FILE *f = earlier ? fopen(path, "w") : NULL;
        if (f) {
            fputs("earlier", f);
            fclose(f);
        } else {
            unlink(path);
        }
        int rc = run_cmd(out, sizeof out, "{ TKP_PAUSE_AT=output-written %s %s %s -o %s; }",
                         PYTHON, SCRIPT, TINY_ARGS, path);
        CHECK(rc == 128 + 15, "signalled: want exit %d, got %d: %s", 128 + 15, rc, out);
        char *now = slurp(path, NULL);
        CHECK(earlier ? now && strcmp(now, "earlier") == 0 : !now,
              "signalled: %s is %s", path, earlier ? "not the earlier file" : "there");
        free(now);
        CHECK(run_cmd(out, sizeof out, "ls %s.tmp-* 2>/dev/null | wc -l", path) == 0 &&
                  atoi(out) == 0, "signalled: a temporary is left: %s", out);
    }
}
