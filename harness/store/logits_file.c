/* logits_file.c — see logits_file.h. The 16-bit floats are HDF5 float types with the fields of
 * bf16 and fp16 (docs/DESIGN.md, "The logits file"): HDF5 1.10 has no native half, so they are
 * built from IEEE float32 with fewer bits, and a file's type is recognised by its fields. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../algos/common/gate.h"
#include "file_error.h"
#include "h5util.h"
#include "limits_files.h"
#include "logits_file.h"
#include "read_guard.h"

/* A dataset's rank and up to two dimensions; -1 when its dataspace cannot be read. */
static int dataset_shape(hid_t d, hsize_t dims[2])
{
    hid_t s = H5Dget_space(d);
    if (s < 0)
        return -1;
    int rank = H5Sget_simple_extent_ndims(s);
    if (rank >= 1 && rank <= 2 && H5Sget_simple_extent_dims(s, dims, NULL) < 0)
        rank = -1;
    H5Sclose(s);
    return rank;
}

/* The HDF5 type of a 16-bit logits type, little-endian (bf16: sign 15, exponent 7..14 bias 127,
 * mantissa 0..6; fp16: sign 15, exponent 10..14 bias 15, mantissa 0..9); the caller closes
 * it. */
static hid_t half_type(enum tkp_dtype t)
{
    const int bf16 = t == TKP_BF16;
    hid_t h = H5Tcopy(H5T_IEEE_F32LE);
    if (h < 0)
        return -1;
    if (H5Tset_fields(h, 15, bf16 ? 7 : 10, bf16 ? 8 : 5, 0, bf16 ? 7 : 10) < 0 ||
        H5Tset_precision(h, 16) < 0 || H5Tset_size(h, 2) < 0 ||
        H5Tset_ebias(h, bf16 ? 127 : 15) < 0) {
        H5Tclose(h);
        return -1;
    }
    return h;
}

/* How /logits is stored: as a type read through HDF5's conversion to float32 (an integer, the
 * IEEE float32 or float64), as bf16 or fp16 (its raw encodings read), or neither. */
struct stored_type {
    int is_half;          /* bf16 or fp16 */
    enum tkp_dtype dtype; /* of a 16-bit one */
    int swap;             /* big-endian encodings: swap the bytes after reading */
    char text[160];       /* the type in words, for an error */
};

/* Is float type t of the IEEE layout with these fields? */
static int float_fields_are(hid_t t, size_t size, size_t spos, size_t epos, size_t esize,
                            size_t mpos, size_t msize, size_t ebias)
{
    size_t f[5];
    return H5Tget_size(t) == size && H5Tget_fields(t, &f[0], &f[1], &f[2], &f[3], &f[4]) >= 0 &&
           f[0] == spos && f[1] == epos && f[2] == esize && f[3] == mpos && f[4] == msize &&
           H5Tget_ebias(t) == ebias && H5Tget_offset(t) == 0;
}

/* Classify /logits' type; -1 (with st->text) when it is a float of a layout this reader does
 * not know: a 16-bit float other than bf16 and fp16, or a float32/float64 not of IEEE's. */
static int classify_type(hid_t d, struct stored_type *st)
{
    memset(st, 0, sizeof *st);
    hid_t t = H5Dget_type(d);
    if (t < 0)
        return -1;
    int rc = 0;
    if (H5Tget_class(t) == H5T_FLOAT) {
        size_t f[5] = { 0, 0, 0, 0, 0 };
        H5Tget_fields(t, &f[0], &f[1], &f[2], &f[3], &f[4]);
        snprintf(st->text, sizeof st->text, "a %zu-byte float (sign bit %zu, exponent bits "
                 "%zu..%zu bias %zu, mantissa bits %zu..%zu)", H5Tget_size(t), f[0], f[1],
                 f[1] + f[2] - 1, H5Tget_ebias(t), f[3], f[3] + f[4] - 1);
        st->swap = H5Tget_order(t) == H5T_ORDER_BE;
        if (float_fields_are(t, 2, 15, 7, 8, 0, 7, 127))
            st->is_half = 1, st->dtype = TKP_BF16;
        else if (float_fields_are(t, 2, 15, 10, 5, 0, 10, 15))
            st->is_half = 1, st->dtype = TKP_F16;
        else if (!float_fields_are(t, 4, 31, 23, 8, 0, 23, 127) &&
                 !float_fields_are(t, 8, 63, 52, 11, 0, 52, 1023))
            rc = -1;
    }
    H5Tclose(t);
    return rc;
}

/* Read /logits' 16-bit encodings into b->logits16 as the file holds them (the memory type is
 * the file's own: no conversion), then their exact upcast into b->logits. */
static int read_half(hid_t d, const struct stored_type *st, struct tkp_batch *b)
{
    hid_t mem = H5Dget_type(d);
    int rc = mem < 0 || H5Dread(d, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, b->logits16) < 0;
    if (mem >= 0)
        H5Tclose(mem);
    const size_t cells = (size_t)b->batch * (size_t)b->vocab;
    for (size_t i = 0; !rc && st->swap && i < cells; i++)
        b->logits16[i] = (uint16_t)((b->logits16[i] >> 8) | (b->logits16[i] << 8));
    if (!rc)
        tkp_batch_upcast(b);
    return rc ? -1 : 0;
}

static int numeric(hid_t d)
{
    hid_t t = H5Dget_type(d);
    if (t < 0)
        return 0;
    H5T_class_t c = H5Tget_class(t);
    H5Tclose(t);
    return c == H5T_FLOAT || c == H5T_INTEGER;
}

/* "(a, b)" or "(a)" for an error message; the rank when it is neither 1 nor 2. */
static void shape_text(int rank, const hsize_t dims[2], char *buf, size_t n)
{
    if (rank == 2)
        snprintf(buf, n, "(%llu, %llu)", (unsigned long long)dims[0], (unsigned long long)dims[1]);
    else if (rank == 1)
        snprintf(buf, n, "(%llu)", (unsigned long long)dims[0]);
    else
        snprintf(buf, n, "of rank %d", rank);
}

/* Convert the n values of /name read as `mem` (NATIVE_DOUBLE, _INT64 or _UINT64) in raw into
 * out (int32, float or uint64: elem bytes), each through the gate's domain (docs/ROBUSTNESS.md,
 * "Numbers that enter"): a /k of 2.7, NaN or 1e20 is refused naming the file, the row and the
 * value, never cast. */
static int checked_rows(const char *path, const char *name, const struct tkp_domain *dom,
                        hid_t mem, const void *raw, hsize_t n, void *out, size_t elem,
                        struct tkp_error *err)
{
    char what[600];
    for (hsize_t r = 0; r < n; r++) {
        snprintf(what, sizeof what, "%s: /%s[%llu]", path, name, (unsigned long long)r);
        double v;
        int ok = 1;
        if (mem == H5T_NATIVE_DOUBLE)
            v = ((const double *)raw)[r], ok = !tkp_gate_number(dom, what, v, err);
        else if (mem == H5T_NATIVE_INT64)
            v = (double)((const int64_t *)raw)[r];
        else
            v = (double)((const uint64_t *)raw)[r];
        if (mem != H5T_NATIVE_DOUBLE && elem != sizeof(uint64_t))
            ok = !tkp_gate_number(dom, what, v, err); /* int32 and float: exact as doubles */
        else if (mem == H5T_NATIVE_INT64 && ((const int64_t *)raw)[r] < 0)
            ok = !tkp_gate_number(dom, what, v, err); /* a negative seed or offset */
        if (!ok)
            return TKP_EINVAL;
        if (elem == sizeof(uint64_t))
            ((uint64_t *)out)[r] = mem == H5T_NATIVE_DOUBLE ? (uint64_t)v
                                   : mem == H5T_NATIVE_INT64 ? (uint64_t)((const int64_t *)raw)[r]
                                                             : ((const uint64_t *)raw)[r];
        else if (elem == sizeof(int32_t) && dom->integer)
            ((int32_t *)out)[r] = (int32_t)v;
        else
            ((float *)out)[r] = (float)v;
    }
    return TKP_OK;
}

/* The memory type that reads the dataset's values exactly: double for floats of any width,
 * int64 or uint64 for integers by their sign. */
static hid_t exact_memtype(hid_t d)
{
    hid_t t = H5Dget_type(d);
    const H5T_class_t c = t < 0 ? H5T_NO_CLASS : H5Tget_class(t);
    const int sign = c == H5T_INTEGER ? (int)H5Tget_sign(t) : 0;
    if (t >= 0)
        H5Tclose(t);
    return c == H5T_FLOAT ? H5T_NATIVE_DOUBLE : sign == H5T_SGN_2 ? H5T_NATIVE_INT64
                                                                   : H5T_NATIVE_UINT64;
}

/* Read the optional per-row vector `name` (at most `batch` numbers, of any numeric HDF5 type:
 * rows it leaves out keep the defaults) into out[0..batch), each value in domain dom. */
static int read_row_vector(hid_t f, const char *path, const char *name,
                           const struct tkp_domain *dom, int64_t batch, void *out, size_t elem,
                           struct tkp_error *err)
{
    if (H5Lexists(f, name, H5P_DEFAULT) <= 0)
        return TKP_OK;
    if (!out) {
        tkp_error_set(err, "%s: out of memory for /%s", path, name);
        return TKP_ENOMEM;
    }
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    hsize_t dims[2] = { 0, 0 };
    int rank = d < 0 ? -1 : dataset_shape(d, dims);
    if (rank != 1 || !numeric(d) || dims[0] > (hsize_t)batch) {
        char shape[64];
        shape_text(rank, dims, shape, sizeof shape);
        tkp_error_set(err, "%s: /%s must be a numeric vector of at most %lld rows (one per "
                      "/logits row), got %s%s", path, name, (long long)batch,
                      d < 0 ? "an unreadable dataset" : shape,
                      d >= 0 && rank == 1 && !numeric(d) ? " of a non-numeric type" : "");
        if (d >= 0)
            H5Dclose(d);
        return TKP_EINVAL;
    }
    const hid_t mem = exact_memtype(d);
    void *raw = malloc(8 * (dims[0] ? dims[0] : 1));
    int rc = !raw || (dims[0] > 0 && H5Dread(d, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, raw) < 0);
    if (rc)
        tkp_error_set(err, "%s: cannot read /%s%s", path, name, raw ? "" : " (out of memory)");
    else
        rc = checked_rows(path, name, dom, mem, raw, dims[0], out, elem, err);
    free(raw);
    H5Dclose(d);
    return rc ? TKP_EINVAL : TKP_OK;
}

/* The optional per-row inputs (docs/DESIGN.md, "The logits file"): /seed and /offset uint64
 * and /min_p float32, one per /logits row, read into b's arrays (left NULL when the file has
 * none). A /seed or /offset must cover every row: it switches the row's keying
 * (docs/SEMANTICS.md, "Sampling: two keying modes"); a shorter /min_p leaves min-p off on the
 * rows it leaves out. */
static const struct row_input {
    const char *name;
    size_t elem, field; /* field: offset of the pointer in struct tkp_batch */
    int every_row;
    const struct tkp_domain *dom;
} row_inputs[] = {
    { "seed", sizeof(uint64_t), offsetof(struct tkp_batch, seed), 1, &tkp_dom_seed },
    { "offset", sizeof(uint64_t), offsetof(struct tkp_batch, offset), 1, &tkp_dom_offset },
    { "min_p", sizeof(float), offsetof(struct tkp_batch, min_p), 0, &tkp_dom_min_p },
};
#define ROW_INPUTS (sizeof row_inputs / sizeof row_inputs[0])

static void **row_input_slot(struct tkp_batch *b, const struct row_input *in)
{
    return (void **)((char *)b + in->field);
}

/* The type a row input is written as (tkp_logits_write): float32 or uint64. */
static hid_t row_input_type(const struct row_input *in)
{
    return in->elem == sizeof(float) ? H5T_NATIVE_FLOAT : H5T_NATIVE_UINT64;
}

static int read_row_inputs(hid_t f, const char *path, struct tkp_batch *b, struct tkp_error *err)
{
    for (size_t i = 0; i < ROW_INPUTS; i++) {
        const struct row_input *in = &row_inputs[i];
        if (H5Lexists(f, in->name, H5P_DEFAULT) <= 0)
            continue;
        hid_t d = H5Dopen2(f, in->name, H5P_DEFAULT);
        hsize_t dims[2] = { 0, 0 };
        const int rank = d < 0 ? -1 : dataset_shape(d, dims);
        if (d >= 0)
            H5Dclose(d);
        if (in->every_row && (rank != 1 || dims[0] != (hsize_t)b->batch)) {
            tkp_error_set(err, "%s: /%s must hold one number per /logits row (%lld), got %lld",
                          path, in->name, (long long)b->batch, rank == 1 ? (long long)dims[0] : -1LL);
            return TKP_EINVAL;
        }
        void **slot = row_input_slot(b, in);
        *slot = calloc((size_t)(b->batch ? b->batch : 1), in->elem);
        int rc = read_row_vector(f, path, in->name, in->dom, b->batch, *slot, in->elem, err);
        if (rc)
            return rc;
    }
    return TKP_OK;
}

/* Check /logits' declared shape against the limits (limits_files.h) before it sizes a buffer. */
static int check_logits_shape(const char *path, int rank, const hsize_t dims[2], int is_numeric,
                              struct tkp_error *err)
{
    char shape[64];
    shape_text(rank, dims, shape, sizeof shape);
    if (rank != 2 || !is_numeric || dims[1] < 1) {
        tkp_error_set(err, "%s: /logits must be a 2-D numeric [B, V] dataset with V >= 1, got "
                      "%s%s", path, rank < 0 ? "an unreadable dataspace" : shape,
                      is_numeric ? "" : " of a non-numeric type");
        return TKP_EINVAL;
    }
    if (dims[0] > (hsize_t)TKP_MAX_LOGITS_ROWS || dims[1] > (hsize_t)TKP_MAX_LOGITS_VOCAB ||
        (dims[0] > 0 && dims[1] > (hsize_t)TKP_MAX_LOGITS_ELEMS / dims[0])) {
        tkp_error_set(err, "%s: /logits shape %s is too large (limits: B <= %lld, V <= %lld, "
                      "B x V <= %lld elements, TKP_MAX_LOGITS_* in harness/common/limits_files.h)",
                      path, shape, (long long)TKP_MAX_LOGITS_ROWS, (long long)TKP_MAX_LOGITS_VOCAB,
                      (long long)TKP_MAX_LOGITS_ELEMS);
        return TKP_EINVAL;
    }
    return TKP_OK;
}

/* Can /logits' stored bytes hold its declared shape (h5util.h, h5_storage_can_hold)? A header
 * that declares more than the file holds is refused before the shape sizes a buffer. */
static int check_logits_storage(hid_t d, const char *path, const hsize_t dims[2],
                                struct tkp_error *err)
{
    hid_t t = H5Dget_type(d);
    const double elem = t < 0 ? 4.0 : (double)H5Tget_size(t);
    if (t >= 0)
        H5Tclose(t);
    const double declared = (double)dims[0] * (double)dims[1] * elem;
    if (h5_storage_can_hold(d, declared))
        return TKP_OK;
    tkp_error_set(err, "%s: /logits declares shape [%llu, %llu] (%.0f bytes) but the file stores "
                  "%.0f bytes of it, more than deflate can inflate (TKP_H5_INFLATE_RATIO in "
                  "harness/common/limits_files.h): the file is truncated or corrupt", path,
                  (unsigned long long)dims[0], (unsigned long long)dims[1], declared,
                  h5_stored_bytes(d));
    return TKP_EINVAL;
}

/* Allocate b's buffers for b->batch x b->vocab (checked by the caller) of type `dtype`. */
static int alloc_batch(const char *path, enum tkp_dtype dtype, struct tkp_batch *b,
                       struct tkp_error *err)
{
    size_t rows = (size_t)(b->batch ? b->batch : 1);
    b->logits = malloc(sizeof(float) * rows * (size_t)b->vocab);
    b->dtype = dtype;
    b->logits16 = dtype == TKP_F32 ? NULL : malloc(sizeof(uint16_t) * rows * (size_t)b->vocab);
    b->k = malloc(sizeof(int32_t) * rows);
    b->p = malloc(sizeof(float) * rows);
    if (b->logits && b->k && b->p && (dtype == TKP_F32 || b->logits16))
        return TKP_OK;
    tkp_error_set(err, "%s: out of memory for /logits of shape (%lld, %lld) (%.3g GB)", path,
                  (long long)b->batch, (long long)b->vocab,
                  4e-9 * (double)rows * (double)b->vocab);
    return TKP_ENOMEM;
}

/* Read the file in this process (libhdf5 trusted with it). */
static int read_here(const char *path, int32_t k_default, float p_default, struct tkp_batch *b,
                     struct tkp_error *err)
{
    memset(b, 0, sizeof *b);
    h5_quiet();
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) { /* missing, locked or not HDF5, said as such */
        tkp_read_open_failed(path, err);
        return TKP_EINVAL;
    }
    int rc = TKP_EINVAL;
    hid_t d = H5Lexists(f, "logits", H5P_DEFAULT) > 0 ? H5Dopen2(f, "logits", H5P_DEFAULT) : -1;
    hsize_t dims[2] = { 0, 0 };
    struct stored_type st;
    if (d < 0) {
        tkp_error_set(err, "%s: no /logits dataset", path);
    } else if (classify_type(d, &st) < 0) {
        tkp_error_set(err, "%s: /logits is %s; the floats read are bf16, fp16 (HDF5 floats of "
                      "their fields), IEEE float32 and float64", path,
                      st.text[0] ? st.text : "of an unreadable type");
    } else if ((rc = check_logits_shape(path, dataset_shape(d, dims), dims, numeric(d), err)) ==
               TKP_OK) {
        b->batch = (int64_t)dims[0];
        b->vocab = (int64_t)dims[1];
        rc = check_logits_storage(d, path, dims, err);
        if (rc == TKP_OK)
            rc = alloc_batch(path, st.is_half ? st.dtype : TKP_F32, b, err);
        if (rc == TKP_OK && b->batch > 0 &&
            (st.is_half ? read_half(d, &st, b)
                        : H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, b->logits)) < 0) {
            tkp_error_set(err, "%s: cannot read /logits (%s [%lld, %lld]): the dataset is "
                          "damaged or shorter than its shape", path,
                          tkp_dtype_name(b->dtype), (long long)b->batch, (long long)b->vocab);
            rc = TKP_EINVAL;
        }
        if (rc == TKP_OK) {
            for (int64_t r = 0; r < b->batch; r++) {
                b->k[r] = k_default;
                b->p[r] = p_default;
            }
            rc = read_row_vector(f, path, "k", &tkp_dom_k, b->batch, b->k, sizeof(int32_t),
                                 err);
            if (!rc)
                rc = read_row_vector(f, path, "p", &tkp_dom_p, b->batch, b->p, sizeof(float),
                                     err);
            if (!rc)
                rc = read_row_inputs(f, path, b, err);
        }
    }
    if (d >= 0)
        H5Dclose(d);
    H5Fclose(f);
    if (rc)
        tkp_batch_free(b);
    return rc;
}

/* The per-row defaults of a read (the arg of read_to_stream). */
struct row_defaults {
    int32_t k;
    float p;
};

/* The child's reader (a tkp_read_fn): the file read here, then written to `out` as the shape
 * and the element type (three int64) and the three arrays, in native byte order: the logits
 * as float32, or for a 16-bit file as their encodings (upcast again on the other side). */
static int read_to_stream(const char *path, const void *arg, FILE *out, struct tkp_error *err)
{
    const struct row_defaults *d = arg;
    struct tkp_batch b;
    int rc = read_here(path, d->k, d->p, &b, err);
    if (rc)
        return rc;
    const int64_t shape[3] = { b.batch, b.vocab, (int64_t)b.dtype };
    const size_t rows = (size_t)b.batch, cells = rows * (size_t)b.vocab;
    const void *values = tkp_batch_input(&b);
    const size_t size = (size_t)tkp_dtype_size(b.dtype);
    int64_t present = 0; /* bit i: row_inputs[i] follows */
    for (size_t i = 0; i < ROW_INPUTS; i++)
        present |= *row_input_slot(&b, &row_inputs[i]) ? (int64_t)1 << i : 0;
    int short_write = fwrite(shape, sizeof shape, 1, out) != 1 ||
                      fwrite(values, size, cells, out) != cells ||
                      fwrite(b.k, sizeof(int32_t), rows, out) != rows ||
                      fwrite(b.p, sizeof(float), rows, out) != rows ||
                      fwrite(&present, sizeof present, 1, out) != 1;
    for (size_t i = 0; i < ROW_INPUTS && !short_write; i++)
        if (present >> i & 1)
            short_write = fwrite(*row_input_slot(&b, &row_inputs[i]), row_inputs[i].elem, rows,
                                 out) != rows;
    if (short_write) {
        tkp_error_set(err, "%s: cannot pass the logits on (%s)", path, strerror(errno));
        rc = TKP_ENOMEM;
    }
    tkp_batch_free(&b);
    return rc;
}

/* The batch read_to_stream wrote to `in` (rewound here). */
static int batch_from_stream(const char *path, FILE *in, struct tkp_batch *b,
                             struct tkp_error *err)
{
    int64_t shape[3];
    if (fseek(in, 0, SEEK_SET) != 0 || fread(shape, sizeof shape, 1, in) != 1 ||
        shape[0] < 0 || shape[1] < 1 || shape[0] > TKP_MAX_LOGITS_ROWS ||
        shape[1] > TKP_MAX_LOGITS_VOCAB || shape[0] * shape[1] > TKP_MAX_LOGITS_ELEMS ||
        shape[2] < 0 || shape[2] >= TKP_DTYPE_COUNT) {
        tkp_error_set(err, "%s: the logits did not come back from the reading process", path);
        return TKP_EINVAL;
    }
    b->batch = shape[0];
    b->vocab = shape[1];
    const enum tkp_dtype dtype = (enum tkp_dtype)shape[2];
    int rc = alloc_batch(path, dtype, b, err);
    const size_t rows = (size_t)b->batch, cells = rows * (size_t)b->vocab;
    void *values = dtype == TKP_F32 ? (void *)b->logits : (void *)b->logits16;
    int64_t present = 0;
    int short_read = !rc && (fread(values, (size_t)tkp_dtype_size(dtype), cells, in) != cells ||
                             fread(b->k, sizeof(int32_t), rows, in) != rows ||
                             fread(b->p, sizeof(float), rows, in) != rows ||
                             fread(&present, sizeof present, 1, in) != 1);
    for (size_t i = 0; i < ROW_INPUTS && !rc && !short_read; i++) {
        if (!(present >> i & 1))
            continue;
        void **slot = row_input_slot(b, &row_inputs[i]);
        *slot = malloc(row_inputs[i].elem * (rows ? rows : 1));
        short_read = !*slot || fread(*slot, row_inputs[i].elem, rows, in) != rows;
    }
    if (short_read) {
        tkp_error_set(err, "%s: the logits came back short from the reading process", path);
        rc = TKP_EINVAL;
    }
    if (!rc && dtype != TKP_F32)
        tkp_batch_upcast(b);
    if (rc)
        tkp_batch_free(b);
    return rc;
}

/* A corrupt file can crash, hang or silently overrun a buffer of libhdf5 itself (make fuzz
 * finds all three), so the file is read in a child process only (read_guard.h), which passes
 * the arrays back through an in-memory file: libhdf5 never touches this process's memory on
 * it, and a crash or a hang there is an error naming the file (docs/USAGE.md, "A five-minute
 * tour"). The cost is one copy of the arrays. */
int tkp_logits_read(const char *path, int32_t k_default, float p_default, struct tkp_batch *b,
                    struct tkp_error *err)
{
    memset(b, 0, sizeof *b);
    int fd = memfd_create("topkp-logits", MFD_CLOEXEC);
    FILE *pass = fd >= 0 ? fdopen(fd, "w+b") : tmpfile();
    if (!pass) {
        if (fd >= 0)
            close(fd);
        tkp_error_set(err, "%s: cannot make the in-memory file to read it through (%s)", path,
                      strerror(errno));
        return TKP_ENOMEM;
    }
    const struct row_defaults d = { k_default, p_default };
    int crashed;
    int rc = tkp_read_guarded(read_to_stream, path, &d, pass, err, &crashed);
    if (!rc)
        rc = batch_from_stream(path, pass, b, err);
    fclose(pass);
    return rc;
}

void tkp_batch_free(struct tkp_batch *b)
{
    free(b->logits);
    free(b->logits16);
    free(b->k);
    free(b->p);
    free(b->seed);
    free(b->offset);
    free(b->min_p);
    memset(b, 0, sizeof *b);
}

void tkp_encode_16bit(const float *x, size_t n, enum tkp_dtype t, uint16_t *enc, float *up)
{
    for (size_t i = 0; i < n; i++) {
        enc[i] = t == TKP_BF16 ? tkp_f32_to_bf16(x[i]) : tkp_f32_to_f16(x[i]);
        up[i] = t == TKP_BF16 ? tkp_bf16_to_f32(enc[i]) : tkp_f16_to_f32(enc[i]);
    }
}

void tkp_batch_upcast(struct tkp_batch *b)
{
    const size_t cells = (size_t)b->batch * (size_t)b->vocab;
    for (size_t i = 0; i < cells; i++)
        b->logits[i] = b->dtype == TKP_BF16 ? tkp_bf16_to_f32(b->logits16[i])
                                            : tkp_f16_to_f32(b->logits16[i]);
}

int tkp_batch_to_dtype(struct tkp_batch *b, enum tkp_dtype t, struct tkp_error *err)
{
    const size_t cells = (size_t)b->batch * (size_t)b->vocab;
    uint16_t *enc = NULL;
    if (t != TKP_F32 && !(enc = malloc(sizeof(uint16_t) * (cells ? cells : 1)))) {
        tkp_error_set(err, "out of host memory for %lld x %lld %s logits", (long long)b->batch,
                      (long long)b->vocab, tkp_dtype_name(t));
        return TKP_ENOMEM;
    }
    if (enc)
        tkp_encode_16bit(b->logits, cells, t, enc, b->logits);
    free(b->logits16);
    b->logits16 = enc;
    b->dtype = t;
    return TKP_OK;
}

static int write_array(hid_t f, const char *name, hid_t type, int rank, const hsize_t *dims,
                       const void *data)
{
    hid_t s = H5Screate_simple(rank, dims, NULL);
    hid_t dcpl = H5P_DEFAULT; /* an empty dataset stays contiguous: a chunk has no size 0 */
    if (dims[0] > 0 && (rank == 1 || dims[1] > 0)) {
        hsize_t chunk[2] = { dims[0] < 64 ? dims[0] : 64, rank == 2 ? dims[1] : 1 };
        if (rank == 2 && chunk[0] * chunk[1] > (1u << 20))
            chunk[0] = 1;
        dcpl = h5_deflated_dcpl(rank, chunk, H5_DEFLATE_LOGITS);
    }
    hid_t d = dcpl < 0 ? -1 : H5Dcreate2(f, name, type, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    int rc = d < 0 || H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0 ? -1 : 0;
    if (d >= 0)
        H5Dclose(d);
    if (dcpl >= 0 && dcpl != H5P_DEFAULT)
        H5Pclose(dcpl);
    H5Sclose(s);
    return rc;
}

int tkp_logits_write(const char *path, const struct tkp_batch *b, const char *const *attrs,
                     struct tkp_error *err)
{
    h5_quiet();
    errno = 0;
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0) {
        tkp_create_error(err, path, errno);
        return TKP_EINVAL;
    }
    hsize_t dims[2] = { (hsize_t)b->batch, (hsize_t)b->vocab };
    hid_t type = b->dtype == TKP_F32 ? H5Tcopy(H5T_NATIVE_FLOAT) : half_type(b->dtype);
    int rc = type < 0 || write_array(f, "logits", type, 2, dims, tkp_batch_input(b)) ||
             (b->dtype != TKP_F32 && h5_set_attr_str(f, "dtype", tkp_dtype_name(b->dtype))) ||
             (b->k && write_array(f, "k", H5T_NATIVE_INT32, 1, dims, b->k)) ||
             (b->p && write_array(f, "p", H5T_NATIVE_FLOAT, 1, dims, b->p));
    for (size_t i = 0; !rc && i < ROW_INPUTS; i++) {
        void *data = *row_input_slot((struct tkp_batch *)b, &row_inputs[i]);
        rc = data && write_array(f, row_inputs[i].name, row_input_type(&row_inputs[i]), 1, dims,
                                 data);
    }
    for (int i = 0; !rc && attrs && attrs[i]; i += 2)
        rc = h5_set_attr_str(f, attrs[i], attrs[i + 1]);
    if (type >= 0)
        H5Tclose(type);
    if (H5Fclose(f) < 0)
        rc = -1;
    if (rc)
        tkp_error_set(err, "%s: write failed", path);
    return rc ? TKP_EINVAL : TKP_OK;
}

int tkp_apply_write(const char *path, int64_t batch, int64_t vocab, const uint8_t *kept,
                    const int64_t *samples, int32_t draws, const char *algo, const char *backend,
                    const char *options, struct tkp_error *err)
{
    h5_quiet();
    errno = 0;
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0) {
        tkp_create_error(err, path, errno);
        return TKP_EINVAL;
    }
    int rc = 0;
    if (kept) {
        hsize_t dims[2] = { (hsize_t)batch, (hsize_t)vocab };
        rc = write_array(f, "kept", H5T_NATIVE_UINT8, 2, dims, kept);
    }
    if (!rc && samples) {
        hsize_t dims[2] = { (hsize_t)batch, (hsize_t)draws };
        rc = write_array(f, "samples", H5T_NATIVE_INT64, 2, dims, samples);
    }
    rc = rc || h5_set_attr_str(f, "algo", algo) || h5_set_attr_str(f, "backend", backend) ||
         h5_set_attr_str(f, "options", options);
    if (H5Fclose(f) < 0)
        rc = -1;
    if (rc)
        tkp_error_set(err, "%s: write failed", path);
    return rc ? TKP_EINVAL : TKP_OK;
}
