/* workloads/datasets/wmt16.c — WMT16 English→German from the MLPerf GNMT preprocessing
 * (its download_dataset.sh): train.tok.clean.bpe.32000.{en,de} (training),
 * newstest2014.tok.bpe.32000.{en,de} (test) and vocab.bpe.32000, in the folder or its
 * wmt16_de_en/ folder. As the MLPerf reference's tokenizer: the vocabulary is <pad> 0,
 * <unk> 1, <s> 2 (BOS), <\s> 3 (EOS), then the file's lines (stripped; a repeated token
 * takes its last id), padded with madeupword0000, … to a multiple of 8; a line is split
 * at (ASCII) whitespace, each token its id or UNK, framed as BOS ids EOS. Ids at or
 * above opts' vocab (when set and smaller) become UNK.
 * A pair is kept for training when both sides are at most T tokens (BOS and EOS
 * included; T = opts' steps, 50 by default, the reference's max_length_train); test
 * pairs are all kept, a side longer than T cut to its first T − 1 tokens and EOS.
 * Layout (dataset.h): x [n, 2T] source ids then target ids (floats, each side padded
 * with 0), len [n] source lengths, y [n] target lengths (nclasses T + 1), tgt [n, T]
 * target ids (int32, labels part); len and y are loaded with either part. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness/base/in_file.h"
#include "workloads/datasets/dataset.h"
#include "workloads/datasets/wmt16_vocab.h"

#define ADVICE PB_WMT16_ADVICE

static bool is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* ---- one line -> ids ---- */

/* Tokens of line framed by BOS, EOS into ids[0 .. cap) (cap >= 2); returns the full
 * framed length (it may exceed cap: the caller decides). */
static int line_ids(const struct pb_wmt16_vocab *v, int vocab, char *line, int32_t *ids, int cap)
{
    int n = 0;
    ids[n++] = PB_WMT16_BOS;
    for (char *p = line; *p;) {
        while (*p && is_ws(*p))
            p++;
        char *s = p;
        while (*p && !is_ws(*p))
            p++;
        if (p == s)
            break;
        int id = pb_wmt16_vocab_id(v, s, (size_t)(p - s));
        if (n < cap)
            ids[n] = id < vocab ? id : PB_WMT16_UNK;
        n++;
    }
    if (n < cap)
        ids[n] = PB_WMT16_EOS;
    return n + 1;
}

/* ---- the loader ---- */

static void grow(struct pb_dataset *ds, int need, int *cap, int steps, bool inputs, bool labels)
{
    if (need <= *cap)
        return;
    int c = *cap ? 2 * *cap : 4096;
    float *x = inputs ? realloc(ds->x, (size_t)c * 2 * steps * sizeof *x) : NULL;
    int32_t *t = labels ? realloc(ds->tgt, (size_t)c * steps * sizeof *t) : NULL;
    int32_t *l = realloc(ds->len, (size_t)c * sizeof *l);
    int32_t *y = realloc(ds->y, (size_t)c * sizeof *y);
    PB_CHECK((!inputs || x) && (!labels || t) && l && y);
    ds->x = x;
    ds->tgt = t;
    ds->len = l;
    ds->y = y;
    *cap = c;
}

/* The framed ids into row (T wide, 0-padded) from ids (n framed, maybe more than
 * held); test rows cut at T keep EOS last. Returns the stored length. */
static int store_side(const int32_t *ids, int n, int steps, float *xrow, int32_t *trow)
{
    int len = n < steps ? n : steps;
    for (int t = 0; t < steps; t++) {
        int32_t id = t >= len ? PB_WMT16_PAD : t == len - 1 ? PB_WMT16_EOS : ids[t];
        if (xrow)
            xrow[t] = (float)id;
        if (trow)
            trow[t] = id;
    }
    return len;
}

int pb_dataset_wmt16(struct pb_dataset *ds, const char *dir, const char *origin,
                     enum pb_split split, int limit, const struct pb_dataset_opts *opts,
                     struct pb_err *e)
{
    memset(ds, 0, sizeof *ds);
    int steps = opts && opts->steps ? opts->steps : 50;
    int parts = opts && opts->parts ? opts->parts : PB_DATA_ALL;
    bool inputs = parts & PB_DATA_INPUTS, labels = parts & PB_DATA_LABELS;
    if (steps < 3)
        return pb_err_set(e, "wmt16-de-en: sequences need at least 3 tokens (BOS, a word, EOS), "
                             "got %d", steps);
    char vpath[4200], spath[4200], tpath[4200];
    const char *stem = split == PB_SPLIT_TRAIN ? "train.tok.clean.bpe.32000"
                                               : "newstest2014.tok.bpe.32000";
    char name[64];
    pb_wmt16_path(vpath, sizeof vpath, dir, "vocab.bpe.32000");
    snprintf(name, sizeof name, "%s.en", stem);
    pb_wmt16_path(spath, sizeof spath, dir, name);
    snprintf(name, sizeof name, "%s.de", stem);
    pb_wmt16_path(tpath, sizeof tpath, dir, name);
    struct stat st;
    const char *need[] = {vpath, spath, tpath};
    for (int i = 0; i < 3; i++)
        if (stat(need[i], &st) || !S_ISREG(st.st_mode))
            return pb_err_set(e, "wmt16-de-en: no %s in %s (from %s)" ADVICE,
                              strrchr(need[i], '/') + 1, dir, origin);
    struct pb_wmt16_vocab v;
    if (pb_wmt16_vocab_load(&v, vpath, e))
        return pb_err_prefix(e, "wmt16-de-en: ");
    int vocab = opts && opts->vocab && opts->vocab < v.size ? opts->vocab : v.size;
    struct pb_err why;
    FILE *fs = pb_in_file_open(spath, 0, &why), *ft = fs ? pb_in_file_open(tpath, 0, &why) : NULL;
    if (!fs || !ft) {
        int err = errno;
        if (fs)
            fclose(fs);
        pb_wmt16_vocab_finish(&v);
        if (!err)
            return pb_err_set(e, "wmt16-de-en: %s" ADVICE, why.msg);
        return pb_err_set(e, "wmt16-de-en: cannot open %s: %s" ADVICE, !fs ? spath : tpath,
                          strerror(err));
    }
    char *ls = NULL, *lt = NULL;
    size_t cs = 0, ct = 0;
    int32_t *is = NULL, *it = NULL;
    int icap = 0, cap = 0, n = 0, rc = 0;
    long line = 0;
    for (;;) {
        ssize_t gs = getline(&ls, &cs, fs), gt = getline(&lt, &ct, ft);
        if (gs < 0 || gt < 0) {
            if (gs >= 0 || gt >= 0)
                rc = pb_err_set(e, "wmt16-de-en: %s and %s differ in length (one ends at line "
                                   "%ld): they must be line-aligned" ADVICE, spath, tpath, line);
            break;
        }
        line++;
        if (memchr(ls, 0, (size_t)gs) || memchr(lt, 0, (size_t)gt)) {
            rc = pb_err_set(e, "wmt16-de-en: line %ld of %s holds a NUL byte: it is not BPE "
                               "text" ADVICE, line, memchr(ls, 0, (size_t)gs) ? spath : tpath);
            break;
        }
        if ((int)(gs + gt) + 4 > icap) {
            icap = (int)(gs + gt) + 4;
            free(is);
            free(it);
            is = pb_xmalloc((size_t)icap * sizeof *is);
            it = pb_xmalloc((size_t)icap * sizeof *it);
        }
        int ns = line_ids(&v, vocab, ls, is, icap), nt = line_ids(&v, vocab, lt, it, icap);
        if (split == PB_SPLIT_TRAIN && (ns > steps || nt > steps))
            continue;
        if (limit > 0 && n == limit)
            break;
        grow(ds, n + 1, &cap, steps, inputs, labels);
        float *xr = inputs ? ds->x + (size_t)n * 2 * steps : NULL;
        ds->len[n] = store_side(is, ns, steps, xr, NULL);
        ds->y[n] = store_side(it, nt, steps, xr ? xr + steps : NULL,
                              labels ? ds->tgt + (size_t)n * steps : NULL);
        n++;
    }
    free(ls);
    free(lt);
    free(is);
    free(it);
    fclose(fs);
    fclose(ft);
    pb_wmt16_vocab_finish(&v);
    if (!rc && (n == 0 || limit > n))
        rc = pb_err_set(e, "wmt16-de-en: %s holds %d pairs%s%s", spath, n,
                        split == PB_SPLIT_TRAIN ? " of at most the sequence length" : "",
                        n ? ", fewer than the sample limit" PB_LIMIT_ADVICE : ADVICE);
    if (rc) {
        pb_dataset_finish(ds);
        return -1;
    }
    ds->name = pb_xstrdup("wmt16-de-en");
    ds->n = n;
    ds->c = 2 * steps;
    ds->h = ds->w = 1;
    ds->nclasses = steps + 1;
    ds->vocab = vocab;
    ds->tgt_steps = steps;
    return 0;
}
