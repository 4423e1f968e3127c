/* workloads/datasets/tiny_imagenet.c — Tiny-ImageNet's tiny-imagenet-200/ tree (semantics
 * §1.6): wnids.txt lists the class ids in label order; the train split is the JPEGs of
 * train/<wnid>/images/, in an order that interleaves the classes (round r takes
 * image r, by sorted file name, of every class that has one, in wnids.txt order); the
 * val split is the JPEGs of val/images/ by sorted file name, labelled by val/val_annotations.txt.
 * The 64×64 JPEGs (grayscale ones expanded to RGB, as PIL's convert('RGB')) are decoded
 * with libjpeg-turbo into a uint8 cache file once (image_cache.h), only as many as the
 * run keeps; later runs map the cache. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <dirent.h>
#include <sys/stat.h>
#include <turbojpeg.h>

#include "harness/base/in_file.h"
#include "workloads/datasets/dataset.h"
#include "workloads/datasets/image_cache.h"

#define SIDE 64
#define PER (3 * SIDE * SIDE)
#define MAX_TEXT (64u << 20)
/* Decodes at least this long announce themselves on stderr (a full split takes a while). */
#define ANNOUNCE_AT 1000
#define TINY_URL "http://cs231n.stanford.edu/"
#define REDO "unzip tiny-imagenet-200.zip again"

struct named {
    const char *wnid;
    int label;
};

struct tree {
    char root[4096];
    char *wnids_raw, *wnids_cut; /* wnids.txt as read, and cut into lines */
    char **wnids;                /* [nclasses], into wnids_cut */
    int nclasses;
    struct named *by_name;       /* [nclasses] the classes sorted by wnid */
    char *notes_raw;             /* val/val_annotations.txt (val split) */
    size_t wnids_len, notes_len;
};

struct sample {
    char *rel;                   /* path under the root */
    int label;
};

struct list {
    struct sample *s;
    int n, cap;
};

static void list_add(struct list *l, char *rel, int label)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 1024;
        l->s = realloc(l->s, (size_t)l->cap * sizeof *l->s);
        PB_CHECK(l->s != NULL);
    }
    l->s[l->n++] = (struct sample){rel, label};
}

static void list_finish(struct list *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->s[i].rel);
    free(l->s);
    memset(l, 0, sizeof *l);
}

static void tree_finish(struct tree *t)
{
    free(t->wnids_raw);
    free(t->wnids_cut);
    free(t->wnids);
    free(t->by_name);
    free(t->notes_raw);
    memset(t, 0, sizeof *t);
}

/* The whole of a small text file, NUL-terminated. */
static char *read_text(const char *path, size_t *len, struct pb_err *e)
{
    struct pb_err why;
    FILE *f = pb_in_file_open(path, PB_TEXT_MAX_BYTES, &why);
    if (!f && !errno) {
        pb_err_set(e, "tiny-imagenet: %s: " REDO, why.msg);
        return NULL;
    }
    if (!f) {
        pb_err_set(e, "tiny-imagenet: cannot open %s: %s; the tree is incomplete: " REDO, path,
                   strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0, got;
    char *buf = pb_xmalloc(cap);
    while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 == cap) {
            if (cap >= MAX_TEXT) {
                fclose(f);
                free(buf);
                pb_err_set(e, "tiny-imagenet: %s is over %u MiB: not a file of the dataset", path,
                           MAX_TEXT >> 20);
                return NULL;
            }
            cap *= 2;
            buf = realloc(buf, cap);
            PB_CHECK(buf != NULL);
        }
    }
    fclose(f);
    buf[n] = 0;
    if (len)
        *len = n;
    return buf;
}

/* The next line of *p (NUL-terminated in place, blanks and '\r' trimmed); NULL at the end. */
static char *next_line(char **p)
{
    if (!**p)
        return NULL;
    char *line = *p, *nl = strchr(line, '\n');
    *p = nl ? nl + 1 : line + strlen(line);
    if (nl)
        *nl = 0;
    size_t n = strlen(line);
    while (n > 0 && (line[n - 1] == '\r' || line[n - 1] == ' ' || line[n - 1] == '\t'))
        line[--n] = 0;
    while (*line == ' ' || *line == '\t')
        line++;
    return line;
}

static int by_wnid(const void *a, const void *b)
{
    return strcmp(((const struct named *)a)->wnid, ((const struct named *)b)->wnid);
}

/* The label of wnid, or -1. */
static int label_of(const struct tree *t, const char *wnid)
{
    struct named key = {wnid, -1};
    const struct named *hit = bsearch(&key, t->by_name, (size_t)t->nclasses, sizeof key, by_wnid);
    return hit ? hit->label : -1;
}

/* The tree's root (dir itself or dir/tiny-imagenet-200) and its classes. */
static int open_tree(struct tree *t, const char *dir, const char *origin, struct pb_err *e)
{
    memset(t, 0, sizeof *t);
    struct stat st;
    char path[4096 + 64];
    snprintf(path, sizeof path, "%s/wnids.txt", dir);
    if (stat(path, &st) == 0) {
        snprintf(t->root, sizeof t->root, "%s", dir);
    } else {
        snprintf(path, sizeof path, "%s/tiny-imagenet-200/wnids.txt", dir);
        if (stat(path, &st) != 0)
            return pb_err_set(e, "tiny-imagenet: cannot find wnids.txt in %s nor in "
                                 "%s/tiny-imagenet-200 (the folder of %s); download "
                                 "tiny-imagenet-200.zip from " TINY_URL " and unzip it there "
                                 "(unzip tiny-imagenet-200.zip -d %s), or name the folder "
                                 "holding tiny-imagenet-200/, or the tree itself, with "
                                 "--data-dir or PIPEBENCH_TINY_IMAGENET_DIR",
                              dir, dir, origin, dir);
        snprintf(t->root, sizeof t->root, "%s/tiny-imagenet-200", dir);
    }
    snprintf(path, sizeof path, "%s/wnids.txt", t->root);
    t->wnids_raw = read_text(path, &t->wnids_len, e);
    if (!t->wnids_raw)
        return -1;
    t->wnids_cut = pb_xstrdup(t->wnids_raw);
    char *p = t->wnids_cut, *line;
    int cap = 256, lineno = 0;
    t->wnids = pb_xmalloc((size_t)cap * sizeof *t->wnids);
    while ((line = next_line(&p))) {
        lineno++;
        if (!*line)
            continue;
        if (strpbrk(line, " \t/") || strlen(line) > 64)
            return pb_err_set(e, "tiny-imagenet: %s line %d: '%.80s' is not a class id (one wnid "
                                 "per line, like n01443537); " REDO, path, lineno, line);
        if (t->nclasses == cap) {
            cap *= 2;
            t->wnids = realloc(t->wnids, (size_t)cap * sizeof *t->wnids);
            PB_CHECK(t->wnids != NULL);
        }
        t->wnids[t->nclasses++] = line;
    }
    if (t->nclasses == 0)
        return pb_err_set(e, "tiny-imagenet: %s lists no class; " REDO, path);
    t->by_name = pb_xmalloc((size_t)t->nclasses * sizeof *t->by_name);
    for (int i = 0; i < t->nclasses; i++)
        t->by_name[i] = (struct named){t->wnids[i], i};
    qsort(t->by_name, (size_t)t->nclasses, sizeof *t->by_name, by_wnid);
    for (int i = 1; i < t->nclasses; i++)
        if (!strcmp(t->by_name[i].wnid, t->by_name[i - 1].wnid))
            return pb_err_set(e, "tiny-imagenet: %s lists %s twice; " REDO, path,
                              t->by_name[i].wnid);
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool is_jpeg_name(const char *name)
{
    size_t n = strlen(name);
    return (n > 5 && !strcasecmp(name + n - 5, ".jpeg")) || (n > 4 && !strcasecmp(name + n - 4, ".jpg"));
}

/* The JPEG file names of folder rel (under the root), sorted; *n of them. */
static char **list_jpegs(const struct tree *t, const char *rel, int *n, struct pb_err *e)
{
    char path[4096 + 512];
    snprintf(path, sizeof path, "%s/%s", t->root, rel);
    DIR *d = opendir(path);
    if (!d) {
        pb_err_set(e, "tiny-imagenet: cannot open the folder %s: %s; the tree is incomplete: "
                   REDO, path, strerror(errno));
        return NULL;
    }
    int cap = 512;
    char **names = pb_xmalloc((size_t)cap * sizeof *names);
    *n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.' || !is_jpeg_name(de->d_name))
            continue;
        if (*n == cap) {
            cap *= 2;
            names = realloc(names, (size_t)cap * sizeof *names);
            PB_CHECK(names != NULL);
        }
        names[(*n)++] = pb_xstrdup(de->d_name);
    }
    closedir(d);
    qsort(names, (size_t)*n, sizeof *names, cmp_str);
    return names;
}

static void free_names(char **names, int n)
{
    for (int i = 0; names && i < n; i++)
        free(names[i]);
    free(names);
}

static char *join(const char *a, const char *b, const char *c)
{
    size_t n = strlen(a) + strlen(b) + strlen(c) + 1;
    char *s = pb_xmalloc(n);
    snprintf(s, n, "%s%s%s", a, b, c);
    return s;
}

/* The train split: class folders in wnids.txt order, interleaved round by round. */
static int list_train(const struct tree *t, struct list *out, struct pb_err *e)
{
    char ***names = pb_xcalloc((size_t)t->nclasses, sizeof *names);
    int *counts = pb_xcalloc((size_t)t->nclasses, sizeof *counts), most = 0, rc = 0;
    for (int k = 0; k < t->nclasses && !rc; k++) {
        char rel[256];
        snprintf(rel, sizeof rel, "train/%s/images", t->wnids[k]);
        names[k] = list_jpegs(t, rel, &counts[k], e);
        if (!names[k])
            rc = -1;
        else if (counts[k] == 0)
            rc = pb_err_set(e, "tiny-imagenet: %s/%s holds no JPEG; the tree is incomplete: " REDO,
                            t->root, rel);
        most = counts[k] > most ? counts[k] : most;
    }
    for (int r = 0; r < most && !rc; r++)
        for (int k = 0; k < t->nclasses; k++)
            if (r < counts[k]) {
                char prefix[256];
                snprintf(prefix, sizeof prefix, "train/%s/images/", t->wnids[k]);
                list_add(out, join(prefix, names[k][r], ""), k);
            }
    for (int k = 0; k < t->nclasses; k++)
        free_names(names[k], counts[k]);
    free(names);
    free(counts);
    return rc;
}

struct note {
    const char *file;
    int label, line;
    bool used;
};

static int cmp_note(const void *a, const void *b)
{
    return strcmp(((const struct note *)a)->file, ((const struct note *)b)->file);
}

/* The val split: val/images by sorted name, each labelled by its annotation line. */
static int list_val(struct tree *t, struct list *out, struct pb_err *e)
{
    char path[4096 + 64];
    snprintf(path, sizeof path, "%s/val/val_annotations.txt", t->root);
    t->notes_raw = read_text(path, &t->notes_len, e);
    if (!t->notes_raw)
        return -1;
    char *cut = pb_xstrdup(t->notes_raw), *p = cut, *line;
    int cap = 1024, nnotes = 0, lineno = 0, rc = 0;
    struct note *notes = pb_xmalloc((size_t)cap * sizeof *notes);
    while (!rc && (line = next_line(&p))) {
        lineno++;
        if (!*line)
            continue;
        char *save, *file = strtok_r(line, " \t", &save), *wnid = strtok_r(NULL, " \t", &save);
        int label = wnid ? label_of(t, wnid) : -1;
        if (!wnid)
            rc = pb_err_set(e, "tiny-imagenet: %s line %d: expected 'FILE<TAB>WNID<TAB>box', got "
                               "'%.80s'; " REDO, path, lineno, file);
        else if (label < 0)
            rc = pb_err_set(e, "tiny-imagenet: %s line %d: class %s of %s is not in wnids.txt; "
                               REDO, path, lineno, wnid, file);
        if (rc)
            break;
        if (nnotes == cap) {
            cap *= 2;
            notes = realloc(notes, (size_t)cap * sizeof *notes);
            PB_CHECK(notes != NULL);
        }
        notes[nnotes++] = (struct note){file, label, lineno, false};
    }
    qsort(notes, (size_t)nnotes, sizeof *notes, cmp_note);
    for (int i = 1; i < nnotes && !rc; i++)
        if (!strcmp(notes[i].file, notes[i - 1].file))
            rc = pb_err_set(e, "tiny-imagenet: %s lines %d and %d both label %s; " REDO, path,
                            notes[i - 1].line, notes[i].line, notes[i].file);
    int nimages = 0;
    char **images = rc ? NULL : list_jpegs(t, "val/images", &nimages, e);
    if (!rc && !images)
        rc = -1;
    for (int i = 0; i < nimages && !rc; i++) {
        struct note key = {.file = images[i]};
        struct note *hit = bsearch(&key, notes, (size_t)nnotes, sizeof *notes, cmp_note);
        if (!hit)
            rc = pb_err_set(e, "tiny-imagenet: %s/val/images/%s has no line in %s; " REDO,
                            t->root, images[i], path);
        else {
            hit->used = true;
            list_add(out, join("val/images/", images[i], ""), hit->label);
        }
    }
    for (int i = 0; i < nnotes && !rc; i++)
        if (!notes[i].used)
            rc = pb_err_set(e, "tiny-imagenet: %s line %d names %s, which is not in "
                               "%s/val/images; " REDO, path, notes[i].line, notes[i].file, t->root);
    if (!rc && out->n == 0)
        rc = pb_err_set(e, "tiny-imagenet: %s/val/images holds no JPEG; " REDO, t->root);
    free_names(images, nimages);
    free(notes);
    free(cut);
    return rc;
}

static uint64_t hash_u64(uint64_t h, uint64_t v)
{
    unsigned char b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    return pb_fnv1a(h, b, sizeof b);
}


/* The source's fingerprint: the class list, the annotations (val), and each file's path,
 * size and modification time in sample order, so that a changed, added, removed or
 * renamed image makes the cache stale. */
static int fingerprint(const struct tree *t, const struct list *l, bool val, uint64_t *out,
                       struct pb_err *e)
{
    const char *tag = val ? "pipebench tiny-imagenet val" : "pipebench tiny-imagenet train";
    uint64_t h = pb_fnv1a(PB_FNV_OFFSET, tag, strlen(tag) + 1);
    h = pb_fnv1a(h, t->wnids_raw, t->wnids_len);
    if (val)
        h = pb_fnv1a(h, t->notes_raw, t->notes_len);
    for (int i = 0; i < l->n; i++) {
        char path[4096 + 512];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", t->root, l->s[i].rel);
        if (stat(path, &st) != 0)
            return pb_err_set(e, "tiny-imagenet: cannot read %s: %s", path, strerror(errno));
        h = pb_fnv1a(h, l->s[i].rel, strlen(l->s[i].rel) + 1);
        h = hash_u64(h, (uint64_t)st.st_size);
        h = hash_u64(h, (uint64_t)st.st_mtim.tv_sec);
        h = hash_u64(h, (uint64_t)st.st_mtim.tv_nsec);
    }
    *out = h;
    return 0;
}

struct decoder {
    tjhandle tj;
    unsigned char *buf;   /* the file */
    size_t cap;
    unsigned char rgb[PER];
};

/* A 64x64 JPEG is a few KB; a larger file is not one of the dataset's. */
#define JPEG_MAX_BYTES (1LL << 24)

/* One JPEG into out [3, 64, 64]: RGB, a grayscale image's one channel repeated. */
static int decode_one(struct decoder *d, const char *path, uint8_t *out, struct pb_err *e)
{
    struct pb_err why;
    FILE *f = pb_in_file_open(path, JPEG_MAX_BYTES, &why);
    if (!f && !errno)
        return pb_err_set(e, "tiny-imagenet: %s: " REDO, why.msg);
    if (!f)
        return pb_err_set(e, "tiny-imagenet: cannot open %s: %s", path, strerror(errno));
    struct stat st;
    size_t n = fstat(fileno(f), &st) == 0 ? (size_t)st.st_size : 0;
    if (n > d->cap) {
        free(d->buf);
        d->cap = 2 * n;
        d->buf = pb_xmalloc(d->cap);
    }
    size_t got = n ? fread(d->buf, 1, n, f) : 0;
    fclose(f);
    if (n == 0 || got != n)
        return pb_err_set(e, "tiny-imagenet: %s: %s; the file is damaged: " REDO, path,
                          n == 0 ? "the file is empty" : "reading it failed");
    int w, h, subsamp, cs;
    if (tjDecompressHeader3(d->tj, d->buf, (unsigned long)n, &w, &h, &subsamp, &cs) != 0)
        return pb_err_set(e, "tiny-imagenet: %s is not a readable JPEG (%s); the file is "
                             "damaged: " REDO, path, tjGetErrorStr2(d->tj));
    if (w != SIDE || h != SIDE)
        return pb_err_set(e, "tiny-imagenet: %s is %dx%d; the dataset's images are %dx%d: is this "
                             "the tiny-imagenet-200 tree?", path, w, h, SIDE, SIDE);
    /* libjpeg-turbo's warnings (a truncated file's "Premature end of JPEG file") fail too,
     * as PIL refuses a truncated image */
    if (tjDecompress2(d->tj, d->buf, (unsigned long)n, d->rgb, SIDE, 0, SIDE, TJPF_RGB, 0) != 0)
        return pb_err_set(e, "tiny-imagenet: %s: cannot decode the JPEG (%s); the file is "
                             "damaged: " REDO, path, tjGetErrorStr2(d->tj));
    for (int i = 0; i < SIDE * SIDE; i++)
        for (int c = 0; c < 3; c++)
            out[(size_t)c * SIDE * SIDE + (size_t)i] = d->rgb[3 * i + c];
    return 0;
}

/* The pixels of the first `keep` samples: mapped from a cache holding them, else the
 * cache's samples and the rest decoded, then written as the new cache. */
static int load_pixels(struct pb_dataset *ds, const struct tree *t, const struct list *l,
                       int keep, bool val, struct pb_err *e)
{
    uint64_t fp = 0;
    if (fingerprint(t, l, val, &fp, e))
        return -1;
    struct pb_image_cache_id id = {"tiny-imagenet", t->root, val ? "val" : "train", fp, l->n,
                                   3, SIDE, SIDE};
    struct pb_image_cache_map m;
    if (pb_image_cache_find(&id, &m, e))
        return -1;
    if (m.n >= keep) {
        ds->pix = m.pix;
        ds->map = m.map;
        ds->map_len = m.len;
        ds->cache_path = m.path;
        return 0;
    }
    ds->pix_owned = pb_malloc_or_err((size_t)keep * PER, "the decoded Tiny-ImageNet images", e);
    if (!ds->pix_owned) {
        pb_image_cache_unmap(&m);
        return pb_err_prefix(e, "tiny-imagenet (use --limit-train / --limit-val): ");
    }
    int from = m.n;
    if (from)
        memcpy(ds->pix_owned, m.pix, (size_t)from * PER);
    pb_image_cache_unmap(&m);
    if (keep - from >= ANNOUNCE_AT)
        fprintf(stderr, "pipebench: tiny-imagenet: decoding %d %s images into a cache (once)\n",
                keep - from, val ? "val" : "train");
    struct decoder *d = pb_xcalloc(1, sizeof *d);
    d->tj = tjInitDecompress();
    PB_CHECK(d->tj != NULL);
    int rc = 0;
    for (int i = from; i < keep && !rc; i++) {
        char path[4096 + 512];
        snprintf(path, sizeof path, "%s/%s", t->root, l->s[i].rel);
        rc = decode_one(d, path, ds->pix_owned + (size_t)i * PER, e);
    }
    tjDestroy(d->tj);
    free(d->buf);
    free(d);
    if (rc)
        return -1;
    ds->decoded = keep - from;
    struct pb_err ew;
    ds->cache_path = pb_image_cache_write(&id, ds->pix_owned, keep, &ew);
    if (!ds->cache_path)
        fprintf(stderr, "pipebench: tiny-imagenet: %s; the next run decodes the images again\n",
                ew.msg);
    return 0;
}

int pb_dataset_tiny_imagenet(struct pb_dataset *ds, const struct pb_dataset_source *src,
                             enum pb_split split, int limit, const struct pb_dataset_opts *opts,
                             struct pb_err *e)
{
    memset(ds, 0, sizeof *ds);
    int parts = opts && opts->parts ? opts->parts : PB_DATA_ALL;
    bool val = split == PB_SPLIT_TEST;
    struct tree t;
    struct list l = {0};
    int rc = open_tree(&t, src->dir, src->origin, e);
    if (!rc)
        rc = val ? list_val(&t, &l, e) : list_train(&t, &l, e);
    if (!rc && limit > l.n)
        rc = pb_err_set(e, "tiny-imagenet: the sample limit %d is more than the %d samples of the "
                           "%s split in %s" PB_LIMIT_ADVICE,
                        limit, l.n, val ? "val" : "train", t.root);
    int keep = limit > 0 ? limit : l.n;
    if (!rc && (parts & PB_DATA_LABELS)) {
        ds->y = pb_xmalloc((size_t)keep * sizeof *ds->y + 1);
        for (int i = 0; i < keep; i++)
            ds->y[i] = l.s[i].label;
    }
    if (!rc && (parts & PB_DATA_INPUTS))
        rc = load_pixels(ds, &t, &l, keep, val, e);
    if (!rc) {
        ds->name = pb_xstrdup("tiny-imagenet");
        ds->n = keep;
        ds->nclasses = t.nclasses;
        rc = pb_dataset_set_image(ds, src->image, opts, e);
    }
    list_finish(&l);
    tree_finish(&t);
    if (rc)
        pb_dataset_finish(ds);
    return rc;
}
