/* test_cli_dtype.c — 16-bit logits files through the command line (docs/DESIGN.md, "The logits
 * file"; docs/SEMANTICS.md, "16-bit logits"): `gen --dtype` writes bf16 and fp16 as HDF5 floats
 * of their fields holding the float32 values rounded to nearest even; `apply` on a 16-bit file
 * writes, byte for byte, what it writes on the file's float32 upcast, and `apply --dtype`
 * rounds a file of another type first; 16-bit files of an unknown layout, odd float layouts
 * and truncated or damaged files are errors naming the file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hdf5.h>

#include "../algos/common/half.h"
#include "logits_file.h"
#include "cli_util.h"
#include "test.h"

static char out[1 << 16];

/* A float type of `size` bytes with these fields, little- or big-endian; the caller closes it.
 * Built here independently of harness/store/logits_file.c. */
static hid_t float_type(size_t size, size_t spos, size_t epos, size_t esize, size_t msize,
                        size_t ebias, int big_endian)
{
    hid_t t = H5Tcopy(H5T_IEEE_F32LE);
    H5Tset_fields(t, spos, epos, esize, 0, msize);
    H5Tset_precision(t, 8 * size);
    H5Tset_size(t, size);
    H5Tset_ebias(t, ebias);
    if (big_endian)
        H5Tset_order(t, H5T_ORDER_BE);
    return t;
}

static hid_t fp16_type(int big_endian) { return float_type(2, 15, 10, 5, 10, 15, big_endian); }

/* The file's /logits bytes in memory, raw (memory type = the file's type). */
static void *read_raw(const char *path, size_t *size, size_t fields[5], size_t *ebias)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT), d = H5Dopen2(f, "logits", H5P_DEFAULT);
    hid_t t = H5Dget_type(d), s = H5Dget_space(d);
    *size = H5Tget_size(t);
    H5Tget_fields(t, &fields[0], &fields[1], &fields[2], &fields[3], &fields[4]);
    *ebias = H5Tget_ebias(t);
    void *buf = malloc(*size * (size_t)H5Sget_simple_extent_npoints(s));
    H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
    H5Sclose(s), H5Tclose(t), H5Dclose(d), H5Fclose(f);
    return buf;
}

static int same_bits(float a, float b) { return tkp_bits_of_f32(a) == tkp_bits_of_f32(b); }

TEST(cli_gen_dtype_writes_16bit_floats_rounded_to_nearest_even)
{
    const char *dir = scratch_dir();
    char f32[512], half[512];
    snprintf(f32, sizeof f32, "%s/gen-f32.h5", dir);
    REQUIRE(run_cmd(out, sizeof out, "%s gen gaussian --batch 3 --vocab 777 --seed 4 -o %s",
                    topkp_bin(), f32) == 0, "gen: %s", out);
    struct tkp_batch a;
    struct tkp_error err = { "" };
    REQUIRE(tkp_logits_read(f32, 0, 1.0f, &a, &err) == 0, "%s", err.msg);
    CHECK(a.dtype == TKP_F32 && !a.logits16, "a float32 file read as type %d", (int)a.dtype);
    for (enum tkp_dtype t = TKP_BF16; t <= TKP_F16; t++) {
        snprintf(half, sizeof half, "%s/gen-%s.h5", dir, tkp_dtype_name(t));
        REQUIRE(run_cmd(out, sizeof out, "%s gen gaussian --batch 3 --vocab 777 --seed 4 "
                        "--dtype %s -o %s", topkp_bin(), tkp_dtype_name(t), half) == 0,
                "gen --dtype %s: %s", tkp_dtype_name(t), out);
        size_t size, fields[5], ebias;
        uint16_t *raw = read_raw(half, &size, fields, &ebias);
        const int bf16 = t == TKP_BF16;
        CHECK(size == 2 && fields[0] == 15 && fields[1] == (bf16 ? 7u : 10u) &&
              fields[2] == (bf16 ? 8u : 5u) && fields[3] == 0 && fields[4] == (bf16 ? 7u : 10u) &&
              ebias == (bf16 ? 127u : 15u), "%s: /logits is not a %s float (size %zu, sign %zu, "
              "exponent %zu+%zu bias %zu, mantissa %zu+%zu)", half, tkp_dtype_name(t), size,
              fields[0], fields[1], fields[2], ebias, fields[3], fields[4]);
        struct tkp_batch b;
        REQUIRE(tkp_logits_read(half, 0, 1.0f, &b, &err) == 0, "%s", err.msg);
        CHECK(b.dtype == t && b.logits16 && b.batch == 3 && b.vocab == 777, "%s read as type "
              "%d, %lld x %lld", half, (int)b.dtype, (long long)b.batch, (long long)b.vocab);
        for (int64_t i = 0; b.dtype == t && !test_failed() && i < 3 * 777; i++) {
            uint16_t want = bf16 ? tkp_f32_to_bf16(a.logits[i]) : tkp_f32_to_f16(a.logits[i]);
            float up = bf16 ? tkp_bf16_to_f32(want) : tkp_f16_to_f32(want);
            CHECK(raw[i] == want && b.logits16[i] == want && same_bits(b.logits[i], up),
                  "%s element %lld: %.9g stored as %#06x, read %#06x upcast %.9g; want %#06x "
                  "(%.9g)", tkp_dtype_name(t), (long long)i, (double)a.logits[i], raw[i],
                  b.logits16[i], (double)b.logits[i], want, (double)up);
        }
        free(raw);
        tkp_batch_free(&b);
    }
    tkp_batch_free(&a);
    CHECK(run_cmd(out, sizeof out, "%s gen gaussian --batch 1 --vocab 5 --dtype f8 -o %s/x.h5",
                  topkp_bin(), dir) == 2 && strstr(out, "f8") && strstr(out, "bf16"),
          "gen --dtype f8 must be a usage error naming the types: %s", out);
}

/* The bytes of a file's dataset `name` (read as uint8, int64 by its size), or NULL. */
static void *read_output(const char *path, const char *name, size_t *bytes)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0)
        return NULL;
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT), t = H5Dget_type(d), s = H5Dget_space(d);
    *bytes = H5Tget_size(t) * (size_t)H5Sget_simple_extent_npoints(s);
    void *buf = malloc(*bytes ? *bytes : 1);
    H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
    H5Sclose(s), H5Tclose(t), H5Dclose(d), H5Fclose(f);
    return buf;
}

/* /kept and /samples of two apply outputs are equal byte for byte. */
static void check_same_output(const char *x, const char *y, const char *what)
{
    static const char *const names[2] = { "kept", "samples" };
    for (int i = 0; i < 2; i++) {
        size_t nx = 0, ny = 0;
        void *a = read_output(x, names[i], &nx), *b = read_output(y, names[i], &ny);
        CHECK(a && b && nx == ny && nx > 0 && memcmp(a, b, nx) == 0,
              "%s: /%s of %s and %s differ", what, names[i], x, y);
        free(a);
        free(b);
    }
}

TEST(cli_apply_on_16bit_file_equals_apply_on_its_f32_upcast)
{
    const char *dir = scratch_dir(), *bin = topkp_bin();
    char f32[512], half[512], up[512], r1[512], r2[512], r3[512];
    snprintf(f32, sizeof f32, "%s/ap-f32.h5", dir);
    REQUIRE(run_cmd(out, sizeof out, "%s gen bf16 --batch 9 --vocab 1001 --seed 2 -o %s", bin,
                    f32) == 0, "gen: %s", out);
    for (enum tkp_dtype t = TKP_BF16; t <= TKP_F16; t++) {
        const char *name = tkp_dtype_name(t);
        snprintf(half, sizeof half, "%s/ap-%s.h5", dir, name);
        snprintf(up, sizeof up, "%s/ap-%s-upcast.h5", dir, name);
        snprintf(r1, sizeof r1, "%s/ap-%s-out.h5", dir, name);
        snprintf(r2, sizeof r2, "%s/ap-%s-upcast-out.h5", dir, name);
        snprintf(r3, sizeof r3, "%s/ap-%s-converted-out.h5", dir, name);
        REQUIRE(run_cmd(out, sizeof out, "%s gen bf16 --batch 9 --vocab 1001 --seed 2 --dtype %s "
                        "-o %s", bin, name, half) == 0, "gen: %s", out);
        struct tkp_batch b;
        struct tkp_error err = { "" };
        REQUIRE(tkp_logits_read(half, 0, 1.0f, &b, &err) == 0, "%s", err.msg);
        b.dtype = TKP_F32; /* the upcast, written as float32 */
        REQUIRE(tkp_logits_write(up, &b, NULL, &err) == 0, "%s", err.msg);
        b.dtype = t;
        tkp_batch_free(&b);
        const char *args = "--backend cpu --k 60 --p 0.9 --draws 5 --seed 3 --force";
        REQUIRE(run_cmd(out, sizeof out, "%s apply naive_sort --in %s --out %s %s", bin, half, r1,
                        args) == 0, "apply on %s: %s", name, out);
        REQUIRE(run_cmd(out, sizeof out, "%s apply naive_sort --in %s --out %s %s", bin, up, r2,
                        args) == 0, "apply on the upcast: %s", out);
        check_same_output(r1, r2, "a 16-bit file and its float32 upcast");
        /* --dtype T on the float32 file rounds it as gen --dtype T did */
        REQUIRE(run_cmd(out, sizeof out, "%s apply naive_sort --in %s --out %s %s --dtype %s", bin,
                        f32, r3, args, name) == 0 && strstr(out, "rounded to"),
                "apply --dtype %s: %s", name, out);
        check_same_output(r1, r3, "apply --dtype T on float32 and apply on gen --dtype T");
        /* --dtype f32 on the 16-bit file: its exact values */
        REQUIRE(run_cmd(out, sizeof out, "%s apply naive_sort --in %s --out %s %s --dtype f32", bin,
                        half, r3, args) == 0, "apply --dtype f32: %s", out);
        check_same_output(r1, r3, "apply --dtype f32 on a 16-bit file and apply on it");
    }
    CHECK(run_cmd(out, sizeof out, "%s apply naive_sort --in %s --out %s/z.h5 --dtype fp8", bin,
                  f32, dir) == 2 && strstr(out, "fp8"), "apply --dtype fp8: %s", out);
}

/* A 2 x 4 /logits of file type `ft` written from `mem` values of memory type `mt`. */
static const char *logits_of_type(const char *name, hid_t ft, hid_t mt, const void *mem)
{
    static char path[4][512];
    static int slot;
    char *p = path[slot++ % 4];
    snprintf(p, 512, "%s/%s", scratch_dir(), name);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hsize_t dims[2] = { 2, 4 };
    hid_t f = H5Fcreate(p, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t s = H5Screate_simple(2, dims, NULL);
    hid_t d = H5Dcreate2(f, "logits", ft, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (mem)
        H5Dwrite(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, mem);
    H5Dclose(d), H5Sclose(s), H5Fclose(f);
    return p;
}

TEST(hostile_files_16bit_logits_of_unknown_layouts_are_named)
{
    const char *bin = topkp_bin();
    char res[512];
    snprintf(res, sizeof res, "%s/layout-out.h5", scratch_dir());
    struct {
        const char *name, *want;
        hid_t type;
    } cases[] = {
        { "f16-bias14.h5", "2-byte float", float_type(2, 15, 10, 5, 10, 14, 0) },
        { "e6m9.h5", "2-byte float", float_type(2, 15, 9, 6, 9, 31, 0) },
        { "f24.h5", "3-byte float", float_type(3, 23, 16, 7, 16, 63, 0) },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *path = logits_of_type(cases[i].name, cases[i].type, cases[i].type, NULL);
        int rc = run_cmd(out, sizeof out, "%s apply naive_sort --in %s --out %s --force", bin,
                         path, res);
        CHECK(rc == 1 && strstr(out, path) && strstr(out, cases[i].want) && strstr(out, "bf16"),
              "%s: want exit 1 naming the file, '%s' and the types read; got %d: %s",
              cases[i].name, cases[i].want, rc, out);
        H5Tclose(cases[i].type);
    }
    /* big-endian fp16: read, byte order undone */
    const uint16_t enc[8] = { 0x3C00, 0xBC00, 0x0001, 0x7BFF, 0x8000, 0x7C00, 0x03FF, 0x4000 };
    hid_t be = fp16_type(1), le = fp16_type(0);
    const char *path = logits_of_type("f16-be.h5", be, le, enc);
    H5Tclose(be), H5Tclose(le);
    struct tkp_batch b;
    struct tkp_error err = { "" };
    REQUIRE(tkp_logits_read(path, 0, 1.0f, &b, &err) == 0, "%s", err.msg);
    CHECK(b.dtype == TKP_F16 && memcmp(b.logits16, enc, sizeof enc) == 0 &&
              b.logits[0] == 1.0f && b.logits[2] == 0x1.0p-24f && b.logits[3] == 65504.0f,
          "a big-endian fp16 file read as type %d, first %#06x %g", (int)b.dtype,
          b.logits16 ? b.logits16[0] : 0, (double)b.logits[0]);
    tkp_batch_free(&b);
}

TEST(hostile_files_truncated_16bit_logits_are_named)
{
    const char *bin = topkp_bin();
    char in[512], res[512];
    snprintf(in, sizeof in, "%s/trunc-f16.h5", scratch_dir());
    snprintf(res, sizeof res, "%s/trunc-out.h5", scratch_dir());
    REQUIRE(run_cmd(out, sizeof out, "%s gen gaussian --batch 200 --vocab 3000 --dtype f16 -o %s",
                    bin, in) == 0, "gen: %s", out);
    FILE *f = fopen(in, "r+b");
    REQUIRE(f && fseek(f, 0, SEEK_END) == 0, "cannot open %s", in);
    long size = ftell(f);
    /* 4 KiB of the compressed data in the middle overwritten, the file's size kept: HDF5
     * opens it and the read of /logits fails */
    char junk[4096];
    memset(junk, 0xFF, sizeof junk);
    REQUIRE(fseek(f, size / 2, SEEK_SET) == 0 && fwrite(junk, 1, sizeof junk, f) == sizeof junk,
            "cannot write into %s", in);
    fclose(f);
    int rc = run_cmd(out, sizeof out, "%s apply naive_sort --in %s --out %s --force", bin, in,
                     res);
    CHECK(rc == 1 && strstr(out, in) && strstr(out, "cannot read /logits (f16 [200, 3000])"),
          "%s with damaged data: want exit 1 naming it, the dataset and its type; got %d: %s",
          in, rc, out);
    for (int part = 3; part >= 1; part--) { /* shorter each time */
        REQUIRE(truncate(in, size * part / 4) == 0, "cannot truncate %s", in);
        rc = run_cmd(out, sizeof out, "%s apply naive_sort --in %s --out %s --force", bin, in,
                     res);
        CHECK(rc == 1 && strstr(out, in), "%s cut to %d/4 of %ld bytes: want exit 1 naming it, "
              "got %d: %s", in, part, size, rc, out);
    }
}
