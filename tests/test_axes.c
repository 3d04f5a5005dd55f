/* test_axes.c — the sweep axes (harness/plan/axes.def, axes.c; docs/CONFIGS.md, "Configs";
 * docs/DESIGN.md, "Adding an axis"): the rows agree with the fields they make, and the text
 * they print is the plan line, progress line and resume key written before the table, byte for
 * byte; every axis set in a config reaches the cell, its results column, the key and
 * (TKP_AXIS_PEER) the peer request, and some code reads it; tkp_cell_defaults; the dtype axis
 * (quiet at f32) parses its names and lists, refuses others naming the file and line, and
 * shows in the lines and the key only off f32. */
#include <ctype.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "../algos/common/half.h"
#include "../datasets/datasets.h"
#include "axes.h"
#include "limits_config.h"
#include "peer_cell.h"
#include "results.h"
#include "cli_util.h"
#include "test.h"

TEST(axes_rows_match_their_fields)
{
    static const char *const reserved[] = { "algos", "verify", "where", "timing", "algo",
                                            "variant", "mode", NULL };
    int n = 0;
    for (const struct tkp_axis *a = tkp_axes; a->name; a++, n++) {
        CHECK(a->name[0] && a->help && a->help[0], "axis %d has no name or help", n);
        for (const struct tkp_axis *b = tkp_axes; b < a; b++)
            CHECK(strcmp(a->name, b->name) != 0, "axis %s is listed twice", a->name);
        for (int r = 0; reserved[r]; r++)
            CHECK(strcmp(a->name, reserved[r]) != 0, "axis %s shadows a sweep key", a->name);
        const int text = a->type == TKP_AXIS_DATASET || a->type == TKP_AXIS_ENUM;
        const size_t want = a->type == TKP_AXIS_I64 || a->type == TKP_AXIS_U64 ? 8
                            : a->type == TKP_AXIS_I32 || a->type == TKP_AXIS_F32 ? 4
                            : a->type == TKP_AXIS_ENUM ? sizeof(int) : a->size;
        CHECK(a->size == want, "axis %s: a %zu-byte field for its type", a->name, a->size);
        CHECK(text ? a->column_size >= (a->type == TKP_AXIS_DATASET ? a->size : 16)
                   : a->column_size == 8, "axis %s: its column has %zu bytes", a->name,
              a->column_size);
        CHECK(a->type != TKP_AXIS_DATASET || (a->def_text && a->size > TKP_MAX_DATASET_CHARS),
              "axis %s: a dataset needs a default and room for TKP_MAX_DATASET_CHARS", a->name);
        CHECK(a->type != TKP_AXIS_ENUM || a->choices, "axis %s: an enum without choices", a->name);
        CHECK(a->type != TKP_AXIS_F32 || a->declared, "axis %s: no declared double", a->name);
        CHECK(text || (a->flags & TKP_AXIS_REQUIRED) || (a->def >= a->min && a->def <= a->max),
              "axis %s: default %g outside [%g, %g]", a->name, a->def, a->min, a->max);
    }
    CHECK(n >= 1 && n <= TKP_MAX_AXES, "%d axes", n);
}

/* The text of a cell's axes is the text that plan, progress and key printed before the table. */
TEST(axes_text_is_the_plan_progress_and_key_text)
{
    struct tkp_cell c;
    tkp_cell_defaults(&c);
    c.vocab = 128256, c.batch = 64, c.k = -1, c.draws = 3, c.seed = 9007199254740992ull;
    tkp_axis_store(tkp_axis_named("p"), &c, 0.95);
    snprintf(c.dataset, sizeof c.dataset, "file:/tmp/x.h5");
    char got[1024], want[1024];
    got[0] = 0;
    tkp_axes_append(&c, TKP_AXES_PLAN, got, sizeof got);
    snprintf(want, sizeof want, "\t%s\tV=%lld\tB=%lld\tk=%d\tp=%g", c.dataset,
             (long long)c.vocab, (long long)c.batch, c.k, (double)c.p);
    CHECK(strcmp(got, want) == 0, "plan text '%s', not '%s'", got, want);
    got[0] = 0;
    tkp_axes_append(&c, TKP_AXES_PROGRESS, got, sizeof got);
    snprintf(want, sizeof want, " V=%lld B=%lld k=%d p=%g", (long long)c.vocab,
             (long long)c.batch, c.k, (double)c.p);
    CHECK(strcmp(got, want) == 0, "progress text '%s', not '%s'", got, want);
    snprintf(got, sizeof got, "algo");
    tkp_axes_append(&c, TKP_AXES_KEY, got, sizeof got);
    snprintf(want, sizeof want, "algo|%s|%lld|%lld|%d|%.9g|%d|%llu", c.dataset,
             (long long)c.vocab, (long long)c.batch, c.k, (double)c.p, c.draws,
             (unsigned long long)c.seed);
    CHECK(strcmp(got, want) == 0, "key text '%s', not '%s'", got, want);
    struct tkp_cell_row row = { 0 };
    tkp_axes_to_row(&c, &row);
    CHECK(strcmp(row.dataset, c.dataset) == 0 && row.vocab == c.vocab && row.batch == c.batch &&
              row.k == c.k && row.p == 0.95 && row.draws == c.draws &&
              row.seed == (int64_t)c.seed, "the row's axis columns differ from the cell");
}

/* The messages that list the axes name them in the table's order. */
TEST(axes_name_the_sweep_keys_and_the_cross_product)
{
    struct tkp_plan plan;
    struct tkp_error err = { 0 };
    int rc = tkp_config_load(write_scratch("axes_key.lua", "sweep 's' { vocab = 8, batch = 1, "
                                           "algos = 'naive_sort', layout = 'f16' }\n"),
                             TKP_CPU, &plan, &err);
    char want[512] = "axes_key.lua:1: sweep 's': unknown key 'layout' (expected one of algos";
    for (const struct tkp_axis *a = tkp_axes; a->name; a++)
        snprintf(want + strlen(want), sizeof want - strlen(want), ", %s", a->name);
    strcat(want, ", verify, where, timing)");
    CHECK(rc != TKP_OK && strstr(err.msg, want) && strstr(want, ", dataset, vocab, batch, k, p, "
                                 "draws, seed, dtype, "), "%s, not %s", err.msg, want);
    rc = tkp_config_load(write_scratch("axes_big.lua",
                                       "local l = {} for i = 1, 64 do l[i] = i end\n"
                                       "sweep 's' { vocab = l, batch = l, k = l, p = l,\n"
                                       "  algos = 'naive_sort' }\n"),
                         TKP_CPU, &plan, &err);
    CHECK(rc != TKP_OK && strstr(err.msg, "axes_big.lua:2: sweep 's': its cross product has "
                                 "16777216 cells (algos x dataset x vocab x batch x k x p = 1 x "
                                 "1 x 64 x 64 x 64 x 64), more than the limit of 1000000"),
          "%s", err.msg);
}

/* The results columns (docs/DESIGN.md, "/sweeps/<sweep>/cells") are the contract's, in its order,
 * and every axis has a column by its name: a new axis's column is appended after them. */
TEST(axes_each_have_a_results_column_after_the_contract_columns)
{
    static const char *const contract[] = {
        "key", "algo", "variant", "options", "dataset", "mode", "backend", "batch", "vocab", "k",
        "p", "draws", "seed", "status", "message", "median_us", "q1_us", "q3_us", "min_us",
        "max_us", "mean_us", "stdev_us", "n_samples", "samples_offset", "throttled",
        "bytes_read", "bytes_written", "gbps", "bw_fraction", "workspace_bytes",
        "peak_device_bytes", "rows_checked", "rows_exact", "hit_rate", "outliers",
        "outlier_mass", "iterations", "rounds", "cell_seconds", "noisy", "run", "sorted",
    };
    const size_t fixed = sizeof contract / sizeof contract[0];
    const char *names[128];
    const size_t n = tkp_results_columns(names, 128);
    REQUIRE(n >= fixed && n <= 128, "%zu columns", n);
    for (size_t i = 0; i < fixed; i++)
        CHECK(strcmp(names[i], contract[i]) == 0, "column %zu is %s, the contract's is %s", i,
              names[i], contract[i]);
    for (const struct tkp_axis *a = tkp_axes; a->name; a++) {
        size_t at = n;
        for (size_t i = 0; i < n; i++)
            if (strcmp(names[i], a->name) == 0)
                at = i;
        CHECK(at < n, "axis %s has no results column", a->name);
    }
}

/* The dtype axis's names are enum tkp_dtype's (algos/common/half.h), f32 the default. */
TEST(axes_dtype_choices_are_the_element_types)
{
    const struct tkp_axis *a = tkp_axis_named("dtype");
    REQUIRE(a && a->type == TKP_AXIS_ENUM && (a->flags & TKP_AXIS_QUIET), "no quiet dtype axis");
    int n = 0;
    for (; a->choices[n]; n++)
        CHECK(strcmp(a->choices[n], tkp_dtype_name((enum tkp_dtype)n)) == 0,
              "choice %d is %s, enum tkp_dtype's %s", n, a->choices[n],
              tkp_dtype_name((enum tkp_dtype)n));
    CHECK(n == TKP_DTYPE_COUNT && a->def == TKP_F32, "%d choices, default %g", n, a->def);
}

/* A 16-bit cell's lines and key name its type after the other axes; an f32 cell's do not. */
TEST(axes_dtype_shows_only_off_its_default)
{
    struct tkp_cell c;
    tkp_cell_defaults(&c); /* gaussian, p = 1, draws = 1, seed = 1 */
    c.vocab = 8, c.batch = 2, c.k = 3, c.dtype = TKP_BF16;
    const struct { enum tkp_axes_style style; const char *bf16, *f32; } want[] = {
        { TKP_AXES_PLAN, "\tgaussian\tV=8\tB=2\tk=3\tp=1\tdtype=bf16", "\tgaussian\tV=8\tB=2\tk=3\tp=1" },
        { TKP_AXES_PROGRESS, " V=8 B=2 k=3 p=1 dtype=bf16", " V=8 B=2 k=3 p=1" },
        { TKP_AXES_KEY, "|gaussian|8|2|3|1|1|1|bf16", "|gaussian|8|2|3|1|1|1" },
    };
    for (int i = 0; i < 3; i++) {
        char got[256] = "";
        c.dtype = TKP_BF16;
        tkp_axes_append(&c, want[i].style, got, sizeof got);
        CHECK(strcmp(got, want[i].bf16) == 0, "bf16 style %d: '%s', not '%s'", i, got, want[i].bf16);
        got[0] = 0;
        c.dtype = TKP_F32;
        tkp_axes_append(&c, want[i].style, got, sizeof got);
        CHECK(strcmp(got, want[i].f32) == 0, "f32 style %d: '%s', not '%s'", i, got, want[i].f32);
    }
    struct tkp_cell_row row = { 0 };
    c.dtype = TKP_F16;
    tkp_axes_to_row(&c, &row);
    CHECK(strcmp(row.dtype, "f16") == 0, "the row's dtype column is '%s', not f16", row.dtype);
}

/* dtype = "bf16" or a list; a name that is no type or a value that is no name is refused with
 * the config's file and line and the value. */
TEST(axes_dtype_parses_names_and_lists_and_refuses_others)
{
    struct tkp_plan plan;
    struct tkp_error err = { 0 };
    int rc = tkp_config_load(write_scratch("axes_dt.lua", "sweep 's' { vocab = 8, batch = 1,\n"
                                           "  algos = 'naive_sort', dtype = { 'f32', 'bf16', 'f16' } }\n"),
                             TKP_CPU, &plan, &err);
    REQUIRE(rc == TKP_OK, "%s", err.msg);
    CHECK(plan.n == 3 && plan.cells[0].dtype == TKP_F32 && plan.cells[1].dtype == TKP_BF16 &&
              plan.cells[2].dtype == TKP_F16, "%zu cells, not f32, bf16, f16 in order", plan.n);
    tkp_plan_free(&plan);
    rc = tkp_config_load(write_scratch("axes_dt1.lua", "sweep 's' { vocab = 8, batch = 1,\n"
                                       "  algos = 'naive_sort', dtype = 'bf16' }\n"),
                         TKP_CPU, &plan, &err);
    REQUIRE(rc == TKP_OK, "%s", err.msg);
    CHECK(plan.n == 1 && plan.cells[0].dtype == TKP_BF16, "dtype = 'bf16' is not one bf16 cell");
    tkp_plan_free(&plan);
    static const struct { const char *value, *message; } bad[] = {
        { "'bf8'", "axes_dtb.lua:1: sweep 's': unknown dtype 'bf8'" },
        { "{ 'f32', 'fp16' }", "axes_dtb.lua:1: sweep 's': unknown dtype 'fp16'" },
        { "16", "axes_dtb.lua:1: sweep 's': 'dtype' must be a name or a list of names" },
        { "{ 'f32', 2 }", "axes_dtb.lua:1: sweep 's': dtype[2] must be a name" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[256];
        snprintf(text, sizeof text, "sweep 's' { vocab = 8, batch = 1,\n  algos = 'naive_sort', "
                 "dtype = %s }\n", bad[i].value);
        rc = tkp_config_load(write_scratch("axes_dtb.lua", text), TKP_CPU, &plan, &err);
        CHECK(rc != TKP_OK && strstr(err.msg, bad[i].message), "dtype = %s: '%s', want '%s'",
              bad[i].value, err.msg, bad[i].message);
    }
}

/* tkp_cell_defaults: every axis at its default, a required one at its least value. */
TEST(axes_cell_defaults_hold_each_axis_default)
{
    struct tkp_cell c;
    memset(&c, 0x5a, sizeof c);
    tkp_cell_defaults(&c);
    for (const struct tkp_axis *a = tkp_axes; a->name; a++)
        if (a->flags & TKP_AXIS_REQUIRED)
            CHECK(tkp_axis_number(a, &c) == a->min, "required axis %s is %g, not its least %g",
                  a->name, tkp_axis_number(a, &c), a->min);
        else
            CHECK(tkp_axis_is_default(a, &c), "axis %s is not at its default", a->name);
    CHECK(c.algo == NULL && c.opts == NULL && c.sweep[0] == 0 && c.verify_rows == 0,
          "a field outside the axes is not zero");
}

/* A value of axis a off its default and in its range, as Lua (lua) and as the key writes it
 * (text): the last dataset or enum choice other than the default, a required number at its
 * least + 7, another number at its default + 1 (F32: half its default, or 0.5). */
static void off_default(const struct tkp_axis *a, char *lua, char *text, size_t n)
{
    if (a->type == TKP_AXIS_DATASET || a->type == TKP_AXIS_ENUM) {
        const char *name = "";
        for (int i = 0; a->type == TKP_AXIS_ENUM && a->choices[i]; i++)
            name = i != (int)a->def ? a->choices[i] : name;
        for (int i = 0; a->type == TKP_AXIS_DATASET && tkp_datasets[i].name; i++)
            if (strcmp(tkp_datasets[i].name, a->def_text) != 0)
                name = tkp_datasets[i].name;
        snprintf(lua, n, "'%s'", name);
        snprintf(text, n, "%s", name);
        return;
    }
    double v = (a->flags & TKP_AXIS_REQUIRED) ? a->min + 7
               : a->type == TKP_AXIS_F32      ? (a->def != 0 ? a->def / 2 : 0.5)
               : a->def + 1 <= a->max         ? a->def + 1 : a->def - 1;
    snprintf(lua, n, "%.17g", v);
    if (a->type == TKP_AXIS_F32)
        snprintf(text, n, "%.9g", (double)(float)v);
    else
        snprintf(text, n, "%.0f", v);
}

/* A config that sets every axis of harness/plan/axes.def off its default: each value is in the
 * cell, in its results column, in the key (in the table's order) and, for a TKP_AXIS_PEER
 * axis, in the peer's open request as name=value. So a new row gets all of these or fails
 * here (docs/DESIGN.md, "Adding an axis"). */
TEST(axes_each_set_shows_in_its_column_key_and_peer_request)
{
    char cfg[2048] = "sweep 'every' { algos = 'naive_sort', verify = 1,\n"
                     "  timing = { warmup = 0, min_reps = 1, max_reps = 1 }";
    char text[TKP_MAX_AXES][64];
    int n = 0;
    for (const struct tkp_axis *a = tkp_axes; a->name; a++, n++) {
        char lua[64];
        off_default(a, lua, text[n], sizeof text[n]);
        const size_t used = strlen(cfg);
        snprintf(cfg + used, sizeof cfg - used, ",\n  %s = %s", a->name, lua);
    }
    strcat(cfg, " }\n");
    const char *path = write_scratch("axes_every.lua", cfg);
    struct tkp_plan plan;
    struct tkp_error err = { 0 };
    REQUIRE(tkp_config_load(path, TKP_CPU, &plan, &err) == TKP_OK && plan.n == 1, "%s\n%s",
            err.msg, cfg);
    char key[1024] = "", line[2048];
    tkp_axes_append(&plan.cells[0], TKP_AXES_KEY, key, sizeof key);
    tkp_peer_open_line(&plan.cells[0], "x.f32", 8, TKP_CPU, 0, line, sizeof line);
    const char *at = key;
    n = 0;
    for (const struct tkp_axis *a = tkp_axes; a->name; a++, n++) {
        char value[64], want[80];
        tkp_axis_text(a, &plan.cells[0], 1, value, sizeof value);
        CHECK(strcmp(value, text[n]) == 0, "axis %s: the cell holds %s, not the %s set",
              a->name, value, text[n]);
        snprintf(want, sizeof want, "|%s", text[n]);
        const char *found = strstr(at, want);
        CHECK(found, "axis %s: the key '%s' lacks '%s' after its earlier axes", a->name, key, want);
        at = found ? found + strlen(want) : at;
        snprintf(want, sizeof want, "\t%s=%s\t", a->name, text[n]);
        CHECK(!(a->flags & TKP_AXIS_PEER) || strstr(line, want),
              "axis %s: the peer request '%s' lacks %s=%s", a->name, line, a->name, text[n]);
    }
    tkp_plan_free(&plan);
    char h5[600], out[1 << 14];
    REQUIRE(run_into(path, "axes_every", "", h5, sizeof h5) == 0, "the run failed:\n%s", cfg);
    REQUIRE(run_cmd(out, sizeof out, "%s export %s", topkp_bin(), h5) == 0, "%s", out);
    const char *row = strchr(out, '\n');
    REQUIRE(row, "export printed no row:\n%s", out);
    n = 0;
    for (const struct tkp_axis *a = tkp_axes; a->name; a++, n++) {
        char field[300] = "";
        const int col = tsv_column(out, a->name);
        if (col >= 0)
            tsv_field(row + 1, col, field, sizeof field);
        CHECK(col >= 0 && strcmp(field, text[n]) == 0, "axis %s: its column holds '%s', not %s",
              a->name, field, text[n]);
    }
}

/* Does any file under dir (recursively; C or Python) read the axis: C "->name" or ".name", or
 * Python request["name"], the whole name? */
static int source_reads(const char *dir, const char *name)
{
    DIR *d = opendir(dir);
    int found = 0;
    for (struct dirent *e; d && !found && (e = readdir(d));) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        const char *ext = strrchr(e->d_name, '.');
        if (e->d_name[0] == '.')
            continue;
        if (e->d_type == DT_DIR) {
            found = source_reads(path, name);
            continue;
        }
        if (!ext || (strcmp(ext, ".c") && strcmp(ext, ".py")) || strcmp(e->d_name, "axes.c") == 0)
            continue;
        char *text = slurp(path, NULL);
        char quoted[80];
        snprintf(quoted, sizeof quoted, "request[\"%s\"]", name);
        for (const char *p = text; p && !found && (p = strstr(p, name)); p++) {
            const char *after = p + strlen(name);
            found = p > text && (p[-1] == '.' || (p[-1] == '>' && p - text > 1 && p[-2] == '-')) &&
                    !(isalnum((unsigned char)*after) || *after == '_');
        }
        found = found || (text && strstr(text, quoted));
        free(text);
    }
    if (d)
        closedir(d);
    return found;
}

/* A row of harness/plan/axes.def is an axis only with its use: some code where a cell runs (harness/,
 * or a peer under peers/ for a TKP_AXIS_PEER axis) reads its field. */
TEST(axes_each_is_read_where_a_cell_runs)
{
    for (const struct tkp_axis *a = tkp_axes; a->name; a++)
        CHECK(source_reads("harness", a->name) || source_reads("peers", a->name),
              "axis %s (harness/plan/axes.def): nothing under harness/ or peers/ reads it (->%s, "
              ".%s, request[\"%s\"]): add its use where a cell runs", a->name, a->name, a->name,
              a->name);
}

/* A float axis (min_p, p) writes its float and its declared double and nothing else of the
 * cell: every other byte stays what it was (a 0xA5 pattern), and the stored value reads back. */
TEST(axes_a_float_axis_writes_only_its_own_fields)
{
    for (const struct tkp_axis *a = tkp_axes; a->name; a++) {
        if (a->type != TKP_AXIS_F32)
            continue;
        struct tkp_cell before, c;
        memset(&before, 0xA5, sizeof before);
        c = before;
        tkp_axis_store(a, &c, 0.125);
        const unsigned char *x = (const unsigned char *)&before, *y = (const unsigned char *)&c;
        for (size_t i = 0; i < sizeof c; i++) {
            const int own = (i >= a->offset && i < a->offset + a->size) ||
                            (i >= a->declared && i < a->declared + sizeof(double));
            CHECK(own || x[i] == y[i], "axis %s: storing it changed byte %zu of the cell", a->name,
                  i);
        }
        CHECK(tkp_axis_number(a, &c) == 0.125, "axis %s: stored 0.125, reads %g", a->name,
              tkp_axis_number(a, &c));
    }
    CHECK(tkp_axis_named("min_p") && tkp_axis_named("min_p")->type == TKP_AXIS_F32,
          "min_p is not a float axis");
}
