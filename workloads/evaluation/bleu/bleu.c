/* workloads/evaluation/bleu/bleu.c — BLEU's segment statistics and the corpus score, as
 * sacreBLEU's BLEU.corpus_score and BLEU.compute_bleu (smooth 'exp', effective order
 * off), and the text options (merge, detokenise, lowercase, tokenise). A segment's
 * tokens are interned to small ids (equal strings, equal ids); for each order the
 * hypothesis' and the reference's n-grams (start positions) are sorted by their id
 * sequences and walked together: each distinct hypothesis n-gram counts min(its count,
 * the reference's) matches. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/err.h"
#include "workloads/evaluation/bleu/bleu.h"
#include "workloads/evaluation/bleu/uchar.h"

/* One side's tokens: a writable copy of the text cut at the spaces, and the ids. */
struct side {
    char *text;
    char **tok;
    int *id;
    long n;
};

static void side_split(struct side *s, const char *tokens)
{
    s->text = pb_xstrdup(tokens);
    s->n = 0;
    for (const char *p = s->text; *p;) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        s->n++;
        while (*p && *p != ' ')
            p++;
    }
    s->tok = pb_xmalloc((size_t)(s->n + 1) * sizeof *s->tok);
    s->id = pb_xmalloc((size_t)(s->n + 1) * sizeof *s->id);
    long k = 0;
    for (char *p = s->text; *p;) {
        while (*p == ' ')
            *p++ = 0;
        if (!*p)
            break;
        s->tok[k++] = p;
        while (*p && *p != ' ')
            p++;
    }
}

static void side_finish(struct side *s)
{
    free(s->text);
    free(s->tok);
    free(s->id);
}

struct tok_ref {
    const char *s;
    int *id;  /* where its id goes */
};

static int tok_cmp(const void *a, const void *b)
{
    return strcmp(((const struct tok_ref *)a)->s, ((const struct tok_ref *)b)->s);
}

/* Gives equal tokens of both sides equal ids. */
static void intern(struct side *h, struct side *r)
{
    long n = h->n + r->n;
    struct tok_ref *all = pb_xmalloc((size_t)(n + 1) * sizeof *all);
    for (long i = 0; i < h->n; i++)
        all[i] = (struct tok_ref){h->tok[i], &h->id[i]};
    for (long i = 0; i < r->n; i++)
        all[h->n + i] = (struct tok_ref){r->tok[i], &r->id[i]};
    qsort(all, (size_t)n, sizeof *all, tok_cmp);
    int id = -1;
    for (long i = 0; i < n; i++) {
        if (i == 0 || strcmp(all[i].s, all[i - 1].s))
            id++;
        *all[i].id = id;
    }
    free(all);
}

/* n-gram comparison: the ids at two start positions, n long. */
static const int *ngram_ids;
static int ngram_n;

static int ngram_cmp_ids(const int *a, const int *b, int n)
{
    for (int k = 0; k < n; k++)
        if (a[k] != b[k])
            return a[k] < b[k] ? -1 : 1;
    return 0;
}

static int ngram_cmp(const void *a, const void *b)
{
    return ngram_cmp_ids(ngram_ids + *(const long *)a, ngram_ids + *(const long *)b, ngram_n);
}

/* The start positions of s's n-grams, sorted; *count of them. */
static long *sorted_ngrams(const struct side *s, int n, long *count)
{
    *count = s->n >= n ? s->n - n + 1 : 0;
    long *at = pb_xmalloc((size_t)(*count + 1) * sizeof *at);
    for (long i = 0; i < *count; i++)
        at[i] = i;
    ngram_ids = s->id;
    ngram_n = n;
    qsort(at, (size_t)*count, sizeof *at, ngram_cmp);
    ngram_ids = NULL;
    return at;
}

/* The clipped matches of order n. */
static long matches(const struct side *h, const struct side *r, int n)
{
    long nh, nr, m = 0;
    long *ah = sorted_ngrams(h, n, &nh), *ar = sorted_ngrams(r, n, &nr);
    long i = 0, j = 0;
    while (i < nh) {
        const int *g = h->id + ah[i];
        long ch = 0, cr = 0;
        while (i < nh && !ngram_cmp_ids(h->id + ah[i], g, n))
            i++, ch++;
        while (j < nr && ngram_cmp_ids(r->id + ar[j], g, n) < 0)
            j++;
        while (j < nr && !ngram_cmp_ids(r->id + ar[j], g, n))
            j++, cr++;
        m += ch < cr ? ch : cr;
    }
    free(ah);
    free(ar);
    return m;
}

void pb_bleu_add_tokens(struct pb_bleu *b, const char *hyp, const char *ref)
{
    struct side h, r;
    side_split(&h, hyp);
    side_split(&r, ref);
    intern(&h, &r);
    b->segments++;
    b->hyp_len += h.n;
    b->ref_len += r.n;
    for (int n = 1; n <= PB_BLEU_ORDER; n++) {
        b->total[n - 1] += h.n >= n ? h.n - n + 1 : 0;
        b->correct[n - 1] += matches(&h, &r, n);
    }
    side_finish(&h);
    side_finish(&r);
}

void pb_bleu_add(struct pb_bleu *b, const char *hyp, const char *ref)
{
    char *th = pb_bleu_tokenize_13a(hyp), *tr = pb_bleu_tokenize_13a(ref);
    pb_bleu_add_tokens(b, th, tr);
    free(th);
    free(tr);
}

int pb_bleu_tok_parse(const char *name, enum pb_bleu_tok *out, struct pb_err *e)
{
    if (!strcmp(name, "13a"))
        *out = PB_BLEU_TOK_13A;
    else if (!strcmp(name, "intl"))
        *out = PB_BLEU_TOK_INTL;
    else
        return pb_err_set(e, "--tokenize '%s': pipebench has sacreBLEU's '13a' (its default) "
                             "and 'intl' (the MLPerf GNMT reference's)", name);
    return 0;
}

const char *pb_bleu_tok_name(enum pb_bleu_tok tok)
{
    return tok == PB_BLEU_TOK_INTL ? "intl" : "13a";
}

void pb_bleu_opts_mlperf(struct pb_bleu_opts *o)
{
    *o = (struct pb_bleu_opts){.merge_bpe = true, .detok = PB_DETOK_EN, .lowercase = true,
                               .tok = PB_BLEU_TOK_INTL};
}

/* One side's text as it is counted: merged, detokenised (hypothesis), lowercased,
 * tokenised. */
static char *prepare(const char *line, const struct pb_bleu_opts *o, bool hyp)
{
    char *s = o->merge_bpe ? pb_bleu_merge_bpe(line) : pb_xstrdup(line);
    if (hyp && o->detok != PB_DETOK_NONE) {
        char *d = pb_detok(s, o->detok);
        free(s);
        s = d;
    }
    if (o->lowercase) {
        char *l = pb_uchar_lower(s);
        free(s);
        s = l;
    }
    char *t = o->tok == PB_BLEU_TOK_INTL ? pb_bleu_tokenize_intl(s) : pb_bleu_tokenize_13a(s);
    free(s);
    return t;
}

void pb_bleu_add_opts(struct pb_bleu *b, const char *hyp, const char *ref,
                      const struct pb_bleu_opts *o)
{
    char *th = prepare(hyp, o, true), *tr = prepare(ref, o, false);
    pb_bleu_add_tokens(b, th, tr);
    free(th);
    free(tr);
}

/* sacreBLEU's my_log: log, with log 0 taken as -9999999999. */
static double floor_log(double x)
{
    return x == 0.0 ? -9999999999.0 : log(x);
}

void pb_bleu_score(const struct pb_bleu *b, struct pb_bleu_score *s)
{
    memset(s, 0, sizeof *s);
    s->hyp_len = b->hyp_len;
    s->ref_len = b->ref_len;
    s->ratio = b->ref_len ? (double)b->hyp_len / (double)b->ref_len : 0.0;
    s->bp = 1.0;
    if (b->hyp_len < b->ref_len)
        s->bp = b->hyp_len > 0 ? exp(1.0 - (double)b->ref_len / (double)b->hyp_len) : 0.0;
    bool any = false;
    for (int n = 0; n < PB_BLEU_ORDER; n++)
        any = any || b->correct[n];
    if (!any)
        return;
    double smooth = 1.0;
    for (int n = 0; n < PB_BLEU_ORDER; n++) {
        if (b->total[n] == 0)
            break;
        if (b->correct[n] == 0) {
            smooth *= 2.0;
            s->precision[n] = 100.0 / (smooth * (double)b->total[n]);
        } else {
            s->precision[n] = 100.0 * (double)b->correct[n] / (double)b->total[n];
        }
    }
    double sum = 0.0;
    for (int n = 0; n < PB_BLEU_ORDER; n++)
        sum += floor_log(s->precision[n]);
    s->bleu = s->bp * exp(sum / PB_BLEU_ORDER);
}
