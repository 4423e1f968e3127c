/* harness/base/safetensors.h — the safetensors format (checkpoints and test fixtures).
 * File: u64 little-endian header length, a JSON header mapping each tensor name to
 * {dtype, shape, data_offsets}, then the raw little-endian data. PyTorch's
 * safetensors package loads what this writes, and the fixtures written by
 * tests/fixtures/gen_fixtures.py load here. The writer keeps a CRC-32 of the data section
 * in __metadata__ (PB_ST_CRC_KEY, which PyTorch ignores); the reader checks it where it is
 * present and hands the rest of __metadata__ on without it (none when nothing is left). */
#ifndef PB_SAFETENSORS_H
#define PB_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "harness/base/err.h"

#define PB_ST_MAX_DIMS 8
#define PB_ST_CRC_KEY "pb_crc32"

enum pb_st_dtype { PB_ST_F32, PB_ST_F64, PB_ST_I32, PB_ST_I64 };

struct pb_st_tensor {
    char *name;
    enum pb_st_dtype dtype;
    int ndim;
    int64_t shape[PB_ST_MAX_DIMS];
    size_t count;                /* elements */
    const unsigned char *data;   /* into the file's data section (reader) or the
                                    caller's memory (writer) */
    size_t end;                  /* reader: end of its bytes in the data section */
};

struct pb_safetensors {
    int n, cap;
    struct pb_st_tensor *t;
    unsigned char *blob;  /* the whole file (reader) */
    char *metadata;       /* "__metadata__" as a JSON object text, or NULL */
};

/* Reader: checks the header (unique names, one __metadata__: an object of strings),
 * dtypes, whole-number shapes and offsets, shapes against offsets, and that the
 * tensors' bytes tile the data section without holes or overlaps. */
int pb_st_load(struct pb_safetensors *st, const char *path, struct pb_err *e);
/* The same for a file's len bytes in memory (copied); name stands for the path in
 * messages. */
int pb_st_load_mem(struct pb_safetensors *st, const void *bytes, size_t len, const char *name,
                   struct pb_err *e);
void pb_st_finish(struct pb_safetensors *st);
const struct pb_st_tensor *pb_st_find(const struct pb_safetensors *st, const char *name);
/* The F32 tensor `name` copied into out[count], or an error naming what is missing
 * or of the wrong size/dtype. F64 tensors are converted. */
int pb_st_read_f32(const struct pb_safetensors *st, const char *name, float *out, size_t count,
                   struct pb_err *e);
/* The same for a tensor that must have exactly this shape; a missing name lists the
 * file's names. */
int pb_st_read_f32_shaped(const struct pb_safetensors *st, const char *name, float *out, int ndim,
                          const int64_t *shape, struct pb_err *e);

/* Writer: tensors are referenced (not copied) until pb_st_save returns. */
void pb_st_writer_init(struct pb_safetensors *w);
void pb_st_add(struct pb_safetensors *w, const char *name, enum pb_st_dtype dtype, int ndim,
               const int64_t *shape, const void *data);
/* Writes atomically: a temporary file renamed over path, so no half-written file is
 * ever left. metadata: a flat JSON object text of string values, or NULL. */
int pb_st_save(const struct pb_safetensors *w, const char *path, const char *metadata,
               struct pb_err *e);

#endif
