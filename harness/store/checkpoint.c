/* harness/store/checkpoint.c — saving and loading the stages' weights (checkpoint.h). */
#include "harness/store/checkpoint.h"

#include <ctype.h>
#include <stdbool.h>
#include <string.h>

#include "harness/base/safetensors.h"

struct host_copy {
    float *params, *buffers;
};

struct collect {
    struct pb_safetensors *st;
    const struct host_copy *h;
    int nfound;
    const struct pb_safetensors *in;
    struct host_copy *out;
    struct pb_err *e;
    int rc;
};

/* PyTorch's shape of a parameter: weights of linear [out, in] and conv2d
 * [cout, cin, kh, kw]; everything else is a vector. */
static int torch_shape(const struct pb_layer *l, const char *name, size_t n, int64_t *shape)
{
    size_t len = strlen(name);
    bool weight = len >= 7 && !strcmp(name + len - 7, ".weight");
    if (weight && l->cfg.kind == PB_LAYER_LINEAR) {
        shape[0] = l->cfg.out_features;
        shape[1] = l->cfg.in_features;
        return 2;
    }
    if (weight && l->cfg.kind == PB_LAYER_CONV2D) {
        const struct pb_conv_desc *d = &l->cfg.conv;
        int64_t s[4] = {d->cout, d->cin, d->kh, d->kw};
        memcpy(shape, s, sizeof s);
        return 4;
    }
    shape[0] = (int64_t)n;
    return 1;
}

static void add_tensor(void *ctx, const char *name, int is_buffer, size_t off, size_t n,
                       const struct pb_layer *l)
{
    struct collect *c = ctx;
    int64_t shape[4];
    int nd = torch_shape(l, name, n, shape);
    pb_st_add(c->st, name, PB_ST_F32, nd, shape, (is_buffer ? c->h->buffers : c->h->params) + off);
}

static void download_stage(struct pb_stage *s, struct host_copy *h)
{
    h->params = pb_xmalloc(s->nparams * sizeof(float) + 1);
    h->buffers = pb_xmalloc(s->nbuffers * sizeof(float) + 1);
    s->be->ops->download(s->be, h->params, s->params, s->nparams * sizeof(float));
    s->be->ops->download(s->be, h->buffers, s->buffers, s->nbuffers * sizeof(float));
}

int pb_checkpoint_save_host(const struct pb_stage *stages, int nstages, float *const *params,
                            float *const *buffers, const char *path, const char *metadata_json,
                            struct pb_err *e)
{
    struct pb_safetensors st;
    pb_st_writer_init(&st);
    struct host_copy *h = pb_xcalloc((size_t)nstages, sizeof *h);
    for (int k = 0; k < nstages; k++) {
        h[k] = (struct host_copy){params[k], buffers[k]};
        struct collect c = {.st = &st, .h = &h[k]};
        pb_stage_tensors(&stages[k], add_tensor, &c);
    }
    int rc = pb_st_save(&st, path, metadata_json, e);
    pb_st_finish(&st);
    free(h);
    return rc;
}

int pb_checkpoint_save(struct pb_stage *stages, int nstages, const char *path,
                       const char *metadata_json, struct pb_err *e)
{
    float **p = pb_xcalloc((size_t)nstages, sizeof *p), **b = pb_xcalloc((size_t)nstages, sizeof *b);
    for (int k = 0; k < nstages; k++) {
        struct host_copy h;
        download_stage(&stages[k], &h);
        p[k] = h.params;
        b[k] = h.buffers;
    }
    int rc = pb_checkpoint_save_host(stages, nstages, p, b, path, metadata_json, e);
    for (int k = 0; k < nstages; k++) {
        free(p[k]);
        free(b[k]);
    }
    free(p);
    free(b);
    return rc;
}

/* A tensor's name without its "stage<k>." prefix: the same for every partition. */
static const char *block_level(const char *name)
{
    if (strncmp(name, "stage", 5) || !isdigit((unsigned char)name[5]))
        return name;
    const char *p = name + 5;
    while (isdigit((unsigned char)*p))
        p++;
    return *p == '.' ? p + 1 : name;
}

/* The file's tensor for an expected name: that name, else the one with the same
 * block-level name (saved from another partition of the model), else the name itself
 * (the read then reports it missing). */
static const char *file_name(const struct pb_safetensors *st, const char *name)
{
    if (pb_st_find(st, name))
        return name;
    const char *want = block_level(name);
    for (int i = 0; i < st->n; i++)
        if (!strcmp(block_level(st->t[i].name), want))
            return st->t[i].name;
    return name;
}

static void read_tensor(void *ctx, const char *name, int is_buffer, size_t off, size_t n,
                        const struct pb_layer *l)
{
    struct collect *c = ctx;
    if (c->rc)
        return;
    float *dst = (is_buffer ? c->out->buffers : c->out->params) + off;
    int64_t shape[4];
    int nd = torch_shape(l, name, n, shape);
    if (pb_st_read_f32_shaped(c->in, file_name(c->in, name), dst, nd, shape, c->e))
        c->rc = -1;
}

int pb_checkpoint_load(struct pb_stage *stages, int nstages, const char *path, struct pb_err *e)
{
    struct pb_safetensors st;
    if (pb_st_load(&st, path, e))
        return pb_err_prefix(e, "--init: ");
    struct host_copy *h = pb_xcalloc((size_t)nstages, sizeof *h);
    int rc = 0;
    for (int k = 0; k < nstages && !rc; k++) {
        h[k].params = pb_xmalloc(stages[k].nparams * sizeof(float) + 1);
        h[k].buffers = pb_xmalloc(stages[k].nbuffers * sizeof(float) + 1);
        struct collect c = {.in = &st, .out = &h[k], .e = e};
        pb_stage_tensors(&stages[k], read_tensor, &c);
        rc = c.rc;
    }
    if (rc) {
        pb_err_prefix(e, "--init %s: ", path);
        size_t len = strlen(e->msg);
        snprintf(e->msg + len, sizeof e->msg - len,
                 " (a checkpoint loads into the --model it was saved from, at any --stages)");
    }
    for (int k = 0; k < nstages; k++) {
        if (!rc) {
            struct pb_stage *s = &stages[k];
            s->be->ops->upload(s->be, s->params, h[k].params, s->nparams * sizeof(float));
            s->be->ops->upload(s->be, s->buffers, h[k].buffers, s->nbuffers * sizeof(float));
        }
        free(h[k].params);
        free(h[k].buffers);
    }
    free(h);
    pb_st_finish(&st);
    return rc;
}
