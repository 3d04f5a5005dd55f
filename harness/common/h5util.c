/* h5util.c — see h5util.h. */
#include <stdlib.h>
#include <string.h>

#include "h5util.h"
#include "limits_files.h"

void h5_quiet(void) { H5Eset_auto2(H5E_DEFAULT, NULL, NULL); }

static hid_t utf8_vlen(void)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    H5Tset_cset(t, H5T_CSET_UTF8);
    return t;
}

int h5_set_attr_str(hid_t obj, const char *name, const char *value)
{
    hid_t t = utf8_vlen(), s = H5Screate(H5S_SCALAR);
    if (H5Aexists(obj, name) > 0)
        H5Adelete(obj, name);
    hid_t a = H5Acreate2(obj, name, t, s, H5P_DEFAULT, H5P_DEFAULT);
    int rc = a < 0 || H5Awrite(a, t, &value) < 0 ? -1 : 0;
    if (a >= 0)
        H5Aclose(a);
    H5Sclose(s);
    H5Tclose(t);
    return rc;
}

static int set_attr_num(hid_t obj, const char *name, hid_t type, const void *value)
{
    hid_t s = H5Screate(H5S_SCALAR);
    if (H5Aexists(obj, name) > 0)
        H5Adelete(obj, name);
    hid_t a = H5Acreate2(obj, name, type, s, H5P_DEFAULT, H5P_DEFAULT);
    int rc = a < 0 || H5Awrite(a, type, value) < 0 ? -1 : 0;
    if (a >= 0)
        H5Aclose(a);
    H5Sclose(s);
    return rc;
}

int h5_set_attr_f64(hid_t obj, const char *name, double value)
{
    return set_attr_num(obj, name, H5T_NATIVE_DOUBLE, &value);
}

int h5_set_attr_i64(hid_t obj, const char *name, long long value)
{
    return set_attr_num(obj, name, H5T_NATIVE_LLONG, &value);
}

int h5_get_attr_str(hid_t obj, const char *name, char *buf, size_t n)
{
    buf[0] = 0;
    if (H5Aexists(obj, name) <= 0)
        return -1;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT), ft = H5Aget_type(a);
    int rc = -1;
    if (H5Tget_class(ft) == H5T_STRING) {
        if (H5Tis_variable_str(ft) > 0) {
            char *value = NULL;
            hid_t mt = H5Tcopy(ft);
            if (H5Aread(a, mt, &value) >= 0 && value) {
                snprintf(buf, n, "%s", value);
                H5free_memory(value);
                rc = 0;
            }
            H5Tclose(mt);
        } else {
            size_t len = H5Tget_size(ft);
            char *tmp = len < (1u << 30) ? calloc(1, len + 1) : NULL;
            if (tmp && H5Aread(a, ft, tmp) >= 0) {
                snprintf(buf, n, "%s", tmp);
                rc = 0;
            }
            free(tmp);
        }
    } else {
        double v;
        if (H5Aread(a, H5T_NATIVE_DOUBLE, &v) >= 0) {
            snprintf(buf, n, "%.17g", v);
            rc = 0;
        }
    }
    H5Tclose(ft);
    H5Aclose(a);
    return rc;
}

int h5_write_text(hid_t loc, const char *name, const char *text)
{
    hid_t t = utf8_vlen(), s = H5Screate(H5S_SCALAR);
    hid_t d = H5Dcreate2(loc, name, t, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int rc = d < 0 || H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, &text) < 0 ? -1 : 0;
    if (d >= 0)
        H5Dclose(d);
    H5Sclose(s);
    H5Tclose(t);
    return rc;
}

char *h5_read_text(hid_t loc, const char *name)
{
    if (H5Lexists(loc, name, H5P_DEFAULT) <= 0)
        return NULL;
    hid_t d = H5Dopen2(loc, name, H5P_DEFAULT);
    if (d < 0)
        return NULL;
    hid_t t = utf8_vlen(), s = H5Dget_space(d);
    char *text = NULL, *copy = NULL;
    if (H5Sget_simple_extent_npoints(s) == 1 &&
        H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, &text) >= 0 && text) {
        copy = strdup(text);
        H5Dvlen_reclaim(t, s, H5P_DEFAULT, &text);
    }
    H5Sclose(s);
    H5Tclose(t);
    H5Dclose(d);
    return copy;
}

hid_t h5_deflated_dcpl(int rank, const hsize_t *chunk, int level)
{
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    const int deflate = H5Zfilter_avail(H5Z_FILTER_DEFLATE) > 0;
    if (dcpl >= 0 && (H5Pset_chunk(dcpl, rank, chunk) < 0 ||
                      (deflate && H5Pset_deflate(dcpl, (unsigned)level) < 0))) {
        H5Pclose(dcpl);
        return -1;
    }
    return dcpl;
}

int h5_exists(hid_t file, const char *path)
{
    char partial[512];
    size_t len = strlen(path);
    if (len >= sizeof partial)
        return 0;
    for (size_t i = 1; i <= len; i++) {
        if (path[i] != '/' && path[i] != 0)
            continue;
        memcpy(partial, path, i);
        partial[i] = 0;
        if (H5Lexists(file, partial, H5P_DEFAULT) <= 0)
            return 0;
    }
    return 1;
}

hssize_t h5_rows_checked(hid_t d, size_t elem_size)
{
    hid_t s = d < 0 ? -1 : H5Dget_space(d);
    const hssize_t n = s < 0 ? -1 : H5Sget_simple_extent_npoints(s);
    const int ndims = s < 0 ? -1 : H5Sget_simple_extent_ndims(s);
    if (s >= 0)
        H5Sclose(s);
    if (n < 0 || ndims != 1 || elem_size == 0)
        return -1;
    return h5_storage_can_hold(d, (double)n * (double)elem_size) ? n : -1;
}

double h5_stored_bytes(hid_t d)
{
    double stored = (double)H5Dget_storage_size(d);
    hid_t f = H5Iget_file_id(d);
    hsize_t file_bytes = 0;
    if (f >= 0 && H5Fget_filesize(f, &file_bytes) >= 0 && stored > (double)file_bytes)
        stored = (double)file_bytes; /* the layout's own claim is no larger than the file */
    if (f >= 0)
        H5Fclose(f);
    return stored;
}

int h5_storage_can_hold(hid_t d, double declared_bytes)
{
    return declared_bytes <= h5_stored_bytes(d) * TKP_H5_INFLATE_RATIO + TKP_H5_UNSTORED_BYTES;
}

int h5_cells_open(hid_t sweeps, const char *name, struct h5_cells *c, char *why, size_t n)
{
    char path[512];
    c->d = c->ft = -1;
    c->n = -1;
    if ((size_t)snprintf(path, sizeof path, "%s/cells", name) >= sizeof path ||
        !h5_exists(sweeps, path))
        return 0;
    c->d = H5Dopen2(sweeps, path, H5P_DEFAULT);
    c->ft = c->d < 0 ? -1 : H5Dget_type(c->d);
    hid_t s = c->d < 0 ? -1 : H5Dget_space(c->d);
    const int ndims = s < 0 ? -1 : H5Sget_simple_extent_ndims(s);
    if (s >= 0)
        H5Sclose(s);
    const size_t row_size = c->ft < 0 ? 0 : H5Tget_size(c->ft);
    c->n = ndims == 1 && row_size > 0 ? h5_rows_checked(c->d, row_size) : -1;
    if (c->ft < 0 || ndims < 0)
        snprintf(why, n, "it cannot be read");
    else if (ndims != 1 || H5Tget_class(c->ft) != H5T_COMPOUND)
        snprintf(why, n, "it is not a 1-D compound table");
    else if (c->n < 0)
        snprintf(why, n, "it declares more rows than the file stores (a corrupt file?)");
    else
        return 1;
    h5_cells_close(c);
    return -1;
}

void h5_cells_close(struct h5_cells *c)
{
    if (c->ft >= 0)
        H5Tclose(c->ft);
    if (c->d >= 0)
        H5Dclose(c->d);
    c->d = c->ft = -1;
}

hid_t h5_member_type(enum h5_kind kind, size_t size)
{
    hid_t t = kind == H5_KIND_I64   ? H5Tcopy(H5T_NATIVE_INT64)
              : kind == H5_KIND_F64 ? H5Tcopy(H5T_NATIVE_DOUBLE)
                                    : H5Tcopy(H5T_C_S1);
    if (kind == H5_KIND_STR && t >= 0)
        H5Tset_size(t, size);
    return t;
}
