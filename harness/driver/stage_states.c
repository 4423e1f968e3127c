/* harness/driver/stage_states.c — the stages' resumable states at the writer and back
 * (stage_states.h). Under MPI a rank holds its device's stages (pb_plan_holds): for each,
 * in stage order, it sends a head (its sizes, the slots its optimizer keeps, its counts)
 * and then the arrays, each a message of PB_TAG_STATE; the writer takes the stages it
 * does not hold in stage order from the rank holding each (FIFO per rank and tag). */
#include "harness/driver/stage_states.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* What a rank says of its stage's state before the arrays. */
struct state_head {
    int64_t nparams, nbuffers, nslot, updates, steps;
    uint32_t slots;
    uint32_t pad;
};

static struct state_head head_of(struct pb_local_stages *ls, int k)
{
    struct pb_optim *o = &ls->workers[k].optim;
    return (struct state_head){(int64_t)ls->stages[k].nparams, (int64_t)ls->stages[k].nbuffers,
                               (int64_t)o->n, ls->workers[k].u, o->t, pb_stage_state_slots(o), 0};
}

static unsigned slots_of(const struct pb_stage_state *h)
{
    unsigned slots = 0;
    for (int i = 0; i < PB_STATE_NSLOTS; i++)
        if (h->slot[i])
            slots |= 1u << i;
    return slots;
}

/* The arrays of h (sizes np, nb and h->nslot) to or from rank `peer`. */
static void move_arrays(const struct pb_dist *d, struct pb_stage_state *h, size_t np, size_t nb,
                        int peer, bool send)
{
    float *arr[2 + PB_STATE_NSLOTS] = {h->params, h->buffers};
    size_t len[2 + PB_STATE_NSLOTS] = {np, nb};
    for (int i = 0; i < PB_STATE_NSLOTS; i++) {
        arr[2 + i] = h->slot[i];
        len[2 + i] = h->nslot;
    }
    for (int i = 0; i < 2 + PB_STATE_NSLOTS; i++) {
        if (!arr[i])
            continue;
        if (send)
            pb_dist_send(d, arr[i], len[i] * sizeof(float), peer, PB_TAG_STATE);
        else
            pb_dist_recv(d, arr[i], len[i] * sizeof(float), peer, PB_TAG_STATE);
    }
}

/* The writer's arrays and layouts of the D stages. */
static void writer_alloc(struct pb_stage_states *ss, const struct pb_plan *p)
{
    int d = p->cfg->stages;
    ss->n = d;
    ss->lay = pb_xcalloc((size_t)d, sizeof *ss->lay);
    ss->h = pb_xcalloc((size_t)d, sizeof *ss->h);
    ss->updates = pb_xcalloc((size_t)d, sizeof *ss->updates);
    ss->steps = pb_xcalloc((size_t)d, sizeof *ss->steps);
    for (int k = 0; k < d; k++)
        pb_stage_layout(&ss->lay[k], &p->model, k, d, p->bounds[k], p->bounds[k + 1]);
}

/* h allocated for the state a head describes. */
static void alloc_for(struct pb_stage_state *h, const struct state_head *head)
{
    pb_stage_state_alloc(h, (size_t)head->nparams, (size_t)head->nbuffers, head->slots,
                         (size_t)head->nslot);
}

/* Stage k's head, received at the writer from the rank holding it and checked against
 * its layout, and ss->h[k] allocated for it. */
static struct state_head recv_head(struct pb_stage_states *ss, const struct pb_plan *p, int k)
{
    struct state_head h;
    pb_dist_recv(p->dist, &h, sizeof h, p->rank_of[k], PB_TAG_STATE);
    PB_CHECK(h.nparams == (int64_t)ss->lay[k].nparams &&
             h.nbuffers == (int64_t)ss->lay[k].nbuffers);
    alloc_for(&ss->h[k], &h);
    return h;
}

/* Every stage's head at the writer, each state allocated there; with `arrays` the
 * arrays and counts too (gather), else only the shapes (shape). */
static void collect(struct pb_stage_states *ss, struct pb_local_stages *ls,
                    const struct pb_plan *p, bool arrays)
{
    memset(ss, 0, sizeof *ss);
    bool writer = pb_plan_writer(p);
    if (writer)
        writer_alloc(ss, p);
    for (int k = 0; k < p->cfg->stages; k++) {
        if (!pb_plan_holds(p, k))
            continue;
        struct state_head head = head_of(ls, k);
        struct pb_stage_state h = {0};
        if (arrays)
            pb_stage_state_download(&ls->stages[k], &ls->workers[k].optim, &h);
        if (writer) {
            if (arrays) {
                ss->h[k] = h;
                ss->updates[k] = head.updates;
                ss->steps[k] = head.steps;
            } else {
                alloc_for(&ss->h[k], &head);
            }
            continue;
        }
        pb_dist_send(p->dist, &head, sizeof head, 0, PB_TAG_STATE);
        if (arrays) {
            move_arrays(p->dist, &h, ls->stages[k].nparams, ls->stages[k].nbuffers, 0, true);
            pb_stage_state_free(&h);
        }
    }
    for (int k = 0; writer && k < ss->n; k++) {
        if (pb_plan_holds(p, k))
            continue;
        struct state_head head = recv_head(ss, p, k);
        if (!arrays)
            continue;
        ss->updates[k] = head.updates;
        ss->steps[k] = head.steps;
        move_arrays(p->dist, &ss->h[k], (size_t)head.nparams, (size_t)head.nbuffers,
                    p->rank_of[k], false);
    }
}

void pb_stage_states_gather(struct pb_stage_states *ss, struct pb_local_stages *ls,
                            const struct pb_plan *p)
{
    collect(ss, ls, p, true);
}

void pb_stage_states_shape(struct pb_stage_states *ss, struct pb_local_stages *ls,
                           const struct pb_plan *p)
{
    collect(ss, ls, p, false);
}

void pb_stage_states_scatter(struct pb_stage_states *ss, struct pb_local_stages *ls,
                             const struct pb_plan *p)
{
    int d = p->cfg->stages;
    bool writer = pb_plan_writer(p);
    long *u = pb_xcalloc((size_t)d, sizeof *u), *t = pb_xcalloc((size_t)d, sizeof *t);
    if (writer) {
        memcpy(u, ss->updates, (size_t)d * sizeof *u);
        memcpy(t, ss->steps, (size_t)d * sizeof *t);
    }
    pb_dist_bcast(p->dist, u, (size_t)d * sizeof *u, 0);
    pb_dist_bcast(p->dist, t, (size_t)d * sizeof *t, 0);
    for (int k = 0; writer && k < d; k++)
        if (!pb_plan_holds(p, k))
            move_arrays(p->dist, &ss->h[k], ss->lay[k].nparams, ss->lay[k].nbuffers,
                        p->rank_of[k], true);
    for (int k = 0; k < d; k++) {
        if (!pb_plan_holds(p, k))
            continue;
        struct pb_stage *s = &ls->stages[k];
        struct pb_optim *o = &ls->workers[k].optim;
        struct pb_stage_state mine = {0};
        if (!writer) {
            pb_stage_state_alloc(&mine, s->nparams, s->nbuffers, pb_stage_state_slots(o), o->n);
            move_arrays(p->dist, &mine, s->nparams, s->nbuffers, 0, false);
        }
        const struct pb_stage_state *h = writer ? &ss->h[k] : &mine;
        PB_CHECK(slots_of(h) == pb_stage_state_slots(o) && h->nslot == o->n);
        pb_stage_state_upload(s, o, h);
        if (!writer)
            pb_stage_state_free(&mine);
        ls->workers[k].u = u[k];
        pb_optim_set_steps(o, t[k]);
    }
    free(u);
    free(t);
}

void pb_stage_states_free(struct pb_stage_states *ss)
{
    for (int k = 0; k < ss->n; k++) {
        pb_stage_state_free(&ss->h[k]);
        pb_stage_finish(&ss->lay[k]);
    }
    free(ss->lay);
    free(ss->h);
    free(ss->updates);
    free(ss->steps);
    memset(ss, 0, sizeof *ss);
}
