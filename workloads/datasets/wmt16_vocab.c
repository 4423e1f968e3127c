/* workloads/datasets/wmt16_vocab.c — the wmt16-de-en vocabulary (wmt16_vocab.h): the
 * tokens by id and an open-addressing hash table (FNV-1a, linear probing) token -> id. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "harness/base/in_file.h"
#include "workloads/datasets/dataset.h"
#include "workloads/datasets/wmt16_vocab.h"

static uint64_t hash_tok(const char *w, size_t len)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)w[i]) * 1099511628211ull;
    return h;
}

static size_t find_slot(const struct pb_wmt16_vocab *v, const char *w, size_t len)
{
    size_t i = hash_tok(w, len) & (v->cap - 1);
    while (v->slot[i] >= 0 &&
           (strlen(v->tok[v->slot[i]]) != len || memcmp(v->tok[v->slot[i]], w, len)))
        i = (i + 1) & (v->cap - 1);
    return i;
}

int pb_wmt16_vocab_id(const struct pb_wmt16_vocab *v, const char *w, size_t len)
{
    int id = v->slot[find_slot(v, w, len)];
    return id >= 0 ? id : PB_WMT16_UNK;
}

const char *pb_wmt16_vocab_token(const struct pb_wmt16_vocab *v, int id)
{
    return id >= 0 && id < v->size ? v->tok[id] : NULL;
}

static void vocab_push(struct pb_wmt16_vocab *v, const char *w, size_t len, int *tcap)
{
    if (v->size == *tcap) {
        *tcap = *tcap ? 2 * *tcap : 1024;
        char **t = realloc(v->tok, (size_t)*tcap * sizeof *t);
        PB_CHECK(t != NULL);
        v->tok = t;
    }
    char *s = pb_xmalloc(len + 1);
    memcpy(s, w, len);
    s[len] = 0;
    v->tok[v->size++] = s;
}

void pb_wmt16_vocab_finish(struct pb_wmt16_vocab *v)
{
    for (int i = 0; i < v->size; i++)
        free(v->tok[i]);
    free(v->tok);
    free(v->slot);
    memset(v, 0, sizeof *v);
}

static bool is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

int pb_wmt16_vocab_load(struct pb_wmt16_vocab *v, const char *path, struct pb_err *e)
{
    memset(v, 0, sizeof *v);
    struct pb_err why;
    FILE *f = pb_in_file_open(path, PB_TEXT_MAX_BYTES, &why);
    if (!f && !errno)
        return pb_err_set(e, "the vocabulary %s" PB_WMT16_ADVICE, why.msg);
    if (!f)
        return pb_err_set(e, "cannot open the vocabulary %s: %s" PB_WMT16_ADVICE, path,
                          strerror(errno));
    int tcap = 0;
    const char *specials[] = {"<pad>", "<unk>", "<s>", "<\\s>"};
    for (int i = 0; i < 4; i++)
        vocab_push(v, specials[i], strlen(specials[i]), &tcap);
    char *line = NULL;
    size_t lcap = 0;
    ssize_t got;
    while ((got = getline(&line, &lcap, f)) >= 0) {
        if (memchr(line, 0, (size_t)got)) {
            int at = v->size - 3;
            free(line);
            fclose(f);
            pb_wmt16_vocab_finish(v);
            return pb_err_set(e, "the vocabulary %s holds a NUL byte (line %d): it is not "
                                 "vocab.bpe.32000" PB_WMT16_ADVICE, path, at);
        }
        char *s = line, *t = line + got;
        while (s < t && is_ws(*s))
            s++;
        while (t > s && is_ws(t[-1]))
            t--;
        vocab_push(v, s, (size_t)(t - s), &tcap);
    }
    free(line);
    bool bad = ferror(f);
    fclose(f);
    if (bad || v->size == 4) {
        pb_wmt16_vocab_finish(v);
        return pb_err_set(e, "the vocabulary %s is %s" PB_WMT16_ADVICE, path,
                          bad ? "unreadable" : "empty");
    }
    for (int i = 0; v->size % 8; i++) {
        char pad[32];
        snprintf(pad, sizeof pad, "madeupword%04d", i);
        vocab_push(v, pad, strlen(pad), &tcap);
    }
    for (v->cap = 1024; v->cap < 2 * (size_t)v->size; v->cap *= 2)
        ;
    v->slot = pb_xmalloc(v->cap * sizeof *v->slot);
    for (size_t i = 0; i < v->cap; i++)
        v->slot[i] = -1;
    for (int id = 0; id < v->size; id++)  /* a later duplicate takes the slot */
        v->slot[find_slot(v, v->tok[id], strlen(v->tok[id]))] = id;
    return 0;
}

void pb_wmt16_path(char *out, size_t cap, const char *dir, const char *name)
{
    struct stat st;
    snprintf(out, cap, "%s/wmt16_de_en/%s", dir, name);
    if (stat(out, &st))
        snprintf(out, cap, "%s/%s", dir, name);
}
