/* workloads/datasets/imdb_npz.c — IMDb from Keras' imdb.npz (read with libzip): its
 * members x_train.npy, y_train.npy, x_test.npy, y_test.npy. y_* are plain .npy integer
 * arrays; x_* are numpy object arrays (descr '|O') whose data is a pickle of the array:
 * numpy.core.multiarray._reconstruct(ndarray, (0,), b'b') built with the state
 * (1, (n,), dtype('O8'), False, [list of n lists of word ranks]). The pickle is read by
 * a small stack machine that knows the opcodes numpy's pickles of lists of ints use
 * (protocols 2 to 4: Python 2's strings too), checks every read against the data's end
 * and then the structure above; nothing is ever called or imported. As Keras'
 * load_data (start_char 1, index_from 3, oov_char 2): a sequence is 1 then each rank
 * w as w + 3, ids >= the vocabulary as 2; padded with 0 or truncated at the end to T,
 * as the aclImdb loader does (semantics §1.6). Samples alternate label 0 and 1, each
 * in file order, as the aclImdb loader orders them, so --limit keeps both classes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zip.h>

#include "workloads/datasets/dataset.h"

/* ---- the pickle machine ---- */

enum { V_NONE, V_BOOL, V_INT, V_STR, V_GLOBAL, V_MARK, V_TUPLE, V_LIST, V_OBJ };

struct node;
struct val {
    int kind;
    int64_t i;
    const char *s;  /* V_STR, V_GLOBAL ("module name"): into the data or a node's text */
    size_t len;
    struct node *p; /* V_TUPLE, V_LIST, V_OBJ */
};

struct node {
    struct val *item;  /* tuples, generic lists; V_OBJ: item[0] callable, [1] args, [2] state */
    size_t n, cap;
    int32_t *ints;     /* a list of ints only */
    size_t ni, ci;
    bool generic;      /* a list holding something else than ints */
    char text[128];    /* a GLOBAL's "module name" */
    struct node *next; /* every node, to free */
};

struct vm {
    const unsigned char *d;
    size_t n, at;
    struct val *stack;
    size_t sp, scap;
    struct val *memo;
    size_t nmemo;
    struct node *nodes;
    struct pb_err *e;
    const char *what;
};

static struct node *new_node(struct vm *m)
{
    struct node *p = pb_xcalloc(1, sizeof *p);
    p->next = m->nodes;
    m->nodes = p;
    return p;
}

static void push_item(struct node *p, struct val v)
{
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 4;
        struct val *q = realloc(p->item, p->cap * sizeof *q);
        PB_CHECK(q != NULL);
        p->item = q;
    }
    p->item[p->n++] = v;
}

static int fail(struct vm *m, const char *why)
{
    return pb_err_set(m->e, "imdb: %s in imdb.npz is not the pickled object array Keras writes "
                            "(%s at byte %zu); fetch imdb.npz afresh",
                      m->what, why, m->at);
}

static int push(struct vm *m, struct val v)
{
    if (m->sp == m->scap) {
        m->scap = m->scap ? 2 * m->scap : 256;
        struct val *q = realloc(m->stack, m->scap * sizeof *q);
        PB_CHECK(q != NULL);
        m->stack = q;
    }
    m->stack[m->sp++] = v;
    return 0;
}

static int pop(struct vm *m, struct val *v)
{
    if (!m->sp || m->stack[m->sp - 1].kind == V_MARK)
        return fail(m, "stack underflow");
    *v = m->stack[--m->sp];
    return 0;
}

/* The index of the topmost mark. */
static int find_mark(struct vm *m, size_t *at)
{
    for (size_t k = m->sp; k-- > 0;)
        if (m->stack[k].kind == V_MARK) {
            *at = k;
            return 0;
        }
    return fail(m, "no mark");
}

static int take(struct vm *m, size_t k, const unsigned char **p)
{
    if (k > m->n - m->at)
        return fail(m, "truncated");
    *p = m->d + m->at;
    m->at += k;
    return 0;
}

static uint64_t le(const unsigned char *p, int k)
{
    uint64_t v = 0;
    for (int i = k; i-- > 0;)
        v = v << 8 | p[i];
    return v;
}

static int append(struct vm *m, struct node *list, struct val v)
{
    if (!list->generic && v.kind == V_INT) {
        if (v.i < 0 || v.i > INT32_MAX)
            return fail(m, "a word rank out of range");
        if (list->ni == list->ci) {
            list->ci = list->ci ? 2 * list->ci : 64;
            int32_t *q = realloc(list->ints, list->ci * sizeof *q);
            PB_CHECK(q != NULL);
            list->ints = q;
        }
        list->ints[list->ni++] = (int32_t)v.i;
        return 0;
    }
    if (list->ni)
        return fail(m, "a list mixing word ranks and other objects");
    list->generic = true;
    push_item(list, v);
    return 0;
}

static int memo_put(struct vm *m, size_t idx)
{
    if (!m->sp || idx > (1u << 24))
        return fail(m, "bad memo");
    if (idx >= m->nmemo) {
        size_t n = idx + 1 > 2 * m->nmemo ? idx + 1 : 2 * m->nmemo;
        struct val *q = realloc(m->memo, n * sizeof *q);
        PB_CHECK(q != NULL);
        memset(q + m->nmemo, 0xff, (n - m->nmemo) * sizeof *q);
        m->memo = q;
        m->nmemo = n;
    }
    m->memo[idx] = m->stack[m->sp - 1];
    return 0;
}

static int memo_get(struct vm *m, size_t idx)
{
    if (idx >= m->nmemo || m->memo[idx].kind < 0 || m->memo[idx].kind > V_OBJ)
        return fail(m, "a memo entry never stored");
    return push(m, m->memo[idx]);
}

/* Runs the pickle to STOP; *out the result. */
static int run(struct vm *m, struct val *out)
{
    size_t next_memo = 0;
    for (;;) {
        const unsigned char *p = NULL;
        if (take(m, 1, &p))
            return -1;
        unsigned op = *p;
        struct val v = {0}, a, b, c;
        size_t k = 0;
        switch (op) {
        case 0x80: /* PROTO */
            if (take(m, 1, &p) || *p < 2 || *p > 5)
                return fail(m, "protocol");
            break;
        case 0x95: /* FRAME */
            if (take(m, 8, &p))
                return -1;
            break;
        case '.': /* STOP */
            return pop(m, out);
        case '(':
            v.kind = V_MARK;
            push(m, v);
            break;
        case 'N':
            push(m, v);
            break;
        case 0x88: case 0x89:
            v.kind = V_BOOL;
            v.i = op == 0x88;
            push(m, v);
            break;
        case 'K': case 'M': case 'J':
            k = op == 'K' ? 1 : op == 'M' ? 2 : 4;
            if (take(m, k, &p))
                return -1;
            v.kind = V_INT;
            v.i = op == 'J' ? (int64_t)(int32_t)(uint32_t)le(p, 4) : (int64_t)le(p, (int)k);
            push(m, v);
            break;
        case 0x8a: /* LONG1: little-endian two's complement */
            if (take(m, 1, &p) || (k = *p) > 8 || take(m, k, &p))
                return fail(m, "a long integer");
            v.kind = V_INT;
            v.i = k ? (int64_t)le(p, (int)k) : 0;
            if (k && k < 8 && (p[k - 1] & 0x80))
                v.i -= (int64_t)1 << (8 * k);
            push(m, v);
            break;
        case 'C': case 'U': case 0x8c: case 'B': case 'T': case 'X':
            k = op == 'C' || op == 'U' || op == 0x8c ? 1 : 4;
            if (take(m, k, &p))
                return -1;
            k = (size_t)le(p, (int)k);
            if (take(m, k, &p))
                return -1;
            v.kind = V_STR;
            v.s = (const char *)p;
            v.len = k;
            push(m, v);
            break;
        case 'c': { /* GLOBAL: module\nname\n */
            struct node *g = new_node(m);
            size_t start = m->at, lines = 0;
            while (lines < 2) {
                if (take(m, 1, &p))
                    return -1;
                if (*p == '\n')
                    lines++;
                if (m->at - start >= sizeof g->text)
                    return fail(m, "a global name too long");
            }
            size_t len = m->at - start - 1;
            if (memchr(m->d + start, 0, len))
                return fail(m, "a global name with a NUL byte");
            memcpy(g->text, m->d + start, len);
            g->text[len] = 0;
            *strchr(g->text, '\n') = ' ';   /* the module's end: lines counted two */
            v.kind = V_GLOBAL;
            v.s = g->text;
            v.len = strlen(g->text);
            push(m, v);
            break;
        }
        case 0x93: { /* STACK_GLOBAL */
            if (pop(m, &b) || pop(m, &a) || a.kind != V_STR || b.kind != V_STR ||
                a.len + b.len + 2 > 128)
                return fail(m, "a global");
            struct node *g = new_node(m);
            snprintf(g->text, sizeof g->text, "%.*s %.*s", (int)a.len, a.s, (int)b.len, b.s);
            v.kind = V_GLOBAL;
            v.s = g->text;
            v.len = strlen(g->text);
            push(m, v);
            break;
        }
        case 'q': case 'r': case 0x94:
            if (op == 0x94) {
                k = next_memo;
            } else {
                if (take(m, op == 'q' ? 1 : 4, &p))
                    return -1;
                k = (size_t)le(p, op == 'q' ? 1 : 4);
            }
            if (memo_put(m, k))
                return -1;
            next_memo = k + 1;
            break;
        case 'h': case 'j':
            if (take(m, op == 'h' ? 1 : 4, &p) || memo_get(m, (size_t)le(p, op == 'h' ? 1 : 4)))
                return -1;
            break;
        case ']': case ')':
            v.kind = op == ']' ? V_LIST : V_TUPLE;
            v.p = new_node(m);
            v.p->generic = op == ')';
            push(m, v);
            break;
        case 0x85: case 0x86: case 0x87: {
            int cnt = (int)op - 0x84;
            struct val it[3];
            for (int i = cnt; i-- > 0;)
                if (pop(m, &it[i]))
                    return -1;
            v.kind = V_TUPLE;
            v.p = new_node(m);
            v.p->generic = true;
            for (int i = 0; i < cnt; i++)
                push_item(v.p, it[i]);
            push(m, v);
            break;
        }
        case 't': case 'l': case 'e': {
            if (find_mark(m, &k))
                return -1;
            struct node *dst;
            if (op == 'e') {
                if (k == 0 || m->stack[k - 1].kind != V_LIST)
                    return fail(m, "appends to a non-list");
                dst = m->stack[k - 1].p;
            } else {
                dst = new_node(m);
                dst->generic = op == 't';
            }
            for (size_t i = k + 1; i < m->sp; i++)
                if (op == 't' ? (push_item(dst, m->stack[i]), 0) : append(m, dst, m->stack[i]))
                    return -1;
            m->sp = k;
            if (op != 'e') {
                v.kind = op == 't' ? V_TUPLE : V_LIST;
                v.p = dst;
                push(m, v);
            }
            break;
        }
        case 'a':
            if (pop(m, &a) || !m->sp || m->stack[m->sp - 1].kind != V_LIST ||
                append(m, m->stack[m->sp - 1].p, a))
                return fail(m, "append");
            break;
        case 'R': case 'b':
            if (pop(m, &b) || pop(m, &a))
                return -1;
            if (op == 'R') {
                if (a.kind != V_GLOBAL || b.kind != V_TUPLE)
                    return fail(m, "a call of something else than a global");
                v.kind = V_OBJ;
                v.p = new_node(m);
                c = (struct val){0};
                push_item(v.p, a);
                push_item(v.p, b);
                push_item(v.p, c);
            } else {
                if (a.kind != V_OBJ)
                    return fail(m, "a state for something else than an object");
                a.p->item[2] = b;
                v = a;
            }
            push(m, v);
            break;
        default: {
            char why[64];
            snprintf(why, sizeof why, "pickle opcode 0x%02x, which numpy does not write here", op);
            return fail(m, why);
        }
        }
    }
}

static bool is_global(const struct val *v, const char *a, const char *b)
{
    return v->kind == V_GLOBAL && (!strcmp(v->s, a) || (b && !strcmp(v->s, b)));
}

static bool is_str(const struct val *v, const char *s)
{
    return v->kind == V_STR && v->len == strlen(s) && !memcmp(v->s, s, v->len);
}

/* The n lists of ranks from the pickled object array; -1 with a message. */
static int unpickle(const unsigned char *d, size_t len, long n, const char *what,
                    struct node ***lists, struct vm *m, struct pb_err *e)
{
    memset(m, 0, sizeof *m);
    m->d = d;
    m->n = len;
    m->e = e;
    m->what = what;
    struct val top = {0};
    if (run(m, &top))
        return -1;
    const struct node *o = top.kind == V_OBJ ? top.p : NULL;
    const struct val *args = o ? &o->item[1] : NULL, *st = o ? &o->item[2] : NULL;
    if (!o || !is_global(&o->item[0], "numpy.core.multiarray _reconstruct",
                         "numpy._core.multiarray _reconstruct") ||
        args->p->n != 3 || !is_global(&args->p->item[0], "numpy ndarray", NULL) ||
        st->kind != V_TUPLE || st->p->n != 5)
        return fail(m, "not an ndarray");
    const struct val *s = st->p->item;
    const struct node *shape = s[1].kind == V_TUPLE ? s[1].p : NULL;
    const struct node *dt = s[2].kind == V_OBJ ? s[2].p : NULL;
    if (s[0].kind != V_INT || s[0].i != 1 || !shape || shape->n != 1 ||
        shape->item[0].kind != V_INT || shape->item[0].i != n || !dt ||
        !is_global(&dt->item[0], "numpy dtype", NULL) || dt->item[1].p->n < 1 ||
        !is_str(&dt->item[1].p->item[0], "O8") || s[4].kind != V_LIST)
        return fail(m, "not a one-dimensional object array of the header's length");
    const struct node *l = s[4].p;
    if ((long)l->n != n || l->ni)
        return fail(m, "not a list of one list of ranks per review");
    *lists = pb_xmalloc(((size_t)n + 1) * sizeof **lists);
    for (long i = 0; i < n; i++) {
        if (l->item[i].kind != V_LIST || l->item[i].p->generic) {
            free(*lists);
            return fail(m, "a review that is not a list of word ranks");
        }
        (*lists)[i] = l->item[i].p;
    }
    return 0;
}

static void vm_finish(struct vm *m)
{
    for (struct node *p = m->nodes, *q; p; p = q) {
        q = p->next;
        free(p->item);
        free(p->ints);
        free(p);
    }
    free(m->stack);
    free(m->memo);
}

/* ---- .npy members ---- */

struct npy {
    unsigned char *raw;  /* the member */
    const unsigned char *data;
    size_t len;          /* data bytes */
    char descr[16];
    long n;
};

/* Member `name` of the zip read whole, its .npy header parsed (1-D, C order). */
static int read_npy(zip_t *z, const char *path, const char *name, struct npy *a, struct pb_err *e)
{
    memset(a, 0, sizeof *a);
    zip_stat_t st;
    zip_file_t *f;
    if (zip_stat(z, name, 0, &st) || !(st.valid & ZIP_STAT_SIZE) || !(f = zip_fopen(z, name, 0)))
        return pb_err_set(e, "imdb: %s has no member %s (%s); it is not Keras' imdb.npz: fetch "
                             "it afresh", path, name, zip_strerror(z));
    /* the size the archive claims, against what its compressed bytes can hold (deflate
       expands at most 1032 times), before the allocation */
    bool comp = (st.valid & ZIP_STAT_COMP_SIZE) && (st.valid & ZIP_STAT_COMP_METHOD);
    if (comp && ((st.comp_method == ZIP_CM_STORE && st.size != st.comp_size) ||
                 (st.comp_method == ZIP_CM_DEFLATE && st.size / 1032 > st.comp_size + 1))) {
        zip_fclose(f);
        return pb_err_set(e, "imdb: %s in %s claims %llu bytes from %llu compressed (a damaged "
                             "archive); fetch imdb.npz afresh", name, path,
                          (unsigned long long)st.size, (unsigned long long)st.comp_size);
    }
    a->raw = pb_malloc_or_err(st.size + 1, "imdb.npz's member", e);
    zip_int64_t got = a->raw ? zip_fread(f, a->raw, st.size) : -1;
    zip_fclose(f);
    if (!a->raw || got != (zip_int64_t)st.size) {
        free(a->raw);
        a->raw = NULL;
        return pb_err_set(e, "imdb: cannot read %s from %s (corrupt or truncated: %s); fetch "
                             "imdb.npz afresh", name, path, zip_strerror(z));
    }
    const unsigned char *r = a->raw;
    size_t hl = 0, off = 0;
    if (st.size >= 10 && !memcmp(r, "\x93NUMPY", 6))
        off = r[6] == 1 ? 10 : 12, hl = r[6] == 1 ? (size_t)(r[8] | r[9] << 8)
                                                 : (size_t)le(r + 8, 4);
    char hdr[512] = "";
    if (off && off + hl <= st.size && hl < sizeof hdr)
        memcpy(hdr, r + off, hl);
    const char *d = strstr(hdr, "'descr': '"), *s = strstr(hdr, "'shape': (");
    char *end;
    a->n = s ? strtol(s + 10, &end, 10) : -1;
    if (!d || !s || strstr(hdr, "'fortran_order': True") || a->n < 0 ||
        (*end != ',' && *end != ')') || strncmp(end, ",)", 2) || !strchr(d + 10, '\'') ||
        strchr(d + 10, '\'') - (d + 10) >= (long)sizeof a->descr) {
        free(a->raw);
        a->raw = NULL;
        return pb_err_set(e, "imdb: %s in %s is not a one-dimensional .npy array; fetch "
                             "imdb.npz afresh", name, path);
    }
    memcpy(a->descr, d + 10, (size_t)(strchr(d + 10, '\'') - (d + 10)));
    a->data = r + off + hl;
    a->len = st.size - off - hl;
    /* every element takes at least one byte (an object array's pickle more): a shape
       beyond the data's length is a damaged header, refused before any allocation */
    if ((unsigned long)a->n > a->len) {
        free(a->raw);
        a->raw = NULL;
        return pb_err_set(e, "imdb: %s in %s claims %ld entries but holds %zu bytes of data "
                             "(a damaged header); fetch imdb.npz afresh", name, path, a->n,
                          a->len);
    }
    return 0;
}

/* The labels: an integer .npy of n values in {0, 1}. */
static int labels(const struct npy *a, const char *name, int32_t *y, struct pb_err *e)
{
    int w = !strcmp(a->descr, "<i8") || !strcmp(a->descr, "<u8") ? 8
          : !strcmp(a->descr, "<i4") || !strcmp(a->descr, "<u4") ? 4
          : !strcmp(a->descr, "|i1") || !strcmp(a->descr, "|u1") ? 1 : 0;
    if (!w || (size_t)a->n > a->len / (size_t)w)
        return pb_err_set(e, "imdb: %s in imdb.npz holds %s, not %ld integer labels; fetch "
                             "imdb.npz afresh", name, w ? "too few bytes" : a->descr, a->n);
    for (long i = 0; i < a->n; i++) {
        uint64_t v = le(a->data + (size_t)i * w, w);
        if (v > 1)
            return pb_err_set(e, "imdb: label %ld of %s in imdb.npz is %llu, not 0 or 1", i, name,
                              (unsigned long long)v);
        y[i] = (int32_t)v;
    }
    return 0;
}

int pb_dataset_imdb_npz(struct pb_dataset *ds, const char *path, enum pb_split split, int limit,
                        const struct pb_dataset_opts *opts, struct pb_err *e)
{
    memset(ds, 0, sizeof *ds);
    int vocab = opts && opts->vocab ? opts->vocab : 10000;
    int steps = opts && opts->steps ? opts->steps : 200;
    int parts = opts && opts->parts ? opts->parts : PB_DATA_ALL;
    int zerr = 0;
    zip_t *z = zip_open(path, ZIP_RDONLY | ZIP_CHECKCONS, &zerr);
    if (!z) {
        zip_error_t ze;
        zip_error_init_with_code(&ze, zerr);
        pb_err_set(e, "imdb: %s is not a readable zip archive (%s); fetch imdb.npz afresh "
                      "(Keras' https://storage.googleapis.com/tensorflow/tf-keras-datasets/"
                      "imdb.npz) or remove it to read aclImdb/", path, zip_error_strerror(&ze));
        zip_error_fini(&ze);
        return -1;
    }
    const char *sx = split == PB_SPLIT_TRAIN ? "x_train.npy" : "x_test.npy";
    const char *sy = split == PB_SPLIT_TRAIN ? "y_train.npy" : "y_test.npy";
    struct npy ax = {0}, ay;
    struct vm m = {0};
    struct node **lists = NULL;
    int32_t *y = NULL;
    int rc = read_npy(z, path, sy, &ay, e);
    if (!rc) {   /* ay.n <= the member's length: read_npy checked it */
        y = pb_xmalloc(((size_t)ay.n + 1) * sizeof *y);
        rc = labels(&ay, sy, y, e);
    }
    if (!rc)
        rc = read_npy(z, path, sx, &ax, e);
    if (!rc && (strcmp(ax.descr, "|O") || ax.n != ay.n))
        rc = pb_err_set(e, "imdb: %s in %s holds %s [%ld], not %ld object sequences", sx, path,
                        ax.descr, ax.n, ay.n);
    if (!rc)
        rc = unpickle(ax.data, ax.len, ax.n, sx, &lists, &m, e);
    long n = ay.n;
    if (!rc && limit > n)
        rc = pb_err_set(e, "imdb: the sample limit %d is more than the %ld reviews of the %s "
                           "split" PB_LIMIT_ADVICE, limit, n,
                        split == PB_SPLIT_TRAIN ? "training" : "test");
    if (!rc && n == 0)
        rc = pb_err_set(e, "imdb: %s in %s holds no reviews", sx, path);
    int keep = rc ? 0 : limit > 0 ? limit : (int)n;
    if (!rc && (parts & PB_DATA_INPUTS))
        ds->x = pb_xcalloc((size_t)keep * steps, sizeof *ds->x);
    if (!rc && (parts & PB_DATA_LABELS)) {
        ds->y = pb_xmalloc((size_t)keep * sizeof *ds->y);
        ds->len = pb_xmalloc((size_t)keep * sizeof *ds->len);
    }
    /* alternate the labels: the k-th of label c, each class in file order */
    long next[2] = {0, 0};
    for (int i = 0; !rc && i < keep; i++) {
        int want = i % 2;
        while (next[want] < n && y[next[want]] != want)
            next[want]++;
        if (next[want] >= n) {
            want = 1 - want;
            while (next[want] < n && y[next[want]] != want)
                next[want]++;
        }
        const struct node *r = lists[next[want]];
        int len = 1 + (int)r->ni < steps ? 1 + (int)r->ni : steps;
        if (ds->x) {
            float *x = ds->x + (size_t)i * steps;
            x[0] = 1.0f;
            for (int t = 1; t < len; t++) {
                int64_t id = (int64_t)r->ints[t - 1] + 3;
                x[t] = (float)(id < vocab ? id : 2);
            }
        }
        if (ds->y) {
            ds->y[i] = want;
            ds->len[i] = len;
        }
        next[want]++;
    }
    free(lists);
    vm_finish(&m);
    free(ax.raw);
    free(ay.raw);
    free(y);
    zip_discard(z);
    if (rc) {
        pb_dataset_finish(ds);
        return -1;
    }
    ds->name = pb_xstrdup("imdb");
    ds->n = keep;
    ds->c = steps;
    ds->h = ds->w = 1;
    ds->nclasses = 2;
    ds->vocab = vocab;
    return 0;
}
