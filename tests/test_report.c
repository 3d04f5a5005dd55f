/* test_report.c — the report (paper/build.sh with GEN_ONLY=1: its LaTeX fragments and
 * paper/out/claims.tsv, no TeX) on tiny CPU results files: every claim declared in
 * paper/claims.tsv comes out (in claims.tsv and in its section's fragment), a section draws only
 * its own sweep, Table 1 has rows when its sweep exists, the paper's kernel (vllm.triton) is the
 * first column of the claims about Qrita and our qrita the second, and the report refuses a
 * section whose cells come from two commits and a table that comes out with no rows; the
 * claims' ratio interval is `topkp compare`'s on the same samples. Needs
 * bash, gnuplot and /usr/bin/python3 with h5py and numpy; not TeX, not a GPU. */
#include <fnmatch.h>
#include <math.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compare.h"
#include "h5util.h"
#include "results.h"
#include "cli_util.h"
#include "test.h"

/* A tiny config run into scratch/<name>.h5; its path (static per slot) or NULL. */
static const char *tiny(const char *name, const char *config)
{
    static char paths[6][512];
    static int used;
    char cfg[80], out[8192];
    snprintf(cfg, sizeof cfg, "%s.lua", name);
    char *path = paths[used++ % 6];
    snprintf(path, 512, "%s/%s.h5", scratch_dir(), name);
    unlink(path);
    if (run_cmd(out, sizeof out, "%s run %s -o %s --backend cpu", topkp_bin(),
                write_scratch(cfg, config), path)) {
        fprintf(stderr, "  topkp run %s: %s\n", name, out);
        return NULL;
    }
    return path;
}

static const char *table1_config =
    "sweep \"table1\" { algos = \"qrita\", dataset = \"gaussian\", vocab = 3000, batch = { 1, 2 },\n"
    "  k = { 0, 50 }, p = { 0.9, 1.0 }, where = function(c) return c.mode ~= \"none\" end,\n"
    "  timing = { warmup = 0, min_reps = 1, max_reps = 1 } }\n";

static const char *table4_config =
    "local function q(t, s, d, a) return { \"qrita\", truncation = t, search = s, dedup = d, autotune = a } end\n"
    "ablation \"table4\" {\n"
    "  base = { dataset = \"gaussian\", vocab = 3000, batch = 2, k = 50, p = 0.9,\n"
    "           timing = { warmup = 0, min_reps = 2, max_reps = 2 } },\n"
    "  variants = { A = q(\"auto\", \"quaternary\", true, true), B = q(\"auto\", \"quaternary\", true, false),\n"
    "    C = q(\"auto\", \"quaternary\", false, false), D = q(\"force_fallback\", \"quaternary\", false, false),\n"
    "    E = q(\"off\", \"quaternary\", false, false), F = q(\"auto\", \"binary\", false, false),\n"
    "    G = q(\"force_fallback\", \"binary\", false, false), I = q(\"auto\", \"sort\", false, false),\n"
    "    J = q(\"off\", \"sort\", false, false) } }\n";

/* Figure 2's scaling cells at one of the paper's vocabularies: qrita at B = 1 and 128. */
static const char *fig2_config =
    "sweep \"fig2\" { algos = \"qrita\", dataset = \"gaussian\", vocab = 128256, batch = { 1, 128 },\n"
    "  k = 50, p = 1.0, timing = { warmup = 0, min_reps = 2, max_reps = 2 } }\n";

/* A fake vllm.triton row beside each ok qrita row, twice qrita's time at B = 128 and the same at
 * B = 1: its t(1)/t(128) is half of qrita's, so the claims tell the two columns apart. */
static int add_fake_triton(struct tkp_results *r, const char *header, const char *line,
                           struct tkp_error *err)
{
    char v[512];
    tsv_field(line, tsv_column(header, "algo"), v, sizeof v);
    if (strcmp(v, "qrita") != 0)
        return 0;
    struct tkp_cell_row row;
    memset(&row, 0, sizeof row);
    snprintf(row.algo, sizeof row.algo, "vllm.triton");
    snprintf(row.status, sizeof row.status, "ok");
    tsv_field(line, tsv_column(header, "dataset"), row.dataset, sizeof row.dataset);
    tsv_field(line, tsv_column(header, "mode"), row.mode, sizeof row.mode);
    tsv_field(line, tsv_column(header, "backend"), row.backend, sizeof row.backend);
#define NUM(name) (tsv_field(line, tsv_column(header, name), v, sizeof v), atof(v))
    row.batch = (int64_t)NUM("batch");
    row.vocab = (int64_t)NUM("vocab");
    row.k = (int64_t)NUM("k");
    row.p = NUM("p");
    row.rows_checked = row.rows_exact = (int64_t)NUM("rows_checked");
    const double t = NUM("median_us") * (row.batch == 128 ? 2.0 : 1.0);
#undef NUM
    row.median_us = row.q1_us = row.q3_us = row.min_us = row.max_us = row.mean_us = t;
    snprintf(row.key, sizeof row.key, "vllm.triton||%s|%lld|%lld|%lld|%.9g|cpu", row.dataset,
             (long long)row.vocab, (long long)row.batch, (long long)row.k, row.p);
    return tkp_results_append(r, "fig2", &row, &row.median_us, 1, err);
}

/* The three files of the report the tests read (Table 1, Table 4, Figure 2 with the fake
 * paper's kernel), built once; NULL when one could not be made. */
static const char *const *tiny_campaign(void)
{
    static const char *files[3];
    static char f2[512];
    static int state; /* 0 not made, 1 ok, 2 failed */
    if (!state) {
        files[0] = tiny("rep-t1", table1_config);
        files[1] = tiny("rep-t4", table4_config);
        const char *q = tiny("rep-f2q", fig2_config);
        snprintf(f2, sizeof f2, "%s/rep-f2.h5", scratch_dir());
        files[2] = q && results_with_added_rows(q, f2, "", add_fake_triton) == 0 ? f2 : NULL;
        state = files[0] && files[1] && files[2] ? 1 : 2;
    }
    return state == 1 ? files : NULL;
}

/* build.sh GEN_ONLY on `files` (space-separated); its exit status, its output in out. */
static int build(char *out, size_t n, const char *files)
{
    return run_cmd(out, n, "GEN_ONLY=1 TOPKP=%s bash paper/build.sh %s", topkp_bin(), files);
}

static int built; /* has the tiny campaign's report been built (paper/out holds it)? */

static int build_tiny_campaign(void)
{
    const char *const *f = tiny_campaign();
    char files[2048], out[1 << 14];
    if (!f)
        return -1;
    snprintf(files, sizeof files, "%s %s %s", f[0], f[1], f[2]);
    if (!built && build(out, sizeof out, files) != 0) {
        fprintf(stderr, "  build.sh: %s\n", out);
        return -1;
    }
    built = 1;
    return 0;
}

/* The line of claims.tsv whose id is `id` into line (the empty string when none). */
static void claim_line(const char *tsv, const char *id, char *line, size_t n)
{
    char want[256];
    snprintf(want, sizeof want, "\n%s\t", id);
    const char *at = strstr(tsv, want);
    line[0] = 0;
    if (at)
        snprintf(line, n, "%.*s", (int)strcspn(at + 1, "\n"), at + 1);
}

static void claim_field(const char *tsv, const char *id, const char *column, char *out, size_t n)
{
    char line[8192];
    claim_line(tsv, id, line, sizeof line);
    tsv_field(line, tsv_column(tsv, column), out, n);
}

/* text without the fragments' \\allowbreak{} marks (in place); text itself. */
static char *without_breaks(char *text)
{
    static const char mark[] = "\\allowbreak{}";
    char *to = text;
    for (const char *from = text; from && *from;)
        if (strncmp(from, mark, sizeof mark - 1) == 0)
            from += sizeof mark - 1;
        else
            *to++ = *from++;
    if (to)
        *to = 0;
    return text;
}

/* How many claims a declared row stands for: 1, the product of its `name=a,b,...` lists, or
 * the data rows of paper/<per>.tsv. */
static int expansion(const char *per)
{
    if (!*per)
        return 1;
    if (!strchr(per, '=')) {
        char path[256], line[4096];
        snprintf(path, sizeof path, "paper/%s.tsv", per);
        FILE *f = fopen(path, "r");
        int rows = -1; /* the header */
        while (f && fgets(line, sizeof line, f))
            rows += line[0] != '#' && line[0] != '\n';
        if (f)
            fclose(f);
        return rows;
    }
    int product = 1;
    for (const char *p = per; *p; p += strcspn(p, " "), p += *p == ' ') {
        int values = 1;
        for (const char *c = p; *c && *c != ' '; c++)
            values += *c == ',';
        product *= values;
    }
    return product;
}

/* Every row declared in paper/claims.tsv comes out of the claims, as many times as it stands
 * for, each with a verdict, and in its section's fragment. */
TEST(report_writes_every_declared_claim)
{
    REQUIRE(build_tiny_campaign() == 0, "the tiny campaign's report could not be built");
    char *out = slurp("paper/out/claims.tsv", NULL);
    FILE *decl = fopen("paper/claims.tsv", "r");
    REQUIRE(out && decl, "no paper/out/claims.tsv or paper/claims.tsv");
    char header[4096] = "", line[8192], id[256], per[1024], pattern[256], got[256], section[64];
    int declared = 0, total = 0;
    while (fgets(line, sizeof line, decl)) {
        if (line[0] == '#')
            continue;
        if (!header[0]) {
            snprintf(header, sizeof header, "%s", line);
            continue;
        }
        tsv_field(line, tsv_column(header, "id"), id, sizeof id);
        tsv_field(line, tsv_column(header, "per"), per, sizeof per);
        size_t j = 0; /* the id with each {name} as '*' */
        for (const char *c = id; *c && j + 1 < sizeof pattern; c++) {
            pattern[j++] = *c == '{' ? '*' : *c;
            if (*c == '{')
                c += strcspn(c, "}");
        }
        pattern[j] = 0;
        int want = expansion(per), n = 0;
        for (const char *l = strchr(out, '\n'); l && l[1]; l = strchr(l + 1, '\n')) {
            snprintf(got, sizeof got, "%.*s", (int)strcspn(l + 1, "\t\n"), l + 1);
            if (fnmatch(pattern, got, 0) == 0) {
                n++;
                char direction[64], path[128];
                claim_field(out, got, "direction", direction, sizeof direction);
                CHECK(direction[0], "claim %s has no direction verdict", got);
                claim_field(out, got, "section", section, sizeof section);
                snprintf(path, sizeof path, "paper/out/gen/claims-%s.tex", section);
                char *tex = without_breaks(slurp(path, NULL)), texid[512];
                size_t k = 0; /* the id as the fragment writes it (_ escaped) */
                for (const char *c = got; *c && k + 2 < sizeof texid; c++) {
                    if (*c == '_')
                        texid[k++] = '\\';
                    texid[k++] = *c;
                }
                texid[k] = 0;
                CHECK(tex && strstr(tex, texid), "claim %s is not in %s", got, path);
                free(tex);
            }
        }
        CHECK(n == want, "declared claim %s (per '%s'): %d rows in claims.tsv, want %d", id, per,
              n, want);
        declared++;
        total += want;
    }
    fclose(decl);
    int rows = 0;
    for (const char *l = strchr(out, '\n'); l && l[1]; l = strchr(l + 1, '\n'))
        rows++;
    CHECK(declared > 40 && rows == total, "claims.tsv has %d rows for %d declared (%d expected)",
          rows, declared, total);
    /* Table 4 is judged on this run: a ratio and its verdicts, not "no data" */
    char v[256];
    claim_field(out, "t4.truncation", "ours", v, sizeof v);
    CHECK(atof(v) > 0, "t4.truncation has no value: '%s'", v);
    claim_field(out, "t4.truncation", "direction", v, sizeof v);
    CHECK(strcmp(v, "no data") != 0, "t4.truncation: %s", v);
    free(out);
}

/* Table 1's fragment has a row per dataset of the table1 sweep (it read a TSV without a
 * sweep column and came out empty once); Figure 2's and Figure 4's sections say their sweep is
 * missing rather than draw another sweep's cells; Table 1 says its agreement is calibrated. */
TEST(report_table1_has_rows_when_its_sweep_exists)
{
    REQUIRE(build_tiny_campaign() == 0, "the tiny campaign's report could not be built");
    char *t1 = slurp("paper/out/gen/table1.tex", NULL);
    const char *row = t1 ? strstr(t1, "gaussian/3000 &") : NULL;
    CHECK(row && strstr(row, "\\\\") && strstr(t1, "Calibrated"),
          "Table 1 has no row for the table1 sweep's gaussian/3000: %s", t1 ? t1 : "(none)");
    free(t1);
    char *mem = slurp("paper/out/gen/memory.tex", NULL);
    CHECK(mem && strstr(mem, "Not in these results") && !strstr(mem, "includegraphics"),
          "memory.tex drew cells of another sweep: %s", mem ? mem : "(none)");
    free(mem);
}

/* The claims about Qrita are judged on the paper's kernel, vllm.triton, with our qrita as the
 * second column: the fake vllm.triton's t(1)/t(128) is half of qrita's. */
TEST(report_judges_the_papers_kernel_first)
{
    REQUIRE(build_tiny_campaign() == 0, "the tiny campaign's report could not be built");
    char *out = slurp("paper/out/claims.tsv", NULL);
    REQUIRE(out, "no paper/out/claims.tsv");
    char first[64], second[64], missing[512];
    claim_field(out, "f2.scaling.128256.topk", "ours", first, sizeof first);
    claim_field(out, "f2.scaling.128256.topk", "ours2", second, sizeof second);
    claim_field(out, "f2.scaling.128256.topk", "missing", missing, sizeof missing);
    CHECK(atof(first) > 0 && atof(second) > 0 &&
              atof(first) / atof(second) > 0.49 && atof(first) / atof(second) < 0.51,
          "f2.scaling.128256.topk: vllm.triton %s, qrita %s (want half), missing '%s'", first,
          second, missing);
    free(out);
}

/* dst := src with another git_commit (the root's and every run's). */
static int with_commit(const char *src, const char *dst, const char *commit)
{
    char out[4096], name[64];
    if (run_cmd(out, sizeof out, "cp %s %s", src, dst))
        return -1;
    hid_t f = H5Fopen(dst, H5F_ACC_RDWR, H5P_DEFAULT);
    int rc = f < 0 || h5_set_attr_str(f, "git_commit", commit);
    for (int n = 0; !rc; n++) {
        snprintf(name, sizeof name, "/runs/%d", n);
        if (!h5_exists(f, name))
            break;
        hid_t g = H5Gopen2(f, name, H5P_DEFAULT);
        rc = g < 0 || h5_set_attr_str(g, "git_commit", commit);
        H5Gclose(g);
    }
    if (f >= 0)
        H5Fclose(f);
    return rc ? -1 : 0;
}

/* Table 4's cells from two commits: the report refuses, naming both commits and both files. */
TEST(report_refuses_a_section_of_two_commits)
{
    const char *const *f = tiny_campaign();
    REQUIRE(f, "the tiny campaign could not be made");
    char other[512], out[1 << 14];
    snprintf(other, sizeof other, "%s/rep-t4-other.h5", scratch_dir());
    REQUIRE(with_commit(f[1], other, "0123456789ab") == 0, "could not write %s", other);
    built = 0;
    char files[1200];
    snprintf(files, sizeof files, "%s %s", f[1], other);
    int rc = build(out, sizeof out, files);
    CHECK(rc != 0 && strstr(out, "0123456789ab") && strstr(out, "rep-t4.h5") &&
              strstr(out, "rep-t4-other.h5") && strstr(out, "table4"),
          "build.sh must refuse table4 from two commits naming both: rc %d, %s", rc, out);
    const char *first = strstr(out, "commit ");
    CHECK(first && strstr(first + 1, "commit "), "the error names one commit only: %s", out);
    /* a campaign folder whose campaign.tsv names two binaries for Table 4's chunks */
    rc = run_cmd(out, sizeof out, "d=%s/camp && mkdir -p $d && cp %s $d/table4.h5 && "
                 "printf 'file\\tsweep\\tcommit\\tbinary_sha256\\tstatus\\n"
                 "table4.h5\\ttable4\\tc1\\taaa1\\tok\\ntable4.h5\\ttable4_peers\\tc1\\tbbb2\\tok\\n' "
                 "> $d/campaign.tsv && /usr/bin/python3 scripts/claims.py $d/out $d", scratch_dir(), f[1]);
    CHECK(rc != 0 && strstr(out, "aaa1") && strstr(out, "bbb2") && strstr(out, "table4"),
          "claims.py must refuse a campaign.tsv of two binaries in one section: rc %d, %s", rc, out);
}

/* A campaign folder (docs/CAMPAIGN.md): the report lists every chunk of its campaign.tsv with
 * its status, a missing one in bold with its reason, so that a CPU campaign says which parts
 * wait for a GPU. */
TEST(report_lists_the_campaigns_missing_chunks)
{
    const char *const *f = tiny_campaign();
    REQUIRE(f, "the tiny campaign could not be made");
    char out[1 << 14];
    built = 0;
    int rc = run_cmd(out, sizeof out, "d=%s/camp-missing && rm -rf $d && mkdir -p $d && "
                     "cp %s $d/table4.h5 && printf 'file\\tsweep\\tcommit\\tbinary_sha256\\tstatus\\tchunk\\n"
                     "table4.h5\\ttable4\\tc1\\taaa1\\tok\\ttable4\\n"
                     "gpu_tests.log\\t-\\tc1\\taaa1\\tmissing: GPU only (backend cpu)\\tgpu_tests\\n' "
                     "> $d/campaign.tsv && GEN_ONLY=1 TOPKP=%s bash paper/build.sh $d",
                     scratch_dir(), f[1], topkp_bin());
    REQUIRE(rc == 0, "build.sh on a campaign folder failed (%d): %s", rc, out);
    char *tex = slurp("paper/out/gen/campaign.tex", NULL);
    CHECK(tex && strstr(tex, "\\textbf{missing: GPU only (backend cpu)}") &&
              strstr(tex, "gpu\\_tests") && strstr(tex, "table4.h5"),
          "campaign.tex must list each chunk, the missing one in bold: %s", tex ? tex : "(none)");
    free(tex);
}

/* A Table 1 sweep of top-k-and-top-p cells only: Table 1's table (top-k alone and top-p
 * alone) would have no rows, and the report refuses it naming the fragment. */
TEST(report_refuses_a_table_with_no_rows)
{
    const char *res = tiny("rep-t1-joint",
        "sweep \"table1\" { algos = \"qrita\", dataset = \"gaussian\", vocab = 3000, batch = 2,\n"
        "  k = 50, p = 0.9, timing = { warmup = 0, min_reps = 1, max_reps = 1 } }\n");
    REQUIRE(res, "the table1 file could not be made");
    char out[1 << 14];
    built = 0;
    int rc = build(out, sizeof out, res);
    CHECK(rc != 0 && strstr(out, "gen/table1.tex") && strstr(out, "no rows"),
          "build.sh must refuse an empty Table 1: rc %d, %s", rc, out);
}

static int by_value(const void *x, const void *y)
{
    const double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* The claims' interval of a ratio of two medians is `topkp compare`'s (harness/store/compare.c),
 * written once in scripts/claims.py: the same bounds on the same samples, and none where
 * compare has none (too few samples). */
TEST(report_ratio_interval_is_compares)
{
    static const size_t sizes[] = { 6, 7, 20, 101 };
    unsigned seed = 12345;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        const size_t n = sizes[s];
        double a[128], b[128];
        char list_a[4096] = "", list_b[4096] = "", out[1024];
        size_t la = 0, lb = 0;
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            a[i] = 100.0 + (double)(seed >> 16 & 1023) / 16.0;
            seed = seed * 1103515245u + 12345u;
            b[i] = 50.0 + (double)(seed >> 16 & 1023) / 8.0;
            la += (size_t)snprintf(list_a + la, sizeof list_a - la, "%s%.17g", i ? "," : "", a[i]);
            lb += (size_t)snprintf(list_b + lb, sizeof list_b - lb, "%s%.17g", i ? "," : "", b[i]);
        }
        qsort(a, n, sizeof a[0], by_value);
        qsort(b, n, sizeof b[0], by_value);
        double ratio, lo, hi;
        tkp_compare_samples(a[n / 2], a, n, b[n / 2], b, n, 0.02, &ratio, &lo, &hi);
        REQUIRE(run_cmd(out, sizeof out, "/usr/bin/python3 -c 'import sys; sys.path.insert(0, \"scripts\"); "
                        "import claims; iv = claims.ratio_interval([%s], [%s]); "
                        "print(\"none\" if iv is None else \"%%.17g %%.17g\" %% iv)'", list_b, list_a) == 0,
                "python: %s", out);
        double plo = NAN, phi = NAN;
        if (strncmp(out, "none", 4) != 0)
            sscanf(out, "%lf %lf", &plo, &phi);
        CHECK((isnan(lo) && isnan(plo)) ||
                  (fabs(plo - lo) <= 1e-12 * lo && fabs(phi - hi) <= 1e-12 * hi),
              "n = %zu: compare.c's interval [%.17g, %.17g], claims.py's %s", n, lo, hi, out);
    }
}

/* The verdict rules the report states at its top, on cases at their edges: direction by the
 * whole interval's side of the reference, size by the published value inside the interval
 * widened by the band of the card (multiplicative for ratios, additive for rates). */
TEST(report_verdicts_follow_the_stated_rules)
{
    static const struct {
        const char *dir, *kind;
        double ref, published, lo, hi;
        int other_card;
        const char *direction, *size;
    } cases[] = {
        { "<", "time ratio", 1, 0.30, 0.25, 0.35, 0, "holds", "holds" },
        { "<", "time ratio", 1, 0.30, 0.80, 0.95, 0, "holds", "does not hold" },
        { "<", "time ratio", 1, 0.30, 0.80, 0.95, 1, "holds", "does not hold" },
        { "<", "time ratio", 1, 0.30, 0.36, 0.37, 1, "holds", "holds" },   /* 0.37 / 1.25 */
        { "<", "time ratio", 1, 0.30, 0.36, 0.37, 0, "holds", "does not hold" },
        { "<", "time ratio", 1, 0.30, 0.90, 1.10, 0, "inconclusive", "does not hold" },
        { ">", "time ratio", 1, 1.02, 0.90, 0.99, 0, "does not hold", "holds" },
        { "=", "time ratio", 1, 1.00, 0.70, 0.79, 1, "n/a", "does not hold" },
        { "=", "time ratio", 1, 1.00, 0.70, 0.81, 1, "n/a", "holds" },
        { "=", "rate", 0, 1.00, 0.99, 0.999, 0, "n/a", "does not hold" }, /* band 0 */
        { "=", "rate", 0, 1.00, 0.99, 1.00, 0, "n/a", "holds" },
    };
    /* one interpreter for every case: a line of verdicts per case */
    char script[8192], out[4096];
    size_t used = (size_t)snprintf(script, sizeof script, "import sys; sys.path.insert(0, \"scripts\"); import claims\n");
    const size_t n = sizeof cases / sizeof cases[0];
    for (size_t i = 0; i < n; i++) {
        const int rate = strcmp(cases[i].kind, "rate") == 0;
        used += (size_t)snprintf(script + used, sizeof script - used,
                                 "print(\" / \".join(claims.verdicts({\"dir\": \"%s\", \"kind\": \"%s\", "
                                 "\"ref\": \"%g\", \"_published\": %g, \"band\": \"%s\", \"band_other\": \"%s\"}, "
                                 "%g, %g, %g, %d)))\n", cases[i].dir, cases[i].kind, cases[i].ref,
                                 cases[i].published, rate ? "0" : "0.1", rate ? "0" : "0.25",
                                 (cases[i].lo + cases[i].hi) / 2, cases[i].lo, cases[i].hi,
                                 cases[i].other_card);
    }
    REQUIRE(run_cmd(out, sizeof out, "/usr/bin/python3 %s", write_scratch("verdicts.py", script)) == 0,
            "python: %s", out);
    const char *line = out;
    for (size_t i = 0; i < n; i++) {
        char want[128], got[128];
        snprintf(want, sizeof want, "%s / %s", cases[i].direction, cases[i].size);
        snprintf(got, sizeof got, "%.*s", (int)strcspn(line, "\n"), line);
        CHECK(strcmp(got, want) == 0, "case %zu (%s %g, published %g, [%g, %g], other card %d): "
              "%s, want %s", i, cases[i].dir, cases[i].ref, cases[i].published, cases[i].lo,
              cases[i].hi, cases[i].other_card, got, want);
        line += strcspn(line, "\n");
        line += *line == '\n';
    }
}

/* 1 when `name` is a whole line of the runner's --list output. */
static int listed_test(const char *list, const char *name)
{
    const size_t n = strlen(name);
    for (const char *at = strstr(list, name); at; at = strstr(at + 1, name))
        if ((at == list || at[-1] == '\n') && (at[n] == '\n' || at[n] == 0))
            return 1;
    return 0;
}

/* A claim judged by tests (paper/claims.tsv, a `tests NAME...` column) names tests that this
 * runner has: a renamed test would leave the claim "no data" in every campaign. */
TEST(report_claims_name_tests_that_exist)
{
    char self[512] = "", list[1 << 16], line[8192];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    REQUIRE(len > 0, "cannot read /proc/self/exe");
    self[len] = 0;
    REQUIRE(run_cmd(list, sizeof list, "%s --list", self) == 0, "--list failed: %s", list);
    FILE *f = fopen("paper/claims.tsv", "r");
    REQUIRE(f, "cannot open paper/claims.tsv");
    int named = 0;
    while (fgets(line, sizeof line, f)) {
        for (char *field = strtok(line, "\t\n"); field; field = strtok(NULL, "\t\n")) {
            if (strncmp(field, "tests ", 6) != 0)
                continue;
            for (char *name = strtok(field + 6, " "); name; name = strtok(NULL, " ")) {
                named++;
#ifndef TKP_HAVE_CUDA
                if (strncmp(name, "gpu_", 4) == 0)
                    continue; /* a CPU-only build registers only some of the GPU tests */
#endif
                CHECK(listed_test(list, name), "paper/claims.tsv names test %s, which the runner "
                      "does not have (renamed?)", name);
            }
            break; /* strtok's state moved to the names; one `tests` column a claim */
        }
    }
    fclose(f);
    CHECK(named > 0, "no claim names a test: the column's form changed?");
}
