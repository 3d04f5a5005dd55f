/* test_tree.c — the tracked tree stays small enough to carry to a GPU machine beside the bundle,
 * the peers kit and a logits file (docs/RESULTS.md, "Results"), and the docs cite only results
 * files that are in the tree, or name the commit that holds each as COMMIT:results/PATH, the form
 * `git show` reads (results/README.md lists the files moved out of the tree). Both run on the git
 * checkout the tests run in (from its root) and skip outside one. */
#include <ctype.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_util.h"
#include "test.h"

/* The most bytes the tracked files may hold together (decimal MB, as `du -cb` counts). */
#define TREE_LIMIT_BYTES (15LL * 1000 * 1000)

/* The tracked paths (`git ls-files -z`), NUL-separated, `len` bytes in all. */
struct tracked {
    char *names;
    size_t len;
};

/* Read `git ls-files -z` of the checkout whose root is the current folder; 0 when the tests do
 * not run at the root of a git checkout (or without git), 1 when read. */
static int tracked_files(struct tracked *t)
{
    char out[256];
    if (run_cmd(out, sizeof out, "git rev-parse --is-inside-work-tree --show-cdup") != 0 ||
        strcmp(out, "true\n\n") != 0)
        return 0;
    FILE *p = popen("git ls-files -z", "r");
    size_t cap = 1 << 16;
    t->len = 0;
    t->names = malloc(cap);
    for (size_t got; p && t->names && (got = fread(t->names + t->len, 1, cap - t->len, p)) > 0;)
        if ((t->len += got) == cap)
            t->names = realloc(t->names, cap *= 2);
    const int ok = p && pclose(p) == 0 && t->names;
    if (!ok)
        free(t->names);
    return ok;
}

#define FOR_EACH_TRACKED(t, name)                                                              \
    for (const char *name = (t)->names; name < (t)->names + (t)->len; name += strlen(name) + 1)

TEST(tree_tracked_files_stay_under_15_mb)
{
    struct tracked t;
    if (!tracked_files(&t)) {
        test_skip("not at the root of a git checkout");
        return;
    }
    struct { long long size; const char *name; } top[5] = { { 0, "" } };
    long long total = 0;
    int files = 0;
    FOR_EACH_TRACKED(&t, name) {
        struct stat st;
        if (lstat(name, &st) != 0)
            continue; /* deleted in the work tree, not yet in a commit */
        total += st.st_size;
        files++;
        for (int i = 0; i < 5; i++)
            if (st.st_size > top[i].size) {
                memmove(top + i + 1, top + i, sizeof top[0] * (size_t)(4 - i));
                top[i].size = st.st_size, top[i].name = name;
                break;
            }
    }
    CHECK(total < TREE_LIMIT_BYTES,
          "the %d tracked files hold %lld bytes (limit %lld): the largest are %s (%lld), %s (%lld), "
          "%s (%lld), %s (%lld), %s (%lld); move superseded results out (results/README.md)",
          files, total, TREE_LIMIT_BYTES, top[0].name, top[0].size, top[1].name, top[1].size,
          top[2].name, top[2].size, top[3].name, top[3].size, top[4].name, top[4].size);
    free(t.names);
}

/* Is `path` (a file, a folder ending or not in '/', or a glob) in the tree? */
static int in_tree(const struct tracked *t, const char *path)
{
    const size_t n = strlen(path) - (path[strlen(path) - 1] == '/');
    FOR_EACH_TRACKED(t, name) {
        if (strchr(path, '*') ? fnmatch(path, name, FNM_PATHNAME) == 0
                              : strncmp(name, path, n) == 0 && (!name[n] || name[n] == '/'))
            return 1;
    }
    return 0;
}

/* The commit in front of the path at `at` ("0123abc:results/..."): its length, 0 when none. */
static size_t commit_before(const char *text, const char *at)
{
    if (at == text || at[-1] != ':')
        return 0;
    const char *end = at - 1, *start = end;
    while (start > text && strchr("0123456789abcdef", start[-1]))
        start--;
    const size_t n = (size_t)(end - start);
    const int bounded = start == text || !strchr("0123456789abcdefABCDEF_-/", start[-1]);
    return n >= 7 && n <= 40 && bounded ? n : 0;
}

/* Why the path at `at` (`len` bytes) of `text` is a bad citation, into why; 0 when it is good:
 * in the tree, a place holder (<file>, $OUT), a file the reader makes (git ignores it), or
 * held by the commit in front of it. */
static int bad_citation(const struct tracked *t, const char *text, const char *at, size_t len,
                        int shallow, char *why, size_t n)
{
    char path[512], out[512];
    snprintf(path, sizeof path, "%.*s", (int)len, at);
    const size_t c = commit_before(text, at);
    if (strpbrk(path, "<{$") || in_tree(t, path))
        return 0;
    if (!c) {
        if (run_cmd(out, sizeof out, "git check-ignore -q --no-index -- '%s'", path) == 0)
            return 0;
        snprintf(why, n, "%s is not in the tree: cite it as COMMIT:%s (results/README.md)", path,
                 path);
        return 1;
    }
    const int glob = strchr(path, '*') != NULL;
    if (shallow || run_cmd(out, sizeof out, "git cat-file -e '%.*s%s%s'", (int)c, at - 1 - c,
                           glob ? "^{commit}" : ":", glob ? "" : path) == 0)
        return 0;
    snprintf(why, n, "%.*s:%s: that commit does not hold it", (int)c, at - 1 - c, path);
    return 1;
}

/* Every results/... path in a tracked doc (markdown, configs, scripts, the paper). */
TEST(tree_docs_cite_results_in_the_tree_or_at_a_commit)
{
    struct tracked t;
    if (!tracked_files(&t)) {
        test_skip("not at the root of a git checkout");
        return;
    }
    char out[64];
    const int shallow = run_cmd(out, sizeof out, "git rev-parse --is-shallow-repository") == 0 &&
                        strncmp(out, "true", 4) == 0;
    static const char *const kinds[] = { ".md", ".lua", ".sh", ".py", ".tex" };
    int docs = 0, cited = 0;
    FOR_EACH_TRACKED(&t, name) {
        const char *dot = strrchr(name, '.');
        int doc = 0;
        for (size_t k = 0; dot && k < sizeof kinds / sizeof kinds[0]; k++)
            doc |= strcmp(dot, kinds[k]) == 0;
        char *text = doc && strncmp(name, "tests/", 6) != 0 ? slurp(name, NULL) : NULL;
        docs += text != NULL;
        for (const char *at = text ? strstr(text, "results/") : NULL; at;
             at = strstr(at + 1, "results/")) {
            if (at > text && strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                    "0123456789_./-", at[-1]))
                continue; /* a part of another path (/shared/results/, plots_results/) */
            size_t len = strspn(at, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                    "0123456789_./*<>{}$-");
            while (len > 8 && at[len - 1] == '.')
                len--; /* a sentence's full stop */
            char why[1200];
            int line = 1;
            for (const char *c = text; c < at; c++)
                line += *c == '\n';
            cited++;
            CHECK(!bad_citation(&t, text, at, len, shallow, why, sizeof why), "%s:%d: %s", name,
                  line, why);
        }
        free(text);
    }
    CHECK(docs > 20 && cited > 20, "only %d docs and %d citations read", docs, cited);
    free(t.names);
}

/* Does the markdown text hold a section titled `title`? A section starts at a heading line
 * (`#`...) or at a paragraph's or a list item's bold lead-in (a line opening with `**`, `- **`
 * or `2. **`, as the module READMEs title their paragraphs); the title matches the start of its
 * text up to a word boundary ("GPU" is the section "GPU (`qrita_gpu.cu`, sm_90a)"), case and
 * backticks aside. */
static int has_section(const char *md, const char *title)
{
    for (const char *line = md; line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
        const char *h = line;
        if (*h == '-' || *h == '*' || isdigit((unsigned char)*h)) { /* a list item's marker */
            const char *m = h + strspn(h, "0123456789");
            m += (m == h || *m == '.') && m[0] && m[1] == ' ' ? 2 : 0;
            h = strncmp(m, "**", 2) == 0 ? m : h;
        }
        if (*h == '#')
            h += strspn(h, "#");
        else if (strncmp(h, "**", 2) == 0)
            h += 2;
        else
            continue;
        h += strspn(h, " ");
        const char *t = title;
        for (; *t && *h && *h != '\n'; h++)
            if (*h != '`' && tolower((unsigned char)*h) != tolower((unsigned char)*t++))
                break;
        h += strspn(h, "`");
        if (!*t && !isalnum((unsigned char)*h))
            return 1;
    }
    return 0;
}

/* One doc reference: the cited markdown file and its titles (as quoted_title writes them). */
struct doc_ref {
    char file[256];
    char title[4][160];
    int n;
};

/* Skip what may stand between a cited file and its title: ", ", "'s ", a line break inside a
 * comment (its leader: * # // --), "section ", "(". *paren is set when a '(' opens a list. */
static const char *skip_to_title(const char *p, int *paren)
{
    *paren = 0;
    if (*p == '`')
        p++;
    if (*p == ',')
        p++;
    else if (strncmp(p, "'s", 2) == 0)
        p += 2;
    const char *start = p;
    while (p - start < 16 && strchr(" \t\n*#/-", *p) && *p)
        p++;
    if (strncmp(p, "section ", 8) == 0)
        p += 8;
    if (*p == '(')
        p++, *paren = 1;
    return p;
}

/* The title in quotes at p ("Title", or \"Title\" in a C string), which a comment may break
 * over two lines: into out, backticks dropped, the line break and the next line's comment
 * leader (* # // --) as one space. 0 when there is none, else 1 and *end is past its quote. */
static int quoted_title(const char *p, char *out, size_t cap, const char **end)
{
    if (*p == '\\')
        p++;
    if (*p != '"')
        return 0;
    size_t n = 0;
    int breaks = 0;
    for (p++; *p != '"' && *p != '\\'; p++) {
        if (!*p || n + 2 >= cap || (*p == '\n' && ++breaks > 1))
            return 0;
        if (*p == '\n' || *p == ' ') {
            p += *p == '\n' ? strspn(p + 1, " \t*#/-") : 0;
            n -= n > 0 && out[n - 1] == ' ';
            out[n++] = ' ';
        } else if (*p != '`') {
            out[n++] = *p;
        }
    }
    if (n == 0 || (*p == '\\' && p[1] != '"'))
        return 0;
    out[n] = 0;
    *end = p + (*p == '\\') + 1;
    return 1;
}

/* The doc reference whose ".md" is at `md` in `text`: 1 when it is one (a path to a markdown
 * file, then a title in quotes), filled into r. */
static int doc_ref_at(const char *text, const char *md, struct doc_ref *r)
{
    static const char path_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                     "0123456789_./-";
    const char *start = md, *p = md + 3;
    while (start > text && strchr(path_chars, start[-1]))
        start--;
    if (start == md || isalnum((unsigned char)*p) || *p == '"')
        return 0; /* ".md" alone, a longer extension, or a path in quotes ("x.md", "r") */
    snprintf(r->file, sizeof r->file, "%.*s", (int)(p - start), start);
    if (strncmp(p, "](", 2) == 0) { /* a markdown link: the file is its target */
        const size_t n = strcspn(p + 2, ")\n");
        snprintf(r->file, sizeof r->file, "%.*s", (int)n, p + 2);
        p += 2 + n + (p[2 + n] == ')');
    }
    int paren;
    p = skip_to_title(p, &paren);
    r->n = 0;
    for (const char *end;
         r->n < 4 && quoted_title(p, r->title[r->n], sizeof r->title[0], &end);) {
        r->n++, p = end;
        if (!paren || *p != ',')
            break;
        for (p++; *p == ' ' || *p == '\n'; p++)
            ;
    }
    return r->n > 0;
}

/* The cited file's text: beside the citing file `name`, else from the root; NULL when neither
 * is there. */
static char *cited_text(const char *name, const char *file)
{
    char path[600];
    const char *slash = strrchr(name, '/');
    snprintf(path, sizeof path, "%.*s%s", slash ? (int)(slash + 1 - name) : 0, name, file);
    char *text = slurp(path, NULL);
    return text ? text : slurp(file, NULL);
}

/* Every doc reference in a tracked text file (the code, the scripts, the configs, the docs:
 * a markdown file's path, then a section's title in quotes, as the code cites the docs)
 * names a file that is there and a section that file has. */
TEST(tree_doc_references_name_sections_that_exist)
{
    struct tracked t;
    if (!tracked_files(&t)) {
        test_skip("not at the root of a git checkout");
        return;
    }
    static const char *const binary[] = { ".h5", ".png", ".svg", ".pdf", ".xz", ".tgz", ".gz" };
    int refs = 0;
    FOR_EACH_TRACKED(&t, name) {
        const char *dot = strrchr(name, '.');
        int skip = 0;
        for (size_t k = 0; dot && k < sizeof binary / sizeof binary[0]; k++)
            skip |= strcmp(dot, binary[k]) == 0;
        char *text = skip ? NULL : slurp(name, NULL);
        for (const char *md = text ? strstr(text, ".md") : NULL; md; md = strstr(md + 1, ".md")) {
            struct doc_ref r;
            if (!doc_ref_at(text, md, &r))
                continue;
            int line = 1;
            for (const char *c = text; c < md; c++)
                line += *c == '\n';
            char *cited = cited_text(name, r.file);
            CHECK(cited != NULL, "%s:%d: cites %s, which is not there", name, line, r.file);
            for (int i = 0; cited && i < r.n; i++, refs++)
                CHECK(has_section(cited, r.title[i]),
                      "%s:%d: cites %s, \"%s\": %s has no section of that title (a heading "
                      "or a paragraph's bold lead-in)", name, line, r.file, r.title[i], r.file);
            free(cited);
        }
        free(text);
    }
    CHECK(refs > 100, "only %d doc references read", refs);
    free(t.names);
}
