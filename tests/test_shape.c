/* test_shape.c — the shape of the code (docs/DESIGN.md, "The floors"): harness/ is in rooms,
 * and a room includes only from itself and the rooms below it in one order (so no circle
 * between rooms, and nothing reaches back up); no source file passes 700 lines and no function
 * 80. Both read the sources from the checkout's root, where the tests run, and skip elsewhere. */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_util.h"
#include "test.h"

/* The rooms of harness/, top first: a file may include a header of its own room or of a room
 * after it in this table, never one before it. The Makefile puts each on the include path. */
static const char *const rooms[] = {
    "cli",     /* the command line: main.c and one file per command */
    "run",     /* `topkp run`: the cell loop, --gpus/--workers, progress */
    "peer",    /* the bridge to the Python peers */
    "config",  /* the Lua config language and its limits */
    "store",   /* the results and logits files: write, read, export, compare, merge, shards */
    "measure", /* one cell's timing and its row: repetitions, verdict, bytes */
    "plan",    /* what a cell is: the plan, the axes, its results row and key */
    "verify",  /* the oracle and its memo */
    "module",  /* the registry of modules and peers, one module on one batch */
    "device",  /* the GPU layer, or its stub */
    "common",  /* HDF5 helpers, file errors, the child-process reader, the file limits */
    NULL,
};

/* The place of room `name` in `rooms` (-1: not a room). */
static int room_rank(const char *name, size_t len)
{
    for (int i = 0; rooms[i]; i++)
        if (strlen(rooms[i]) == len && strncmp(rooms[i], name, len) == 0)
            return i;
    return -1;
}

/* The room of a resolved path under the real path of harness/ (`root`, `n` bytes): its rank,
 * -1 outside harness/ or outside every room. */
static int room_of(const char *real, const char *root, size_t n)
{
    if (strncmp(real, root, n) != 0 || real[n] != '/')
        return -1;
    const char *room = real + n + 1, *slash = strchr(room, '/');
    return slash ? room_rank(room, (size_t)(slash - room)) : -1;
}

/* Resolve `#include "name"` of a file in folder `dir` as the compiler does with the Makefile's
 * -iquote list: beside the file, then harness/, then each room. */
static int resolve(const char *dir, const char *name, char real[PATH_MAX])
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (realpath(path, real))
        return 1;
    snprintf(path, sizeof path, "harness/%s", name);
    if (realpath(path, real))
        return 1;
    for (int i = 0; rooms[i]; i++) {
        snprintf(path, sizeof path, "harness/%s/%s", rooms[i], name);
        if (realpath(path, real))
            return 1;
    }
    return 0;
}

static int is_source(const char *name)
{
    const char *dot = strrchr(name, '.');
    return dot && (!strcmp(dot, ".c") || !strcmp(dot, ".h") || !strcmp(dot, ".cu") ||
                   !strcmp(dot, ".cuh"));
}

/* Check every quoted include of harness/<room>/<file> against the order; returns how many
 * includes into harness/ it found. */
static int check_includes(int rank, const char *file, const char *root, size_t n)
{
    char dir[PATH_MAX], real[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", file);
    *strrchr(dir, '/') = 0;
    char *text = slurp(file, NULL);
    CHECK(text, "cannot read %s", file);
    int found = 0;
    for (const char *at = text; at && (at = strstr(at, "#include \"")); at++) {
        const char *name = at + strlen("#include \""), *end = strchr(name, '"');
        char inc[256];
        snprintf(inc, sizeof inc, "%.*s", end ? (int)(end - name) : 0, name);
        if (!end || !resolve(dir, inc, real))
            continue; /* version.h, made in build/ */
        const int to = room_of(real, root, n);
        found += to >= 0;
        CHECK(to < 0 || to >= rank,
              "%s includes \"%s\" (%s): room %s may include only from itself and the rooms "
              "after it in tests/test_shape.c's table (%s is above it: a circle between rooms)",
              file, inc, real + n - strlen("harness"), rooms[rank], rooms[to]);
    }
    free(text);
    return found;
}

TEST(shape_harness_rooms_include_only_downward)
{
    char root[PATH_MAX];
    DIR *top = realpath("harness", root) ? opendir("harness") : NULL;
    if (!top) {
        test_skip("not at the root of the checkout (no harness/)");
        return;
    }
    const size_t n = strlen(root);
    int files = 0, includes = 0;
    for (struct dirent *e; (e = readdir(top));) {
        if (e->d_name[0] == '.')
            continue;
        const int rank = room_rank(e->d_name, strlen(e->d_name));
        CHECK(rank >= 0, "harness/%s is outside every room of tests/test_shape.c's table: put it "
              "in a room, or add the room to the table and the Makefile's HARNESS_ROOMS",
              e->d_name);
        char room[PATH_MAX];
        snprintf(room, sizeof room, "harness/%s", e->d_name);
        DIR *d = rank >= 0 ? opendir(room) : NULL;
        for (struct dirent *f; d && (f = readdir(d));) {
            char file[PATH_MAX];
            snprintf(file, sizeof file, "%s/%s", room, f->d_name);
            if (is_source(f->d_name)) {
                files++;
                includes += check_includes(rank, file, root, n);
            }
        }
        if (d)
            closedir(d);
    }
    closedir(top);
    CHECK(files >= 40 && includes >= 100, "only %d files and %d includes into harness/ found: "
          "the scan is broken", files, includes);
}

/* ---- sizes: files and functions ---- */

/* The folders whose sources are held to the limits (every .c, .h, .cu, .cuh below them).
 * algos/ joins once its CUDA files are cut to size. */
static const char *const size_roots[] = { "harness", "datasets", "algos", "peers", "capi", NULL };
#define MAX_FILE_LINES 700
#define MAX_FUNCTION_LINES 80

/* Blank out comments, string and character literals and preprocessor lines (keeping every
 * newline), so that only code's braces and parentheses remain. */
static void blank_non_code(char *s)
{
    int line_start = 1;
    for (char *p = s; *p; p++) {
        if (line_start && *p == '#') { /* a directive, with its continuation lines */
            for (; *p && !(*p == '\n' && p[-1] != '\\'); p++)
                if (*p != '\n')
                    *p = ' ';
        } else if (p[0] == '/' && p[1] == '*') {
            for (; *p && !(p[0] == '*' && p[1] == '/'); p++)
                if (*p != '\n')
                    *p = ' ';
            if (*p)
                p[0] = p[1] = ' ', p++;
        } else if (p[0] == '/' && p[1] == '/') {
            for (; *p && *p != '\n'; p++)
                *p = ' ';
        } else if (*p == '"' || *p == '\'') {
            const char q = *p;
            for (p++; *p && *p != q && *p != '\n'; p++) {
                if (*p == '\\' && p[1])
                    *p++ = ' ';
                *p = ' ';
            }
        }
        if (!*p)
            break;
        line_start = *p == '\n' || (line_start && (*p == ' ' || *p == '\t'));
    }
}

/* The name of the function whose parameter list ends at `close` (a ')'), into name. */
static void function_name(const char *s, const char *close, char *name, size_t n)
{
    int depth = 0;
    const char *p = close;
    for (; p > s; p--) {
        depth += *p == ')';
        depth -= *p == '(';
        if (depth == 0)
            break;
    }
    while (p > s && (p[-1] == ' ' || p[-1] == '\t' || p[-1] == '\n'))
        p--;
    const char *end = p;
    while (p > s && (p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z') ||
                     (p[-1] >= 'A' && p[-1] <= 'Z') || (p[-1] >= '0' && p[-1] <= '9')))
        p--;
    snprintf(name, n, "%.*s", (int)(end - p), p);
}

/* Does the text before `q` end in `namespace` or `namespace name`? */
static int after_namespace(const char *s, const char *q)
{
    while (q > s && (q[-1] == ' ' || q[-1] == '\t' || q[-1] == '\n'))
        q--;
    const char *word = q;
    while (word > s && (word[-1] == '_' || ((word[-1] | 32) >= 'a' && (word[-1] | 32) <= 'z')))
        word--;
    if (q - word == 9 && strncmp(word, "namespace", 9) == 0)
        return 1;
    while (word > s && (word[-1] == ' ' || word[-1] == '\t' || word[-1] == '\n'))
        word--;
    return word - s >= 9 && strncmp(word - 9, "namespace", 9) == 0;
}

/* Every function of one source, a top-level {...} right after a ')' (extern "C" and namespace
 * blocks are looked through); each longer than the limit is a failure naming it. */
static void check_functions(const char *file, char *s)
{
    enum { MAX_DEPTH = 256 };
    int depth = 0, through = 0, line = 1, start = 0;
    char name[128] = "", see_through[MAX_DEPTH];
    for (char *p = s; *p; p++) {
        if (*p == '\n')
            line++;
        if (*p == '{' && depth < MAX_DEPTH) {
            const char *q = p;
            while (q > s && (q[-1] == ' ' || q[-1] == '\t' || q[-1] == '\n'))
                q--;
            see_through[depth] = (char)(depth == through && (q > s && (q[-1] == '"' ||
                                                                     after_namespace(s, q))));
            if (depth == through && !see_through[depth] && q > s && q[-1] == ')') {
                start = line;
                function_name(s, q - 1, name, sizeof name);
            } else if (depth == through && !see_through[depth]) {
                start = 0;
            }
            through += see_through[depth];
            depth++;
        } else if (*p == '}' && depth > 0) {
            depth--;
            through -= see_through[depth];
            if (depth == through && start) {
                CHECK(line - start + 1 <= MAX_FUNCTION_LINES,
                      "%s:%d: function %s is %d lines long (limit %d): cut it into steps", file,
                      start, name, line - start + 1, MAX_FUNCTION_LINES);
                start = 0;
            }
        }
    }
}

static int files_seen;

static int check_source(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)ftw;
    if (type != FTW_F || !is_source(path))
        return 0;
    size_t n = 0;
    char *text = slurp(path, &n);
    CHECK(text, "cannot read %s", path);
    if (!text)
        return 0;
    int lines = 0;
    for (size_t i = 0; i < n; i++)
        lines += text[i] == '\n';
    CHECK(lines <= MAX_FILE_LINES, "%s is %d lines long (limit %d): split it by subject", path,
          lines, MAX_FILE_LINES);
    blank_non_code(text);
    check_functions(path, text);
    free(text);
    files_seen++;
    return 0;
}

TEST(shape_files_under_700_lines_functions_under_80)
{
    struct stat st;
    if (stat("harness", &st) != 0) {
        test_skip("not at the root of the checkout (no harness/)");
        return;
    }
    files_seen = 0;
    for (int i = 0; size_roots[i]; i++)
        CHECK(nftw(size_roots[i], check_source, 16, FTW_PHYS) == 0, "cannot walk %s",
              size_roots[i]);
    CHECK(files_seen >= 50, "only %d sources found under the roots: the walk is broken",
          files_seen);
}
