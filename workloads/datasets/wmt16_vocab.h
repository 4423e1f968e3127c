/* workloads/datasets/wmt16_vocab.h — the wmt16-de-en vocabulary as the MLPerf GNMT
 * reference's tokenizer builds it from vocab.bpe.32000: <pad> 0, <unk> 1, <s> 2 (BOS),
 * <\s> 3 (EOS), then the file's lines (stripped of ASCII whitespace), padded with
 * madeupword0000, … to a multiple of 8; a token the file repeats is found at its last id.
 * Both directions: token -> id for the loader (wmt16.c), id -> token for turning decoded
 * ids back into BPE text (workloads/evaluation/decode/). */
#ifndef PB_WMT16_VOCAB_H
#define PB_WMT16_VOCAB_H

#include <stddef.h>

#include "harness/base/err.h"

/* What the messages of a missing or broken preprocessing folder advise. */
#define PB_WMT16_ADVICE                                                                  \
    "; download and preprocess the data with the MLPerf GNMT reference's "                \
    "download_dataset.sh and point --data-dir or PIPEBENCH_WMT16_DE_EN_DIR at the folder " \
    "holding them (default /usr/share/datasets/wmt16-de-en)"

struct pb_wmt16_vocab {
    char **tok;  /* [size] by id, NUL-terminated */
    int size;
    int *slot;   /* [cap] ids of an open-addressing table, -1 empty */
    size_t cap;
};

/* Reads the vocabulary file at path. -1 with a message (what to download and where) for a
 * file that cannot be read, is empty or holds a NUL byte. */
int pb_wmt16_vocab_load(struct pb_wmt16_vocab *v, const char *path, struct pb_err *e);
/* The path of file `name` of the preprocessing folder dir: dir/wmt16_de_en/name when that
 * exists, else dir/name. */
void pb_wmt16_path(char *out, size_t cap, const char *dir, const char *name);
/* The id of the len bytes at w, PB_WMT16_UNK (1) when the vocabulary lacks them. */
int pb_wmt16_vocab_id(const struct pb_wmt16_vocab *v, const char *w, size_t len);
/* The token of id, NULL for an id outside [0, size). */
const char *pb_wmt16_vocab_token(const struct pb_wmt16_vocab *v, int id);
void pb_wmt16_vocab_finish(struct pb_wmt16_vocab *v);

#endif
