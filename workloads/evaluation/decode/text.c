/* workloads/evaluation/decode/text.c — a decoded output row back to text (decode.h): the BPE tokens
 * through the wmt16 vocabulary, then, for BLEU, the BPE joins undone as
 * workloads/evaluation/bleu/'s pb_bleu_merge_bpe (`pipebench bleu --merge-bpe`) undoes them. */
#include <stdlib.h>
#include <string.h>

#include "workloads/datasets/dataset.h"
#include "workloads/evaluation/bleu/bleu.h"
#include "workloads/evaluation/decode/decode.h"

int pb_decode_bpe(const struct pb_wmt16_vocab *v, const int32_t *tokens, int len, char **text,
                  struct pb_err *e)
{
    *text = NULL;
    size_t cap = 1, n = 0;
    int first = len > 0 && tokens[0] == PB_WMT16_BOS ? 1 : 0;
    for (int t = first; t < len && tokens[t] != PB_WMT16_EOS; t++) {
        const char *w = pb_wmt16_vocab_token(v, tokens[t]);
        if (!w)
            return pb_err_set(e, "decoding: token %d of the output is id %d, outside the "
                                 "vocabulary of %d: the model and the vocabulary differ",
                              t, (int)tokens[t], v->size);
        cap += strlen(w) + 1;
    }
    char *s = pb_xmalloc(cap);
    for (int t = first; t < len && tokens[t] != PB_WMT16_EOS; t++) {
        if (tokens[t] == PB_WMT16_PAD || tokens[t] == PB_WMT16_BOS)
            continue;
        const char *w = pb_wmt16_vocab_token(v, tokens[t]);
        size_t k = strlen(w);
        if (n)
            s[n++] = ' ';
        memcpy(s + n, w, k);
        n += k;
    }
    s[n] = 0;
    *text = s;
    return 0;
}

int pb_decode_text(const struct pb_wmt16_vocab *v, const int32_t *tokens, int len, char **text,
                   struct pb_err *e)
{
    char *bpe;
    *text = NULL;
    if (pb_decode_bpe(v, tokens, len, &bpe, e))
        return -1;
    *text = pb_bleu_merge_bpe(bpe);
    free(bpe);
    return 0;
}
