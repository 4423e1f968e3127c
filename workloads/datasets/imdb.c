/* workloads/datasets/imdb.c — IMDb from Keras' imdb.npz when the folder holds one
 * (imdb_npz.c), else from the raw aclImdb/ tree (train/{neg,pos}/ and
 * test/{neg,pos}/ holding files named <id>_<rating>.txt), tokenised and ranked as Keras'
 * imdb.npz (semantics §1.6): "<br />" removed, lower-cased, Keras' Tokenizer filters
 * (!"#$%&()*+,-./:;<=>?@[\]^_`{|}~, tab, newline) as separators; words ranked by their
 * count over the training split (ties: byte order), word of rank r has id r + 3; a
 * sequence is the start id 1 then its words' ids, OOV 2 for ids >= the vocabulary;
 * padded with 0 or truncated at the end to T tokens. Samples alternate neg (label 0)
 * and pos (1), each folder in id order, so --limit keeps both classes. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness/base/in_file.h"
#include "workloads/datasets/dataset.h"

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n);
    PB_CHECK(q != NULL);
    return q;
}

/* ---- one split's files ---- */

struct review {
    long id;
    char *path;
};

struct imdb_files {
    struct review *r;  /* alternating neg, pos */
    int *label;
    int n;
};

static int review_cmp(const void *a, const void *b)
{
    long x = ((const struct review *)a)->id, y = ((const struct review *)b)->id;
    return (x > y) - (x < y);
}

/* The reviews of one folder sorted by id; -1 with a message. */
static int list_folder(const char *folder, struct review **out, int *count, struct pb_err *e)
{
    DIR *d = opendir(folder);
    if (!d)
        return pb_err_set(e, "cannot open %s: %s", folder, strerror(errno));
    int n = 0, cap = 0;
    struct review *r = NULL;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char *end;
        long id = strtol(de->d_name, &end, 10);
        long rating = *end == '_' ? strtol(end + 1, &end, 10) : -1;
        if (end == de->d_name || rating < 0 || strcmp(end, ".txt")) {
            pb_err_set(e, "%s/%s is not a review of the aclImdb tree (named <id>_<rating>.txt); "
                          "remove it or unpack aclImdb_v1.tar.gz afresh", folder, de->d_name);
            closedir(d);
            for (int i = 0; i < n; i++)
                free(r[i].path);
            free(r);
            return -1;
        }
        if (n == cap)
            r = xrealloc(r, (size_t)(cap = cap ? 2 * cap : 1024) * sizeof *r);
        size_t len = strlen(folder) + strlen(de->d_name) + 2;
        r[n].path = pb_xmalloc(len);
        snprintf(r[n].path, len, "%s/%s", folder, de->d_name);
        r[n++].id = id;
    }
    closedir(d);
    if (n == 0) {
        free(r);
        return pb_err_set(e, "%s holds no reviews (*.txt)", folder);
    }
    qsort(r, (size_t)n, sizeof *r, review_cmp);
    *out = r;
    *count = n;
    return 0;
}

static void files_finish(struct imdb_files *f)
{
    for (int i = 0; i < f->n; i++)
        free(f->r[i].path);
    free(f->r);
    free(f->label);
    memset(f, 0, sizeof *f);
}

/* Split `sub` ("train" or "test") of root: neg and pos interleaved. */
static int list_split(const char *root, const char *sub, struct imdb_files *f, struct pb_err *e)
{
    struct review *cls[2] = {NULL, NULL};
    int cnt[2] = {0, 0};
    const char *names[2] = {"neg", "pos"};
    for (int k = 0; k < 2; k++) {
        char folder[4096];
        snprintf(folder, sizeof folder, "%s/%s/%s", root, sub, names[k]);
        if (list_folder(folder, &cls[k], &cnt[k], e)) {
            if (k)
                for (int i = 0; i < cnt[0]; i++)
                    free(cls[0][i].path);
            free(cls[0]);
            return -1;
        }
    }
    memset(f, 0, sizeof *f);
    f->r = pb_xmalloc((size_t)(cnt[0] + cnt[1]) * sizeof *f->r);
    f->label = pb_xmalloc((size_t)(cnt[0] + cnt[1]) * sizeof *f->label);
    int i[2] = {0, 0};
    while (i[0] < cnt[0] || i[1] < cnt[1])
        for (int k = 0; k < 2; k++)
            if (i[k] < cnt[k]) {
                f->label[f->n] = k;
                f->r[f->n++] = cls[k][i[k]++];
            }
    free(cls[0]);
    free(cls[1]);
    return 0;
}

/* ---- tokenising ---- */

static bool is_separator(unsigned char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v' ||
           (ch < 128 && strchr("!\"#$%&()*+,-./:;<=>?@[\\]^_`{|}~", ch) && ch);
}

/* Reads file `path` into a NUL-terminated, lower-cased buffer with "<br />" blanked;
 * NULL with a message when unreadable or not text. */
static char *read_review(const char *path, struct pb_err *e)
{
    struct pb_err why;
    FILE *fp = pb_in_file_open(path, PB_TEXT_MAX_BYTES, &why);
    if (!fp && !errno)
        return pb_err_set(e, "%s; unpack aclImdb_v1.tar.gz afresh", why.msg), NULL;
    if (!fp)
        return pb_err_set(e, "cannot read %s: %s", path, strerror(errno)), NULL;
    size_t cap = 4096, n = 0;
    char *buf = pb_xmalloc(cap);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n - 1, fp)) > 0) {
        n += got;
        if (n + 1 == cap)
            buf = xrealloc(buf, cap *= 2);
    }
    bool err = ferror(fp);
    fclose(fp);
    if (err || memchr(buf, 0, n)) {
        free(buf);
        return pb_err_set(e, "%s is %s; unpack aclImdb_v1.tar.gz afresh", path,
                          err ? "unreadable" : "not a text file (it holds NUL bytes)"), NULL;
    }
    buf[n] = 0;
    for (char *p = buf; (p = strstr(p, "<br />"));)
        memset(p, ' ', 6);
    for (size_t i = 0; i < n; i++)
        if (buf[i] >= 'A' && buf[i] <= 'Z')
            buf[i] = (char)(buf[i] - 'A' + 'a');
    return buf;
}

/* Calls fn(ctx, word, len) for each word of text, in order. */
static void for_words(char *text, void (*fn)(void *ctx, const char *w, size_t len), void *ctx)
{
    unsigned char *p = (unsigned char *)text;
    while (*p) {
        while (*p && is_separator(*p))
            p++;
        unsigned char *s = p;
        while (*p && !is_separator(*p))
            p++;
        if (p > s)
            fn(ctx, (const char *)s, (size_t)(p - s));
    }
}

/* ---- the vocabulary: an open-addressing table of words and counts ---- */

struct vocab {
    char **word;
    long *count;
    int *id;      /* after ranking: the word's id (rank + 3) */
    size_t cap, n;
};

static uint64_t hash_word(const char *w, size_t len)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)w[i]) * 1099511628211ull;
    return h;
}

static size_t vocab_slot(const struct vocab *v, const char *w, size_t len)
{
    size_t i = hash_word(w, len) & (v->cap - 1);
    while (v->word[i] && (strlen(v->word[i]) != len || memcmp(v->word[i], w, len)))
        i = (i + 1) & (v->cap - 1);
    return i;
}

static void vocab_grow(struct vocab *v)
{
    struct vocab old = *v;
    v->cap = old.cap ? 2 * old.cap : 1 << 16;
    v->word = pb_xcalloc(v->cap, sizeof *v->word);
    v->count = pb_xcalloc(v->cap, sizeof *v->count);
    for (size_t i = 0; i < old.cap; i++)
        if (old.word[i]) {
            size_t j = vocab_slot(v, old.word[i], strlen(old.word[i]));
            v->word[j] = old.word[i];
            v->count[j] = old.count[i];
        }
    free(old.word);
    free(old.count);
}

static void vocab_count(void *ctx, const char *w, size_t len)
{
    struct vocab *v = ctx;
    if (2 * (v->n + 1) > v->cap)
        vocab_grow(v);
    size_t i = vocab_slot(v, w, len);
    if (!v->word[i]) {
        v->word[i] = pb_xmalloc(len + 1);
        memcpy(v->word[i], w, len);
        v->word[i][len] = 0;
        v->n++;
    }
    v->count[i]++;
}

static const struct vocab *rank_ctx;

static int rank_cmp(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    long cx = rank_ctx->count[x], cy = rank_ctx->count[y];
    if (cx != cy)
        return cx > cy ? -1 : 1;
    return strcmp(rank_ctx->word[x], rank_ctx->word[y]);
}

/* Ranks the counted words: id[slot] = rank + 3 (rank 1 the most frequent). */
static void vocab_rank(struct vocab *v)
{
    size_t *order = pb_xmalloc((v->n + 1) * sizeof *order), k = 0;
    for (size_t i = 0; i < v->cap; i++)
        if (v->word[i])
            order[k++] = i;
    rank_ctx = v;
    qsort(order, k, sizeof *order, rank_cmp);
    rank_ctx = NULL;
    v->id = pb_xcalloc(v->cap, sizeof *v->id);
    for (size_t r = 0; r < k; r++)
        v->id[order[r]] = (int)(r + 4);
    free(order);
}

static void vocab_finish(struct vocab *v)
{
    for (size_t i = 0; i < v->cap; i++)
        free(v->word[i]);
    free(v->word);
    free(v->count);
    free(v->id);
    memset(v, 0, sizeof *v);
}

/* ---- one sequence ---- */

struct seq_ctx {
    const struct vocab *v;  /* NULL: lengths only */
    int vocab, steps, len;
    float *x;
};

static void seq_word(void *ctx, const char *w, size_t len)
{
    struct seq_ctx *s = ctx;
    if (s->len >= s->steps)
        return;
    if (s->x) {
        size_t i = vocab_slot(s->v, w, len);
        int id = s->v->word[i] ? s->v->id[i] : 2;
        s->x[s->len] = (float)(id < s->vocab ? id : 2);
    }
    s->len++;
}

int pb_dataset_imdb(struct pb_dataset *ds, const char *dir, const char *origin,
                    enum pb_split split, int limit, const struct pb_dataset_opts *opts,
                    struct pb_err *e)
{
    memset(ds, 0, sizeof *ds);
    int vocab = opts && opts->vocab ? opts->vocab : 10000;
    int steps = opts && opts->steps ? opts->steps : 200;
    int parts = opts && opts->parts ? opts->parts : PB_DATA_ALL;
    if (vocab < 4 || steps < 1)
        return pb_err_set(e, "imdb: the vocabulary must be at least 4 and the sequences at least "
                             "1 token (got %d, %d)", vocab, steps);
    char npz[4096];
    struct stat st;
    snprintf(npz, sizeof npz, "%s/imdb.npz", dir);
    if (!stat(npz, &st))  /* Keras' file first (imdb_npz.c) */
        return pb_dataset_imdb_npz(ds, npz, split, limit, opts, e);
    char root[4096];
    snprintf(root, sizeof root, "%s/aclImdb", dir);
    if (stat(root, &st) || !S_ISDIR(st.st_mode))
        snprintf(root, sizeof root, "%s", dir);
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/train/neg", root);
    if (stat(probe, &st) || !S_ISDIR(st.st_mode))
        return pb_err_set(e, "imdb: no aclImdb tree in %s (from %s): it needs train/{neg,pos}/<id>_<rating>.txt "
                             "and test/{neg,pos}/ likewise; unpack aclImdb_v1.tar.gz there, or point "
                             "--data-dir or PIPEBENCH_IMDB_DIR at the folder that holds it",
                          dir, origin);
    struct imdb_files f;
    struct vocab v = {0};
    if (list_split(root, split == PB_SPLIT_TRAIN ? "train" : "test", &f, e))
        return pb_err_prefix(e, "imdb: ");
    if (limit > f.n) {
        int n = f.n;
        files_finish(&f);
        return pb_err_set(e, "imdb: the sample limit %d is more than the %d reviews of the %s "
                             "split" PB_LIMIT_ADVICE,
                          limit, n, split == PB_SPLIT_TRAIN ? "training" : "test");
    }
    int keep = limit > 0 ? limit : f.n;
    /* the ranking reads the whole training split, whatever the limit or split */
    if (parts & PB_DATA_INPUTS) {
        struct imdb_files tr;
        if (list_split(root, "train", &tr, e)) {
            files_finish(&f);
            return pb_err_prefix(e, "imdb: ");
        }
        for (int i = 0; i < tr.n; i++) {
            char *text = read_review(tr.r[i].path, e);
            if (!text) {
                files_finish(&tr);
                files_finish(&f);
                vocab_finish(&v);
                return pb_err_prefix(e, "imdb: ");
            }
            for_words(text, vocab_count, &v);
            free(text);
        }
        files_finish(&tr);
        if (!v.n)
            vocab_grow(&v);
        vocab_rank(&v);
        ds->x = pb_xcalloc((size_t)keep * steps, sizeof *ds->x);
    }
    if (parts & PB_DATA_LABELS) {
        ds->y = pb_xmalloc((size_t)keep * sizeof *ds->y);
        ds->len = pb_xmalloc((size_t)keep * sizeof *ds->len);
    }
    for (int i = 0; i < keep; i++) {
        char *text = read_review(f.r[i].path, e);
        if (!text) {
            files_finish(&f);
            vocab_finish(&v);
            pb_dataset_finish(ds);
            return pb_err_prefix(e, "imdb: ");
        }
        struct seq_ctx s = {&v, vocab, steps, 1, ds->x ? ds->x + (size_t)i * steps : NULL};
        if (s.x)
            s.x[0] = 1.0f;
        for_words(text, seq_word, &s);
        free(text);
        if (ds->y) {
            ds->y[i] = f.label[i];
            ds->len[i] = s.len;
        }
    }
    files_finish(&f);
    vocab_finish(&v);
    ds->name = pb_xstrdup("imdb");
    ds->n = keep;
    ds->c = steps;
    ds->h = ds->w = 1;
    ds->nclasses = 2;
    ds->vocab = vocab;
    return 0;
}
