/* plots/plot_style.c — the figures' style table (plot_style.h). Schedules take Paul Tol's
 * "muted" scheme (nine colours told apart with every common colour-vision deficiency; the
 * styles beyond nine, among them a dark green, a deep blue, a tan and a plum, keep the distances tests/plots/test_plot.c
 * measures), a variant a hue near its schedule's, an open marker where its schedule's is filled and a
 * dash of its own. Op kinds take Tol's "vibrant" blue and orange and his grey; memory kinds
 * nine colours of his other schemes chosen to differ from each other (also as protanopes
 * and deuteranopes see them) and from every schedule (tests/plots/test_plot.c measures it). */
#include "plots/plot_style.h"

#include <string.h>

/* point types: 5/4 square, 7/6 circle, 9/8 triangle, 11/10 inverted triangle, 13/12
 * diamond, 15/14 pentagon (filled/open); 1 a plus, 2 a cross */
const struct pb_plot_styled pb_plot_styles[] = {
    {"gpipe", NULL, {"#332288", 7, "solid"}},
    {"pipedream", NULL, {"#117733", 5, "12,5"}},
    {"pipedream", "vertical", {"#004411", 2, "12,3,12,9"}},
    {"pipedream-2bw", NULL, {"#44AA99", 9, "5,4"}},
    {"spectrain", NULL, {"#882255", 13, "2,4"}},
    {"spectrain", "code", {"#CC6677", 12, "2,3,8,3"}},
    {"xpipe", NULL, {"#999933", 11, "10,4,2,4"}},
    {"xpipe", "note", {"#DDCC77", 10, "12,3,2,3,2,3"}},
    {"pipeoptim", NULL, {"#AA4499", 15, "16,4,5,4"}},
    {"pipeoptim", "code", {"#88CCEE", 14, "7,3,2,3"}},
    {"1f1b", NULL, {"#2222DD", 4, "8,2"}},
    {"zb-h1", NULL, {"#8866DD", 6, "4,2,1,2"}},
    {"zb-h1", "quick-start", {"#6644DD", 3, "6,2,2,2"}},
    {"zb-h2", NULL, {"#88DD22", 8, "1,2"}},
    {"pipemare", NULL, {"#110099", 1, "4,2,4,6"}},
    {"interleaved", NULL, {"#0099CC", 2, "9,3,3,3"}},
    {"looped-bfs", NULL, {"#000000", 8, "3,2,3,6"}},
    {"zb-v", NULL, {"#CC8866", 14, "6,3,1,3,1,3"}},
    {"dualpipe-v", NULL, {"#660066", 10, "14,2,2,2"}},
    {NULL, NULL, {NULL, 0, NULL}},
};

static const struct pb_plot_style fallback = {"#777777", 1, "3,3"};

struct pb_plot_style pb_plot_style_of(const char *schedule, const char *variant, bool *known)
{
    if (variant && !*variant)
        variant = NULL;
    for (int i = 0; schedule && pb_plot_styles[i].schedule; i++) {
        const struct pb_plot_styled *s = &pb_plot_styles[i];
        if (!strcmp(s->schedule, schedule) &&
            (s->variant ? variant && !strcmp(s->variant, variant) : !variant)) {
            if (known)
                *known = true;
            return s->style;
        }
    }
    if (known)
        *known = false;
    return fallback;
}

const char *const pb_plot_op_colors[PB_PLOT_NOPKINDS] = {"#0077BB", "#EE7733", "#BBBBBB",
                                                          "#EEEE22", "#DDEEAA"};

const char *const pb_plot_mem_columns[PB_PLOT_NMEMKINDS] = {
    "params", "grads", "optstate", "wcopies", "acts", "comm", "scratch", "bnstats", "host",
};
const char *const pb_plot_mem_titles[PB_PLOT_NMEMKINDS] = {
    "params", "grads", "optimizer state", "weight copies", "activations", "comm buffers",
    "scratch", "BN statistics", "host",
};
const char *const pb_plot_mem_colors[PB_PLOT_NMEMKINDS] = {
    "#222255", "#663333", "#EE8866", "#EE3377", "#CC3311", "#BBCC33", "#EEEEBB", "#CCEEFF",
    "#FFAABB",
};
