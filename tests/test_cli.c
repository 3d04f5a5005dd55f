/* test_cli.c — the command line end to end: gen -> apply round trip against the oracle,
 * --k/--p overriding the file's values (apply --help), clear errors for bad files and
 * impossible problems. */
#include <hdf5.h>
#include <stdlib.h>
#include <string.h>

#include "logits_file.h"
#include "../harness/verify/oracle.h"
#include "cli_util.h"
#include "test.h"

/* Read a 2-D dataset of apply's output into a new buffer; returns NULL when absent. */
static void *read_2d(const char *path, const char *name, hid_t type, size_t elem, hsize_t dims[2])
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0)
        return NULL;
    void *data = NULL;
    if (H5Lexists(f, name, H5P_DEFAULT) > 0) {
        hid_t d = H5Dopen2(f, name, H5P_DEFAULT), s = H5Dget_space(d);
        H5Sget_simple_extent_dims(s, dims, NULL);
        data = malloc(elem * dims[0] * dims[1] + 1);
        H5Dread(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
        H5Sclose(s);
        H5Dclose(d);
    }
    H5Fclose(f);
    return data;
}

TEST(cli_gen_then_apply_naive_sort_equals_oracle_on_every_row)
{
    char out[4096], in[512], res[512];
    snprintf(in, sizeof in, "%s/gen.h5", scratch_dir());
    snprintf(res, sizeof res, "%s/apply.h5", scratch_dir());
    REQUIRE(run_cmd(out, sizeof out, "%s gen bf16 --batch 12 --vocab 3001 --seed 5 -o %s",
                    topkp_bin(), in) == 0, "gen failed: %s", out);
    REQUIRE(run_cmd(out, sizeof out, "%s apply naive_sort --backend cpu --in %s --out %s --k 40 --p 0.8 --draws 7 --seed 9",
                    topkp_bin(), in, res) == 0, "apply failed: %s", out);
    struct tkp_batch b;
    struct tkp_error err;
    REQUIRE(tkp_logits_read(in, 40, 0.8f, &b, &err) == 0, "%s", err.msg);
    hsize_t kd[2] = { 0, 0 }, sd[2] = { 0, 0 };
    uint8_t *kept = read_2d(res, "kept", H5T_NATIVE_UINT8, 1, kd);
    int64_t *samples = read_2d(res, "samples", H5T_NATIVE_INT64, 8, sd);
    CHECK(kept && kd[0] == 12 && kd[1] == 3001, "/kept missing or wrong shape");
    CHECK(samples && sd[0] == 12 && sd[1] == 7, "/samples missing or wrong shape");
    for (int64_t r = 0; kept && samples && !test_failed() && r < b.batch; r++) {
        struct oracle_row o;
        char why[256];
        /* gen wrote no /k or /p, so every row takes apply's --k 40 --p 0.8 */
        CHECK(b.k[r] == 40 && b.p[r] == 0.8f, "gen should write no /k, /p: got %d %g", b.k[r],
              (double)b.p[r]);
        oracle_row_init(&o, b.logits + r * b.vocab, b.vocab, b.k[r], b.p[r]);
        CHECK(oracle_check_kept(&o, kept + r * b.vocab, why, sizeof why), "row %lld: %s",
              (long long)r, why);
        for (int d = 0; d < 7; d++)
            CHECK(oracle_check_draw(&o, samples[r * 7 + d], why, sizeof why), "row %lld: %s",
                  (long long)r, why);
        oracle_row_free(&o);
    }
    free(kept);
    free(samples);
    tkp_batch_free(&b);
}

/* A 2 x 6 logits file whose /k covers row 0 only (k = 1). */
static void write_partial_k_file(const char *path)
{
    float x[2 * 6] = { 1, 5, 3, 2, 4, 0, 9, 9, 9, 1, 1, 1 };
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t dims[2] = { 2, 6 };
    hid_t s = H5Screate_simple(2, dims, NULL);
    hid_t d = H5Dcreate2(f, "logits", H5T_NATIVE_FLOAT, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, x);
    int32_t k_first[1] = { 1 };
    hsize_t one = 1;
    hid_t s1 = H5Screate_simple(1, &one, NULL);
    hid_t dk = H5Dcreate2(f, "k", H5T_NATIVE_INT32, s1, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(dk, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, k_first);
    H5Dclose(dk), H5Sclose(s1), H5Dclose(d), H5Sclose(s), H5Fclose(f);
}

TEST(cli_apply_k_flag_overrides_the_file_and_the_file_fills_in_without_it)
{
    char out[4096], path[512], res[512];
    snprintf(path, sizeof path, "%s/nokp.h5", scratch_dir());
    snprintf(res, sizeof res, "%s/nokp-out.h5", scratch_dir());
    write_partial_k_file(path);
    /* --k 2 overrides the file's k = 1 on row 0, and says so */
    REQUIRE(run_cmd(out, sizeof out, "%s apply naive_sort --backend cpu --in %s --out %s --k 2", topkp_bin(),
                    path, res) == 0, "apply failed: %s", out);
    CHECK(strstr(out, "--k 2 overrides the file's /k on 1 of 2 rows"), "no note of the override: %s", out);
    hsize_t kd[2];
    uint8_t *kept = read_2d(res, "kept", H5T_NATIVE_UINT8, 1, kd);
    REQUIRE(kept, "no /kept");
    const uint8_t with_flag[12] = { 0, 1, 0, 0, 1, 0, 1, 1, 0, 0, 0, 0 };
    CHECK(memcmp(kept, with_flag, 12) == 0, "--k 2 on both rows: row 0 keeps {1,4}, row 1 {0,1} (ties to the lower index)");
    free(kept);
    /* without --k: row 0 takes the file's k = 1, row 1 (left out of /k) has top-k off */
    REQUIRE(run_cmd(out, sizeof out, "%s apply naive_sort --backend cpu --in %s --out %s --force", topkp_bin(),
                    path, res) == 0, "apply failed: %s", out);
    CHECK(!strstr(out, "overrides"), "no flag, no override note: %s", out);
    kept = read_2d(res, "kept", H5T_NATIVE_UINT8, 1, kd);
    REQUIRE(kept, "no /kept");
    const uint8_t from_file[12] = { 0, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1 };
    CHECK(memcmp(kept, from_file, 12) == 0, "row 0 must keep {1} (file k=1), row 1 everything (no k)");
    free(kept);
}

TEST(cli_apply_reports_bad_input_clearly)
{
    char out[4096];
    const char *junk = write_scratch("junk.h5", "this is not hdf5\n");
    CHECK(run_cmd(out, sizeof out, "%s apply naive_sort --backend cpu --in %s --out %s/x.h5", topkp_bin(), junk,
                  scratch_dir()) != 0 && strstr(out, junk) && strstr(out, "not a readable HDF5"),
          "a text file must be rejected naming it: %s", out);
    char path[512];
    snprintf(path, sizeof path, "%s/oned.h5", scratch_dir());
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t n = 4;
    hid_t s = H5Screate_simple(1, &n, NULL);
    hid_t d = H5Dcreate2(f, "logits", H5T_NATIVE_FLOAT, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    float v[4] = { 1, 2, 3, 4 };
    H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
    H5Dclose(d), H5Sclose(s), H5Fclose(f);
    CHECK(run_cmd(out, sizeof out, "%s apply naive_sort --backend cpu --in %s --out %s/x.h5", topkp_bin(), path,
                  scratch_dir()) != 0 && strstr(out, "/logits must be a 2-D"),
          "a 1-D /logits must be rejected: %s", out);
    char gen[512];
    snprintf(gen, sizeof gen, "%s/small.h5", scratch_dir());
    run_cmd(out, sizeof out, "%s gen gaussian --batch 2 --vocab 50 -o %s", topkp_bin(), gen);
    CHECK(run_cmd(out, sizeof out, "%s apply naive_sort --backend cpu --in %s --out %s/x.h5 --p nan", topkp_bin(),
                  gen, scratch_dir()) != 0 && strstr(out, "--p"),
          "a NaN p must be rejected naming the flag: %s", out);
    CHECK(run_cmd(out, sizeof out, "%s apply naive_sort --backend cpu --in %s --out %s/x.h5 --set bogus=1",
                  topkp_bin(), gen, scratch_dir()) != 0 && strstr(out, "bogus"),
          "an unknown option must be named: %s", out);
    CHECK(run_cmd(out, sizeof out, "%s apply nosuch --backend cpu --in %s --out %s/x.h5", topkp_bin(), gen,
                  scratch_dir()) != 0 && strstr(out, "unknown algorithm 'nosuch'"),
          "an unknown algorithm must be named: %s", out);
    CHECK(run_cmd(out, sizeof out, "%s gen nosuch --batch 1 --vocab 5 -o %s/y.h5", topkp_bin(),
                  scratch_dir()) != 0 && strstr(out, "unknown dataset 'nosuch'"),
          "an unknown dataset must be named: %s", out);
}

TEST(cli_list_names_every_module_with_its_capabilities)
{
    char out[16384];
    REQUIRE(run_cmd(out, sizeof out, "%s list", topkp_bin()) == 0, "list failed: %s", out);
    static const char *const names[] = { "naive_sort", "rtopk", "qrita", "cake", "rejection" };
    for (int i = 0; i < 5; i++)
        CHECK(strstr(out, names[i]), "list does not name %s", names[i]);
    CHECK(strstr(out, "ops=") && strstr(out, "outputs=") && strstr(out, "backends="),
          "list does not show capabilities: %s", out);
}
