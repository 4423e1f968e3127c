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

static void add_tensor(void *ctx, const struct pb_stage_tensor *t)
{
    struct collect *c = ctx;
    pb_st_add(c->st, t->name, PB_ST_F32, t->ndim, t->shape,
              (t->is_buffer ? c->h->buffers : c->h->params) + t->off);
}

/* A tensor's name without its "stage<k>." prefix: a checkpoint written before the names
 * were the state_dict's kept them; the rest of the name is the same key. */
static const char *block_level(const char *name)
{
    if (strncmp(name, "stage", 5) || !isdigit((unsigned char)name[5]))
        return name;
    const char *p = name + 5;
    while (isdigit((unsigned char)*p))
        p++;
    return *p == '.' ? p + 1 : name;
}

/* Reads tensor `name` of f into dst as t's shape. Files written before the LSTM,
 * embedding and attention tensors took PyTorch's shapes (2-D weights, a 0-d scalar) hold
 * them as vectors of the same count, under "stage<k>." names: those load too. */
static int read_shaped(const struct pb_safetensors *f, const char *name, float *dst,
                       const struct pb_stage_tensor *t, struct pb_err *e)
{
    const struct pb_st_tensor *ft = pb_st_find(f, name);
    enum pb_layer_kind kind = t->layer->cfg.kind;
    bool older = block_level(name) != name;
    if (ft && older && ft->ndim == 1 && t->ndim != 1 && (kind == PB_LAYER_LSTM ||
        kind == PB_LAYER_EMBEDDING || kind == PB_LAYER_ATTENTION))
        return pb_st_read_f32(f, name, dst, t->count, e);
    return pb_st_read_f32_shaped(f, name, dst, t->ndim, t->shape, e);
}

/* The stage's weights into host memory, valid once this returns (the download synced). */
static void download_stage(struct pb_stage *s, struct host_copy *h)
{
    h->params = pb_xmalloc(s->nparams * sizeof(float) + 1);
    h->buffers = pb_xmalloc(s->nbuffers * sizeof(float) + 1);
    pb_backend_bind(s->be);
    s->be->ops->download(s->be, h->params, s->params, s->nparams * sizeof(float));
    s->be->ops->download(s->be, h->buffers, s->buffers, s->nbuffers * sizeof(float));
    s->be->ops->sync(s->be);
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

/* Whether file tensor `file` is tensor t (its name plus `suffix`): its key, or an older
 * file's "stage<k>.<key>" (saved at any partition) or "stage<k>.<legacy name>". */
static bool same_tensor(const char *file, const struct pb_stage_tensor *t, const char *suffix)
{
    const char *k = block_level(file);
    size_t n = strlen(t->name), m = t->legacy_name ? strlen(t->legacy_name) : 0;
    return (!strncmp(k, t->name, n) && !strcmp(k + n, suffix)) ||
           (t->legacy_name && !strncmp(k, t->legacy_name, m) && !strcmp(k + m, suffix));
}

/* The file's tensor for t (plus suffix), else t's key (the read then reports it missing). */
static const char *file_name(const struct pb_safetensors *st, const struct pb_stage_tensor *t,
                             const char *suffix, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s%s", t->name, suffix);
    if (pb_st_find(st, buf))
        return buf;
    for (int i = 0; i < st->n; i++)
        if (same_tensor(st->t[i].name, t, suffix))
            return st->t[i].name;
    return buf;
}

static void read_tensor(void *ctx, const struct pb_stage_tensor *t)
{
    struct collect *c = ctx;
    if (c->rc)
        return;
    float *dst = (t->is_buffer ? c->out->buffers : c->out->params) + t->off;
    char buf[320];
    if (read_shaped(c->in, file_name(c->in, t, "", buf, sizeof buf), dst, t, c->e))
        c->rc = -1;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

struct claim {
    const struct pb_safetensors *in;
    bool *used;  /* [in->n] */
};

/* Marks the file's tensors the model's tensor t takes (whichever stage holds it): its own
 * and, for a BatchNorm's running_mean, the num_batches_tracked PyTorch saves beside it
 * (pipebench keeps no count: its momentum is fixed, so the count changes nothing). */
static void claim_tensor(void *ctx, const struct pb_stage_tensor *t)
{
    struct claim *c = ctx;
    char tracked[288] = "";
    if (ends_with(t->name, ".running_mean"))
        snprintf(tracked, sizeof tracked, "%.*s.num_batches_tracked",
                 (int)(strlen(t->name) - strlen(".running_mean")), t->name);
    for (int i = 0; i < c->in->n; i++) {
        const char *name = c->in->t[i].name;
        if (same_tensor(name, t, "") || (tracked[0] && !strcmp(name, tracked)))
            c->used[i] = true;
    }
}

/* Refuses a file holding a tensor the model has not (strict, as PyTorch's
 * load_state_dict): the whole model's tensors, not only the stages loaded here. */
static int check_no_extra(const struct pb_model *m, const struct pb_safetensors *in,
                          struct pb_err *e)
{
    struct pb_stage whole;
    pb_stage_layout(&whole, m, 0, 1, 0, m->nblocks);
    struct claim c = {in, pb_xcalloc((size_t)in->n + 1, sizeof(bool))};
    pb_stage_tensors(&whole, claim_tensor, &c);
    pb_stage_finish(&whole);
    int rc = 0;
    for (int i = 0; i < in->n && !rc; i++)
        if (!c.used[i])
            rc = pb_err_set(e, "tensor '%s' is not one of %s's (a state_dict of another model "
                               "or preset? save the state_dict of the model's PyTorch "
                               "definition, or remove the tensor)", in->t[i].name, m->name);
    free(c.used);
    return rc;
}

int pb_checkpoint_load(struct pb_stage *stages, int nstages, const char *path, struct pb_err *e)
{
    struct pb_safetensors st;
    if (pb_st_load(&st, path, e))
        return pb_err_prefix(e, "--init: ");
    struct host_copy *h = pb_xcalloc((size_t)nstages, sizeof *h);
    int rc = 0;
    for (int k = 0; k < nstages; k++) {
        h[k].params = pb_xmalloc(stages[k].nparams * sizeof(float) + 1);
        h[k].buffers = pb_xmalloc(stages[k].nbuffers * sizeof(float) + 1);
        struct collect c = {.in = &st, .out = &h[k], .e = e};
        if (!rc)
            pb_stage_tensors(&stages[k], read_tensor, &c);
        rc = rc ? rc : c.rc;
    }
    if (!rc && nstages)
        rc = check_no_extra(stages[0].model, &st, e);
    if (rc) {
        pb_err_prefix(e, "--init %s: ", path);
        size_t len = strlen(e->msg);
        snprintf(e->msg + len, sizeof e->msg - len,
                 " (--init takes a checkpoint of the same --model and --preset, saved at any "
                 "--stages, or a state_dict of its PyTorch definition)");
    }
    for (int k = 0; k < nstages; k++) {
        if (!rc) {
            struct pb_stage *s = &stages[k];
            pb_backend_bind(s->be);
            s->be->ops->upload(s->be, s->params, h[k].params, s->nparams * sizeof(float));
            s->be->ops->upload(s->be, s->buffers, h[k].buffers, s->nbuffers * sizeof(float));
            s->be->ops->sync(s->be);  /* the uploads read the host copies until here */
        }
        free(h[k].params);
        free(h[k].buffers);
    }
    free(h);
    pb_st_finish(&st);
    return rc;
}

/* The optimizer state slots, in file order. */
static const char *const slot_names[PB_STATE_NSLOTS] = {"buf", "m", "v", "sq", "d_last",
                                                        "g_last"};

static float **slot_ptr(struct pb_optim *o, int i)
{
    float **p[PB_STATE_NSLOTS] = {&o->buf, &o->m, &o->v, &o->sq, &o->d_last, &o->g_last};
    return p[i];
}

struct state_io {
    struct pb_safetensors *st;            /* writer, or the file read */
    const struct pb_stage_state *in;      /* saving */
    struct pb_stage_state *out;           /* loading */
    struct pb_err *e;
    int rc;
    char **heap;                          /* the saved tensors' names, freed after the save */
    int nheap, capheap;
};

static const char *keep_name(struct state_io *c, const char *name)
{
    if (c->nheap == c->capheap) {
        c->capheap = c->capheap ? 2 * c->capheap : 64;
        c->heap = realloc(c->heap, (size_t)c->capheap * sizeof *c->heap);
        PB_CHECK(c->heap != NULL);
    }
    return c->heap[c->nheap++] = pb_xstrdup(name);
}

static void state_tensor(void *ctx, const struct pb_stage_tensor *t)
{
    struct state_io *c = ctx;
    const struct pb_stage_state *h = c->in ? c->in : c->out;
    for (int i = -1; i < PB_STATE_NSLOTS && !c->rc; i++) {
        if (i >= 0 && t->is_buffer)
            break;
        char suffix[32] = "", full[320];
        if (i >= 0)
            snprintf(suffix, sizeof suffix, ".optim.%s", slot_names[i]);
        snprintf(full, sizeof full, "%s%s", t->name, suffix);
        float *base = i >= 0 ? h->slot[i] : t->is_buffer ? h->buffers : h->params;
        if (!base)
            continue;
        if (c->in)
            pb_st_add(c->st, keep_name(c, full), PB_ST_F32, t->ndim, t->shape, base + t->off);
        else if (read_shaped(c->st, file_name(c->st, t, suffix, full, sizeof full),
                             base + t->off, t, c->e))
            c->rc = -1;
    }
}

void pb_stage_state_alloc(struct pb_stage_state *h, size_t nparams, size_t nbuffers,
                          unsigned slots, size_t nslot)
{
    memset(h, 0, sizeof *h);
    h->params = pb_xmalloc(nparams * sizeof(float) + 1);
    h->buffers = pb_xmalloc(nbuffers * sizeof(float) + 1);
    h->nslot = nslot;
    for (int i = 0; i < PB_STATE_NSLOTS; i++)
        if (slots & (1u << i))
            h->slot[i] = pb_xmalloc(nslot * sizeof(float) + 1);
}

unsigned pb_stage_state_slots(struct pb_optim *o)
{
    unsigned slots = 0;
    for (int i = 0; i < PB_STATE_NSLOTS; i++)
        if (*slot_ptr(o, i))
            slots |= 1u << i;
    return slots;
}

void pb_stage_state_free(struct pb_stage_state *h)
{
    free(h->params);
    free(h->buffers);
    for (int i = 0; i < PB_STATE_NSLOTS; i++)
        free(h->slot[i]);
    memset(h, 0, sizeof *h);
}

void pb_stage_state_download(struct pb_stage *s, struct pb_optim *o, struct pb_stage_state *h)
{
    pb_stage_state_alloc(h, s->nparams, s->nbuffers, pb_stage_state_slots(o), o->n);
    pb_backend_bind(s->be);
    s->be->ops->download(s->be, h->params, s->params, s->nparams * sizeof(float));
    s->be->ops->download(s->be, h->buffers, s->buffers, s->nbuffers * sizeof(float));
    for (int i = 0; i < PB_STATE_NSLOTS; i++)
        if (h->slot[i])
            s->be->ops->download(s->be, h->slot[i], *slot_ptr(o, i), o->n * sizeof(float));
    s->be->ops->sync(s->be);  /* the host copies hold the state from here */
}

void pb_stage_state_upload(struct pb_stage *s, struct pb_optim *o, const struct pb_stage_state *h)
{
    pb_backend_bind(s->be);
    s->be->ops->upload(s->be, s->params, h->params, s->nparams * sizeof(float));
    s->be->ops->upload(s->be, s->buffers, h->buffers, s->nbuffers * sizeof(float));
    for (int i = 0; i < PB_STATE_NSLOTS; i++)
        if (h->slot[i] && *slot_ptr(o, i))
            s->be->ops->upload(s->be, *slot_ptr(o, i), h->slot[i], o->n * sizeof(float));
    s->be->ops->sync(s->be);  /* the uploads read the host copies until here */
}

int pb_checkpoint_save_state_host(const struct pb_stage *lay, const struct pb_stage_state *h,
                                  int nstages, const char *path, const char *metadata_json,
                                  struct pb_err *e)
{
    struct pb_safetensors st;
    pb_st_writer_init(&st);
    struct state_io c = {.st = &st, .e = e};
    for (int k = 0; k < nstages; k++) {
        c.in = &h[k];
        pb_stage_tensors(&lay[k], state_tensor, &c);
    }
    int rc = pb_st_save(&st, path, metadata_json, e);
    pb_st_finish(&st);
    for (int i = 0; i < c.nheap; i++)
        free(c.heap[i]);
    free(c.heap);
    return rc;
}

int pb_checkpoint_load_state_host(const struct pb_stage *lay, struct pb_stage_state *h,
                                  int nstages, const char *path, char **metadata_json,
                                  struct pb_err *e)
{
    *metadata_json = NULL;
    struct pb_safetensors st;
    if (pb_st_load(&st, path, e))
        return -1;
    struct state_io c = {.st = &st, .e = e};
    for (int k = 0; k < nstages && !c.rc; k++) {
        c.out = &h[k];
        pb_stage_tensors(&lay[k], state_tensor, &c);
    }
    if (c.rc)
        pb_err_prefix(e, "resume state %s: ", path);
    else if (st.metadata)
        *metadata_json = pb_xstrdup(st.metadata);
    pb_st_finish(&st);
    return c.rc;
}

int pb_checkpoint_save_state(struct pb_stage *stages, struct pb_optim *const *optims, int nstages,
                             const char *path, const char *metadata_json, struct pb_err *e)
{
    struct pb_stage_state *h = pb_xcalloc((size_t)nstages, sizeof *h);
    for (int k = 0; k < nstages; k++)
        pb_stage_state_download(&stages[k], optims[k], &h[k]);
    int rc = pb_checkpoint_save_state_host(stages, h, nstages, path, metadata_json, e);
    for (int k = 0; k < nstages; k++)
        pb_stage_state_free(&h[k]);
    free(h);
    return rc;
}

int pb_checkpoint_load_state(struct pb_stage *stages, struct pb_optim *const *optims,
                             int nstages, const char *path, char **metadata_json,
                             struct pb_err *e)
{
    struct pb_stage_state *h = pb_xcalloc((size_t)nstages, sizeof *h);
    for (int k = 0; k < nstages; k++)
        pb_stage_state_alloc(&h[k], stages[k].nparams, stages[k].nbuffers,
                             pb_stage_state_slots(optims[k]), optims[k]->n);
    int rc = pb_checkpoint_load_state_host(stages, h, nstages, path, metadata_json, e);
    for (int k = 0; k < nstages; k++) {
        if (!rc)
            pb_stage_state_upload(&stages[k], optims[k], &h[k]);
        pb_stage_state_free(&h[k]);
    }
    free(h);
    return rc;
}
