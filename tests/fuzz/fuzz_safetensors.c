/* tests/fuzz/fuzz_safetensors.c — libFuzzer target: the safetensors reader
 * (pb_st_load_mem). Input: a whole file. What it accepts must hold together: each
 * float tensor reads back at its own shape and not at another count, an integer
 * tensor is refused as floats, a missing name is refused, and the file written again
 * by pb_st_save (the metadata kept) loads to the same tensors. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/base/safetensors.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_reads(const struct pb_safetensors *st)
{
    struct pb_err e;
    for (int i = 0; i < st->n; i++) {
        const struct pb_st_tensor *t = &st->t[i];
        bool flt = t->dtype == PB_ST_F32 || t->dtype == PB_ST_F64;
        float *out = pb_xmalloc((t->count + 1) * sizeof *out);
        int rc = pb_st_read_f32_shaped(st, t->name, out, t->ndim, t->shape, &e);
        PB_FUZZ_ASSERT(flt ? rc == 0 : rc == -1, "tensor '%s' (dtype %d) shaped read: %d (%s)",
                       t->name, (int)t->dtype, rc, rc ? e.msg : "");
        PB_FUZZ_ASSERT(pb_st_read_f32(st, t->name, out, t->count + 1, &e) == -1,
                       "tensor '%s' read with one element too many", t->name);
        free(out);
    }
    float one;
    int64_t shape[1] = {1};
    PB_FUZZ_ASSERT(pb_st_find(st, "pb-fuzz-no-such-name") ||
                       pb_st_read_f32_shaped(st, "pb-fuzz-no-such-name", &one, 1, shape, &e) == -1,
                   "a missing tensor read");
}

/* Saved again and loaded: the same names, dtypes, shapes and bytes. */
static void check_round_trip(const struct pb_safetensors *st)
{
    struct pb_safetensors w, back;
    pb_st_writer_init(&w);
    for (int i = 0; i < st->n; i++)
        pb_st_add(&w, st->t[i].name, st->t[i].dtype, st->t[i].ndim, st->t[i].shape,
                  st->t[i].data);
    char path[4200];
    snprintf(path, sizeof path, "%s/again.safetensors", pb_fuzz_dir());
    struct pb_err e;
    PB_FUZZ_ASSERT(pb_st_save(&w, path, st->metadata, &e) == 0, "save: %s", e.msg);
    pb_st_finish(&w);
    PB_FUZZ_ASSERT(pb_st_load(&back, path, &e) == 0, "the file written again: %s", e.msg);
    PB_FUZZ_ASSERT(back.n == st->n, "%d tensors written, %d read", st->n, back.n);
    PB_FUZZ_ASSERT(!st->metadata == !back.metadata &&
                       (!st->metadata || !strcmp(st->metadata, back.metadata)),
                   "metadata %s came back as %s", st->metadata ? st->metadata : "(none)",
                   back.metadata ? back.metadata : "(none)");
    for (int i = 0; i < st->n; i++) {
        const struct pb_st_tensor *a = &st->t[i], *b = pb_st_find(&back, a->name);
        PB_FUZZ_ASSERT(b && b->dtype == a->dtype && b->ndim == a->ndim && b->count == a->count &&
                           !memcmp(b->shape, a->shape, sizeof a->shape[0] * (size_t)a->ndim),
                       "tensor '%s' came back otherwise", a->name);
        size_t elem = a->dtype == PB_ST_F32 || a->dtype == PB_ST_I32 ? 4 : 8;
        PB_FUZZ_ASSERT(!a->count || !memcmp(a->data, b->data, a->count * elem),
                       "tensor '%s' came back with other bytes", a->name);
    }
    pb_st_finish(&back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct pb_safetensors st;
    struct pb_err e;
    if (pb_st_load_mem(&st, data, size, "fuzz.safetensors", &e) != 0) {
        pb_fuzz_refused(e.msg);
        return 0;
    }
    pb_fuzz_accepted("safetensors");
    check_reads(&st);
    check_round_trip(&st);
    pb_st_finish(&st);
    return 0;
}
