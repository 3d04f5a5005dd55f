/* test_gate_files.c — the gate on what files carry (docs/ROBUSTNESS.md): the logits file's
 * per-row arrays (/k, /p, /min_p, /seed, /offset) stored in every HDF5 numeric type, int8 to
 * uint64 and float16 to float64, holding edge values (each value's verdict from its domain,
 * computed without the gate); and every output of a results file whose names hold hostile
 * bytes (an older file's, escaped on reading): export as TSV, CSV and JSON, compare and info
 * keep one row per line, the same columns, and no raw control byte. */
#include <float.h>
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../algos/common/gate.h"
#include "logits_file.h"
#include "cli_util.h"
#include "hostile_gen.h"
#include "test.h"

/* An IEEE half (sign 15, exponent 10..14 bias 15, mantissa 0..9); the caller closes it. */
static hid_t float16_type(void)
{
    hid_t h = H5Tcopy(H5T_IEEE_F32LE);
    H5Tset_fields(h, 15, 10, 5, 0, 10);
    H5Tset_precision(h, 16);
    H5Tset_size(h, 2);
    H5Tset_ebias(h, 15);
    return h;
}

static const struct {
    const char *name;
    hid_t (*type)(void); /* NULL: `native` */
    int is_float;
} types[] = {
    { "int8", NULL, 0 },   { "uint8", NULL, 0 },  { "int16", NULL, 0 },   { "uint16", NULL, 0 },
    { "int32", NULL, 0 },  { "uint32", NULL, 0 }, { "int64", NULL, 0 },   { "uint64", NULL, 0 },
    { "float16", float16_type, 1 }, { "float32", NULL, 1 }, { "float64", NULL, 1 },
};
#define TYPES (sizeof types / sizeof types[0])

static hid_t native_of(int t)
{
    const hid_t natives[] = { H5T_NATIVE_INT8,  H5T_NATIVE_UINT8,  H5T_NATIVE_INT16,
                              H5T_NATIVE_UINT16, H5T_NATIVE_INT32, H5T_NATIVE_UINT32,
                              H5T_NATIVE_INT64, H5T_NATIVE_UINT64, -1, H5T_NATIVE_FLOAT,
                              H5T_NATIVE_DOUBLE };
    return types[t].type ? types[t].type() : H5Tcopy(natives[t]);
}

/* The row arrays, their domains as the reference sees them. */
static const struct {
    const char *name;
    int integer;
    long double lo, hi;
} arrays[] = {
    { "k", 1, -2147483648.0L, 2147483647.0L },
    { "p", 0, -FLT_MAX, FLT_MAX },
    { "min_p", 0, -FLT_MAX, FLT_MAX },
    { "seed", 1, 0, 18446744073709551615.0L },
    { "offset", 1, 0, 18446744073709551615.0L },
};

static const double edge_values[] = { NAN, INFINITY, -INFINITY, 2.7, -3.5, 1e20, -1e20, -1, 0,
                                      -0.0, 1, 5, 100, 127, 255, 65535, 2147483648.0,
                                      9223372036854775808.0, 18446744073709551616.0, 0.5, 1e-30,
                                      3.5e38, 4294967296.0 };

/* Write a logits file [2, 8] with /name of type t holding { 1, v } as HDF5 converts v (the
 * stored value back as a double in *stored); 0 when v does not fit the type (no file). */
static int write_case(const char *path, const char *name, int t, double v, long double *stored)
{
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    float logits[16];
    for (int i = 0; i < 16; i++)
        logits[i] = (float)i;
    hsize_t d2[2] = { 2, 8 }, d1[1] = { 2 };
    hid_t s2 = H5Screate_simple(2, d2, NULL), s1 = H5Screate_simple(1, d1, NULL);
    hid_t dl = H5Dcreate2(f, "logits", H5T_IEEE_F32LE, s2, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(dl, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, logits);
    hid_t ft = native_of(t);
    const double vals[2] = { 1, v };
    int fits = 1;
    if (!types[t].is_float) { /* an integer type: only values it holds exactly */
        const size_t bits = 8 * H5Tget_size(ft);
        const int sign = H5Tget_sign(ft) == H5T_SGN_2;
        const long double lo = sign ? -ldexpl(1, (int)bits - 1) : 0,
                          hi = ldexpl(1, (int)bits - (sign ? 1 : 0)) - 1;
        fits = isfinite(v) && v == floor(v) && v >= lo && v <= hi;
    }
    if (fits) {
        hid_t dk = H5Dcreate2(f, name, ft, s1, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        H5Dwrite(dk, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, vals);
        double back[2] = { 0, 0 };
        H5Dread(dk, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, back);
        *stored = back[1];
        if (!types[t].is_float && v >= 9007199254740992.0) /* past 2^53: the exact integer */
            *stored = v;
        H5Dclose(dk);
    }
    H5Tclose(ft);
    H5Dclose(dl);
    H5Sclose(s1);
    H5Sclose(s2);
    H5Fclose(f);
    return fits;
}

TEST(gate_logits_row_arrays_of_every_hdf5_type)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/rows.h5", scratch_dir());
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    for (size_t a = 0; a < sizeof arrays / sizeof arrays[0]; a++)
        for (size_t t = 0; t < TYPES; t++)
            for (size_t e = 0; e < sizeof edge_values / sizeof edge_values[0]; e++) {
                long double stored = 0;
                if (!write_case(path, arrays[a].name, (int)t, edge_values[e], &stored))
                    continue;
                const enum number_verdict want =
                    value_expected(stored, arrays[a].integer, arrays[a].lo, arrays[a].hi);
                struct tkp_batch b;
                struct tkp_error err = { "" };
                const int rc = tkp_logits_read(path, 0, 1, &b, &err);
                if (rc == 0)
                    tkp_batch_free(&b);
                char where[64];
                snprintf(where, sizeof where, "/%s[1]", arrays[a].name);
                CHECK(want == NUM_OK ? rc == 0
                                     : rc != 0 && strstr(err.msg, number_words(want)) &&
                                           strstr(err.msg, where) && strstr(err.msg, "rows.h5"),
                      "/%s as %s holding %g (stored %Lg): want '%s', got %s", arrays[a].name,
                      types[t].name, edge_values[e], stored, want ? number_words(want) : "a read",
                      rc ? err.msg : "a read");
            }
}

/* Every line of `text` has as many tabs as its first; no raw control byte but tab and newline. */
static int same_columns(const char *text, int *lines)
{
    int want = -1, ok = printable_text(text, strlen(text), 1);
    *lines = 0;
    for (const char *line = text; *line && ok; line = strchr(line, '\n') + 1) {
        const char *end = strchr(line, '\n');
        if (!end)
            return 0;
        int tabs = 0;
        for (const char *c = line; c < end; c++)
            tabs += *c == '\t';
        ok = want < 0 || tabs == want;
        want = want < 0 ? tabs : want;
        ++*lines;
    }
    return ok;
}

/* A results file whose sweep names and a root attribute hold hostile bytes, as an older
 * version, or a hand, could have written them: renamed in place after a run. */
static int hostile_results(char *path, size_t n, const char *const *names, int count)
{
    char cfg[2048] = "";
    for (int i = 0; i < count; i++)
        snprintf(cfg + strlen(cfg), sizeof cfg - strlen(cfg), "sweep \"s%d\" { algos = \"naive_sort\","
                 " vocab = 20, batch = 1, timing = { max_reps = 3, min_reps = 1 } }\n", i);
    strncat(cfg, "ablation \"ab\" { base = { vocab = 20, batch = 1, timing = { max_reps = 2, "
            "min_reps = 1 } }, variants = { [\"q\\\"u,o te {%^~&#$}\"] = \"naive_sort\" } }\n",
            sizeof cfg - strlen(cfg) - 1);
    if (run_into(write_scratch("hostile.lua", cfg), "hostile", "", path, n))
        return -1;
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    int rc = f < 0;
    for (int i = 0; !rc && i < count; i++) {
        char from[32], to[256];
        snprintf(from, sizeof from, "/sweeps/s%d", i);
        snprintf(to, sizeof to, "/sweeps/%s", names[i]);
        rc = H5Lmove(f, from, f, to, H5P_DEFAULT, H5P_DEFAULT) < 0;
    }
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, 32);
    hid_t s = H5Screate(H5S_SCALAR), at = H5Acreate2(f, "hostile", t, s, H5P_DEFAULT, H5P_DEFAULT);
    char value[32] = "tab\there\nline\x01\\input{x}\xff"; /* the whole 32 bytes written */
    rc |= at < 0 || H5Awrite(at, t, value) < 0;
    H5Aclose(at), H5Sclose(s), H5Tclose(t);
    return rc | (H5Fclose(f) < 0) ? -1 : 0;
}

TEST(gate_outputs_escape_hostile_names_of_older_files)
{
    static const char *const names[] = { "new\nline", "tab\there", "quote\"and,comma",
                                         "back\\slash \\input{x} \\write18{id}",
                                         "ctl\x01\x1b\x7f", "apo'strophe", "bad\xff\xc3utf8", "bom\xef\xbb\xbfsep\xe2\x80\xa8" };
    const int count = sizeof names / sizeof names[0];
    char path[1024], out[1 << 16];
    REQUIRE(hostile_results(path, sizeof path, names, count) == 0, "cannot write the results");
    int lines = 0;
    CHECK(run_cmd(out, sizeof out, "%s export %s", topkp_bin(), path) == 0 &&
              same_columns(out, &lines) && lines == count + 2,
          "export (TSV): %d lines, want %d of the same columns: %s", lines, count + 2, out);
    const int compared = run_cmd(out, sizeof out, "%s compare %s %s", topkp_bin(), path, path);
    char *summary = strstr(out, "0 faster");
    if (summary)
        *summary = 0; /* the summary line after the rows */
    CHECK(compared == 0 && summary && same_columns(out, &lines) && lines == count + 2,
          "compare: rows of different columns: %s", out);
    CHECK(run_cmd(out, sizeof out, "%s info %s", topkp_bin(), path) == 0 &&
              printable_text(out, strlen(out), 1) && strstr(out, "hostile\ttab\\x09here\\x0Aline"),
          "info: the attribute is not escaped: %s", out);
    CHECK(run_cmd(out, sizeof out, "%s export %s --format csv | python3 -c 'import csv, sys; "
                  "r = list(csv.reader(sys.stdin)); assert len(r) == %d and len(set(map(len, r))) == 1, r'",
                  topkp_bin(), path, count + 2) == 0, "export (CSV) does not parse: %s", out);
    CHECK(run_cmd(out, sizeof out, "%s export %s --format json | python3 -c 'import json, sys; "
                  "r = json.load(sys.stdin); assert len(r) == %d and \"new\\nline\" in {x[\"sweep\"] for x in r}, r'",
                  topkp_bin(), path, count + 1) == 0, "export (JSON) does not parse: %s", out);
    /* the figures: every hostile sweep name and the ablation's label reach gnuplot's titles and
     * keys as text; the script must draw them all with no gnuplot error (a string that broke
     * out of its quotes is one: "line N: ..."; one vocabulary gives only 'empty x range'
     * warnings, which are not about the names) */
    char dir[1200];
    snprintf(dir, sizeof dir, "%s/hostile-figs", scratch_dir());
    const int drawn = run_cmd(out, sizeof out, "TOPKP=%s bash scripts/figures.sh %s %s 2>&1 "
                              "&& ls %s", topkp_bin(), path, dir, dir);
    CHECK(drawn == 0 && strstr(out, ".png") && !strcasestr(out, "error") &&
              !strstr(out, ", line ") && !strcasestr(out, "invalid"),
          "figures of hostile names: rc %d: %s", drawn, out);
}

/* What is left of a LaTeX escaper's line once its escapes are taken out: a special character
 * (\ { } _ % & # $ ^ ~) left over is markup that a label made. 1 when none is left. */
static int latex_text_only(const char *line)
{
    static const char *const escapes[] = { "\\textbackslash{}", "\\textasciicircum{}",
                                           "\\textasciitilde{}", "\\allowbreak{}", "$\\to$",
                                           "$<$", "$>$", "\\_", "\\%", "\\&", "\\#", "\\$",
                                           "\\{", "\\}" };
    for (const char *c = line; *c;) {
        size_t skip = 0;
        for (size_t e = 0; e < sizeof escapes / sizeof escapes[0] && !skip; e++)
            if (strncmp(c, escapes[e], strlen(escapes[e])) == 0)
                skip = strlen(escapes[e]);
        if (!skip && strchr("\\{}_%&#$^~", *c))
            return 0;
        c += skip ? skip : 1;
    }
    return 1;
}

/* The report's two LaTeX escapers (paper/build.sh's TEX_FN, scripts/claims_tex.py's tex) on
 * hostile names as the exported TSV carries them: every output line is text, no markup. */
TEST(gate_latex_escapers_leave_no_markup)
{
    uint64_t seed = hostile_seed() ^ 7, st = seed;
    char in[1024], out[1 << 16], name[256], shown[512];
    snprintf(in, sizeof in, "%s/labels.txt", scratch_dir());
    FILE *f = fopen(in, "w");
    REQUIRE(f, "cannot write %s", in);
    for (int i = 0; i < 200; i++) {
        const size_t len = hostile_name(&st, name, sizeof name);
        fprintf(f, "%s\n", tkp_gate_escape(name, len, shown, sizeof shown));
    }
    fclose(f);
    const char *const runs[] = {
        "bash -c 'eval \"$(sed -n \"/^TEX_FN=/,/return s }.$/p\" paper/build.sh)\"; "
        "awk \"$TEX_FN\"\" { print tex(\\$0) }\" %s'",
        "cd scripts && python3 -c 'import sys, claims_tex; "
        "[print(claims_tex.tex(l.rstrip(\"\\n\"))) for l in open(sys.argv[1])]' %s",
    };
    for (int r = 0; r < 2; r++) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd, runs[r], in);
        REQUIRE(run_cmd(out, sizeof out, "%s", cmd) == 0, "%s: %s", cmd, out);
        int lines = 0;
        for (char *line = out, *end; (end = strchr(line, '\n')); line = end + 1, lines++) {
            *end = 0;
            CHECK(latex_text_only(line), "seed %llu: %s leaves markup in: %s",
                  (unsigned long long)seed, r ? "claims_tex.tex" : "build.sh TEX_FN", line);
        }
        CHECK(lines == 200, "%s: %d lines for 200 labels", r ? "claims_tex" : "TEX_FN", lines);
    }
}
