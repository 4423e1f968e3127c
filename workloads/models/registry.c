/* workloads/models/registry.c — the table of workloads and their presets, and the balanced and
 * paper partitioners. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "workloads/models/workload.h"

extern const struct pb_workload pb_workload_mlp, pb_workload_mlp_deep, pb_workload_lenet;
extern const struct pb_workload pb_workload_alexnet, pb_workload_resnet101,
    pb_workload_inceptionv3, pb_workload_vgg16, pb_workload_googlenet, pb_workload_densenet121;
extern const struct pb_workload pb_workload_residual_lstm;
extern const struct pb_workload pb_workload_gnmt8, pb_workload_gnmt16;

const struct pb_workload *const pb_workloads[] = {
    &pb_workload_mlp,
    &pb_workload_mlp_deep,
    &pb_workload_lenet,
    &pb_workload_alexnet,
    &pb_workload_resnet101,
    &pb_workload_inceptionv3,
    &pb_workload_vgg16,
    &pb_workload_googlenet,
    &pb_workload_densenet121,
    &pb_workload_residual_lstm,
    &pb_workload_gnmt8,
    &pb_workload_gnmt16,
    NULL,
};

const struct pb_workload *pb_workload_find(const char *name, struct pb_err *e)
{
    char list[256] = "";
    for (int i = 0; pb_workloads[i]; i++) {
        if (!strcmp(pb_workloads[i]->name, name))
            return pb_workloads[i];
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
                 pb_workloads[i]->name);
    }
    /* "MODEL-PRESET" (a preset's sizes were once a model of their own): say how */
    char hint[96] = "";
    for (int i = 0; pb_workloads[i]; i++) {
        const struct pb_workload *w = pb_workloads[i];
        size_t n = strlen(w->name);
        for (const struct pb_preset *p = w->presets; p && p->name; p++)
            if (!strncmp(name, w->name, n) && name[n] == '-' && !strcmp(name + n + 1, p->name))
                snprintf(hint, sizeof hint, " (use --model %s --preset %s)", w->name, p->name);
    }
    pb_err_set(e, "unknown model '%s'%s; valid models: %s", name, hint, list);
    return NULL;
}

int pb_workload_preset(const struct pb_workload *w, const char *name, const struct pb_preset **out,
                       struct pb_err *e)
{
    *out = NULL;
    if (!w->presets) {
        if (name)
            return pb_err_set(e, "model '%s' has no presets (only the zoo's models do: "
                                 "`pipebench list`); drop --preset %s", w->name, name);
        return 0;
    }
    const char *want = name ? name : PB_DEFAULT_PRESET;
    char list[128] = "";
    for (const struct pb_preset *p = w->presets; p->name; p++) {
        if (!strcmp(p->name, want)) {
            *out = p;
            return 0;
        }
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
                 p == w->presets ? "" : ", ", p->name);
    }
    return pb_err_set(e, "model '%s' has no preset '%s'; its presets: %s", w->name, want, list);
}

const struct pb_preset *pb_preset_lookup(const char *model, const char *name)
{
    const struct pb_workload *w = model ? pb_workload_find(model, NULL) : NULL;
    const struct pb_preset *p = NULL;
    struct pb_err e;
    if (!w || pb_workload_preset(w, name, &p, &e))
        return NULL;
    return p;
}

struct pb_shape pb_preset_sample(const struct pb_preset *p)
{
    switch (p->sample) {
    case PB_SAMPLE_TOKENS:
        PB_CHECK(p->steps > 0);
        return (struct pb_shape){1, p->steps, 1, 1};
    case PB_SAMPLE_PAIR:
        PB_CHECK(p->steps > 0);
        return (struct pb_shape){1, 2 * p->steps, 1, 1};
    case PB_SAMPLE_IMAGE:
        break;
    }
    PB_CHECK(p->input_side > 0);
    return (struct pb_shape){1, 3, p->input_side, p->input_side};
}

int pb_partition_choose(const struct pb_preset *p, const char *model, const char *name, int stages,
                        bool *paper, struct pb_err *e)
{
    bool has_cut = p && p->cut[0];
    if (!name) {
        *paper = has_cut && !strcmp(p->name, "paper") && stages == PB_PAPER_STAGES;
        return 0;
    }
    enum pb_partition_by by;
    if (pb_partition_parse(name, stages, &by, NULL, e))
        return -1;
    *paper = by == PB_PART_PAPER;
    if (!*paper)
        return 0;
    if (!has_cut)
        return pb_err_set(e, "--partition paper: model '%s'%s%s has no paper partition (the zoo's "
                             "models do); use --partition flops", model,
                          p ? " preset " : "", p ? p->name : "");
    if (stages != PB_PAPER_STAGES)
        return pb_err_set(e, "--partition paper is the %d-stage cut of the paper's code; use "
                             "--stages %d, or --partition flops for --stages %d",
                          PB_PAPER_STAGES, PB_PAPER_STAGES, stages);
    return 0;
}

int pb_partition_paper(const struct pb_model *m, const struct pb_preset *p, int *bounds,
                       struct pb_err *e)
{
    PB_CHECK(p->cut[0]);
    bounds[0] = 0;
    bounds[PB_PAPER_STAGES] = m->nblocks;
    int at = 0;
    for (int k = 1; k < PB_PAPER_STAGES; k++) {
        while (at < m->nblocks && strcmp(m->blocks[at].name, p->cut[k - 1]))
            at++;
        if (at == m->nblocks || at <= bounds[k - 1])
            return pb_err_set(e, "model '%s' preset %s: stage %d of the paper cut starts at block "
                                 "'%s', which the model does not have after stage %d's first",
                              m->name, p->name, k, p->cut[k - 1], k - 1);
        bounds[k] = at;
    }
    return 0;
}
