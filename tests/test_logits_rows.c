/* test_logits_rows.c — the logits file's per-row sampling inputs (docs/DESIGN.md, "The logits
 * file"): /seed, /offset and /min_p written by tkp_logits_write come back from tkp_logits_read
 * bit for bit (seeds 0 and 2^64 - 1 included), a file without them reads with them absent
 * (batch keying, min-p off), and a /seed that does not cover every row is refused, naming the
 * file and the dataset. And through the CLI: apply on a file with per-row seeds draws what it
 * draws on the same rows permuted, row for row. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hdf5.h>

#include "logits_file.h"
#include "cli_util.h"
#include "test.h"

enum { LR_ROWS = 5, LR_VOCAB = 40 };

static void lr_batch(struct tkp_batch *b, float *x, int32_t *k, float *p, uint64_t *seed,
                     uint64_t *offset, float *min_p)
{
    for (int i = 0; i < LR_ROWS * LR_VOCAB; i++)
        x[i] = (float)((i * 37) % 101) * 0.05f;
    for (int r = 0; r < LR_ROWS; r++) {
        k[r] = r * 3;
        p[r] = 0.5f + 0.1f * (float)r;
        seed[r] = r == 0 ? 0 : r == 1 ? UINT64_MAX : 0x0123456789ABCDEFull * (uint64_t)r;
        offset[r] = UINT64_MAX - (uint64_t)r;
        min_p[r] = r == 2 ? 0.0f : 0.03125f * (float)r;
    }
    *b = (struct tkp_batch){ LR_ROWS, LR_VOCAB, x, k, p, TKP_F32, NULL, seed, offset, min_p };
}

TEST(logits_file_row_seeds_offsets_and_min_p_round_trip)
{
    float x[LR_ROWS * LR_VOCAB], p[LR_ROWS], min_p[LR_ROWS];
    int32_t k[LR_ROWS];
    uint64_t seed[LR_ROWS], offset[LR_ROWS];
    struct tkp_batch b, back;
    lr_batch(&b, x, k, p, seed, offset, min_p);
    char path[600];
    snprintf(path, sizeof path, "%s/rows.h5", scratch_dir());
    struct tkp_error err = { "" };
    REQUIRE(tkp_logits_write(path, &b, NULL, &err) == TKP_OK, "write: %s", err.msg);
    REQUIRE(tkp_logits_read(path, 0, 1.0f, &back, &err) == TKP_OK, "read: %s", err.msg);
    CHECK(back.seed && memcmp(back.seed, seed, sizeof seed) == 0, "/seed did not come back");
    CHECK(back.offset && memcmp(back.offset, offset, sizeof offset) == 0,
          "/offset did not come back");
    CHECK(back.min_p && memcmp(back.min_p, min_p, sizeof min_p) == 0, "/min_p did not come back");
    tkp_batch_free(&back);
    b.seed = b.offset = NULL, b.min_p = NULL;
    REQUIRE(tkp_logits_write(path, &b, NULL, &err) == TKP_OK, "write: %s", err.msg);
    REQUIRE(tkp_logits_read(path, 0, 1.0f, &back, &err) == TKP_OK, "read: %s", err.msg);
    CHECK(!back.seed && !back.offset && !back.min_p,
          "a file without /seed, /offset, /min_p read with some of them");
    tkp_batch_free(&back);
}

TEST(logits_file_refuses_a_seed_array_short_of_the_rows)
{
    float x[LR_ROWS * LR_VOCAB], p[LR_ROWS], min_p[LR_ROWS];
    int32_t k[LR_ROWS];
    uint64_t seed[LR_ROWS], offset[LR_ROWS];
    struct tkp_batch b, back;
    lr_batch(&b, x, k, p, seed, offset, min_p);
    b.seed = NULL;
    char path[600];
    snprintf(path, sizeof path, "%s/short_seed.h5", scratch_dir());
    struct tkp_error err = { "" };
    REQUIRE(tkp_logits_write(path, &b, NULL, &err) == TKP_OK, "write: %s", err.msg);
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    hsize_t n = LR_ROWS - 1;
    hid_t s = H5Screate_simple(1, &n, NULL);
    hid_t d = H5Dcreate2(f, "seed", H5T_NATIVE_UINT64, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(d, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, seed);
    H5Dclose(d), H5Sclose(s), H5Fclose(f);
    int rc = tkp_logits_read(path, 0, 1.0f, &back, &err);
    CHECK(rc == TKP_EINVAL && strstr(err.msg, path) && strstr(err.msg, "/seed"),
          "a /seed of %d rows for %d was not refused by name (rc %d: %s)", LR_ROWS - 1, LR_ROWS,
          rc, err.msg);
    if (rc == TKP_OK)
        tkp_batch_free(&back);
}

/* /samples [rows, draws] of an apply output file; NULL when unreadable. */
static int64_t *read_samples(const char *path, int64_t n)
{
    int64_t *s = malloc(sizeof(int64_t) * (size_t)n);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = f < 0 ? -1 : H5Dopen2(f, "samples", H5P_DEFAULT);
    int bad = d < 0 || H5Dread(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, s) < 0;
    if (d >= 0)
        H5Dclose(d);
    if (f >= 0)
        H5Fclose(f);
    if (bad)
        free(s), s = NULL;
    return s;
}

TEST(cli_apply_with_row_seeds_draws_each_row_the_same_in_any_order)
{
    enum { ROWS = 6, DRAWS = 5 };
    const char *dir = scratch_dir();
    char out[4096];
    int rc = run_cmd(out, sizeof out, "%s gen gaussian --batch %d --vocab 300 --k 40 --p 0.9 "
                     "--min-p 0.01 --row-seeds 7 --row-offset 3 -o %s/fwd.h5 2>&1",
                     topkp_bin(), ROWS, dir);
    REQUIRE(rc == 0, "gen: %s", out);
    struct tkp_batch b, rev;
    struct tkp_error err = { "" };
    char path[600];
    snprintf(path, sizeof path, "%s/fwd.h5", dir);
    REQUIRE(tkp_logits_read(path, 0, 1.0f, &b, &err) == TKP_OK, "read: %s", err.msg);
    REQUIRE(tkp_logits_read(path, 0, 1.0f, &rev, &err) == TKP_OK, "read: %s", err.msg);
    REQUIRE(b.seed && b.offset && rev.seed && rev.offset, "gen --row-seeds wrote no /seed");
    for (int r = 0; r < ROWS; r++) { /* the rows reversed, each with its seed and offset */
        memcpy(rev.logits + r * 300, b.logits + (ROWS - 1 - r) * 300, sizeof(float) * 300);
        rev.seed[r] = b.seed[ROWS - 1 - r];
        rev.offset[r] = b.offset[ROWS - 1 - r];
    }
    snprintf(path, sizeof path, "%s/rev.h5", dir);
    REQUIRE(tkp_logits_write(path, &rev, NULL, &err) == TKP_OK, "write: %s", err.msg);
    for (int i = 0; i < 2 && rc == 0; i++)
        rc = run_cmd(out, sizeof out, "%s apply naive_sort --backend cpu --draws %d --in %s/%s.h5 "
                     "--out %s/%s_out.h5 --seed %d 2>&1", topkp_bin(), DRAWS, dir,
                     i ? "rev" : "fwd", dir, i ? "rev" : "fwd", 100 + i);
    REQUIRE(rc == 0 && strstr(out, "--seed is not used"), "apply: %s", out);
    char fwd_out[600], rev_out[600];
    snprintf(fwd_out, sizeof fwd_out, "%s/fwd_out.h5", dir);
    snprintf(rev_out, sizeof rev_out, "%s/rev_out.h5", dir);
    int64_t *x = read_samples(fwd_out, ROWS * DRAWS), *y = read_samples(rev_out, ROWS * DRAWS);
    REQUIRE(x && y, "the outputs have no readable /samples");
    for (int r = 0; r < ROWS; r++)
        CHECK(memcmp(x + r * DRAWS, y + (ROWS - 1 - r) * DRAWS, sizeof(int64_t) * DRAWS) == 0,
              "row %d drew otherwise when the rows were reversed (first draw %lld vs %lld)", r,
              (long long)x[r * DRAWS], (long long)y[(ROWS - 1 - r) * DRAWS]);
    free(x), free(y);
    tkp_batch_free(&b), tkp_batch_free(&rev);
}
