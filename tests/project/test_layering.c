/* tests/project/test_layering.c — the architecture as a test: every #include "..." in the
 * tree names its file from the one include root (the project's top), and points only
 * down the layers base ← compute ← model ← optim ← predictors ← ir ← sim ← schedules ←
 * workloads (datasets ← models ← evaluation) ← store ← exec ← results ← plots ← driver ←
 * cli (meson.build builds them in this order). Besides: a backend's folder is private to it (and the tests), results/
 * and plots/ read the metric records (harness/ir/metrics.h) and never the compute or
 * model layers, nothing outside harness/cli/ but a test's program includes it, a
 * backend's libraries (oneDNN, CUDA, cuBLAS, cuDNN, NCCL) are included only in its
 * folder, what runs after a run's plan is built looks no name up, and a registry's
 * entries are named in its table, not in the shared code beside it. Each violation is
 * named with file:line. */
#include <check.h>
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "pb_config.h"

struct layer {
    const char *prefix;
    int rank;
};

/* Longest prefix wins; tests/ and bench/ sit above everything. */
static const struct layer layers[] = {
    {"harness/base/", 0},          {"harness/compute/", 1},        {"harness/model/", 2},
    {"harness/optim/", 3},         {"predictors/", 4},             {"harness/ir/", 5},
    {"harness/sim/", 6},           {"schedules/", 7},              {"workloads/datasets/", 8},
    {"workloads/models/", 9},      {"workloads/evaluation/", 10},  {"harness/store/", 11},
    {"harness/exec/", 12},         {"results/", 13},               {"plots/", 14},
    {"harness/driver/", 15},       {"harness/cli/", 16},           {"tests/", 100},
    {"bench/", 100},               {"pb_config.h", 0},
};

static const char *const generated[] = {"pb_config.h", "results/pb_git_revision.h"};

static int rank_of(const char *path)
{
    size_t best = 0;
    int r = -1;
    for (size_t i = 0; i < sizeof layers / sizeof *layers; i++) {
        size_t n = strlen(layers[i].prefix);
        if (n > best && strncmp(path, layers[i].prefix, n) == 0) {
            best = n;
            r = layers[i].rank;
        }
    }
    return r;
}

static bool starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool exists_at_root(const char *rel)
{
    for (size_t i = 0; i < sizeof generated / sizeof *generated; i++)
        if (strcmp(rel, generated[i]) == 0)
            return true;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", PB_SOURCE_ROOT, rel);
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Why `file` may not include `inc`, or NULL when it may. */
static const char *violation(const char *file, const char *inc)
{
    if (!exists_at_root(inc))
        return "does not name its file from the include root (the project's top)";
    int rf = rank_of(file), ri = rank_of(inc);
    if (ri < 0)
        return "includes a file outside the layered folders";
    if (ri > rf)
        return "points up the layers";
    bool tests = starts(file, "tests/") || starts(file, "bench/");
    const char *backends[] = {"harness/compute/cpu/", "harness/compute/cuda/"};
    const char *constructors[] = {"harness/compute/cpu/cpu_backend.h",
                                  "harness/compute/cuda/cuda_backend.h"};
    bool registry = !strcmp(file, "harness/compute/registry.c");
    for (int i = 0; i < 2; i++)
        if (starts(inc, backends[i]) && !starts(file, backends[i]) && !tests &&
            !(registry && !strcmp(inc, constructors[i])))
            return "reaches into a backend's private folder";
    if ((starts(file, "results/") || starts(file, "plots/")) &&
        (starts(inc, "harness/compute/") || starts(inc, "harness/model/")))
        return "reads the compute or model layer (results and plots read the metric records)";
    if (starts(inc, "harness/cli/") && !starts(file, "harness/cli/") && !tests)
        return "includes the CLI from outside it";
    return NULL;
}

/* The system headers of a backend's libraries, and the folder they belong to. */
static const struct {
    const char *prefix, *folder;
} backend_headers[] = {
    {"oneapi/dnnl/", "harness/compute/cpu/"}, {"cuda", "harness/compute/cuda/"},
    {"cublas", "harness/compute/cuda/"},      {"cudnn", "harness/compute/cuda/"},
    {"nccl", "harness/compute/cuda/"},
};

/* Why `file` may not include the system header `inc`, or NULL when it may. */
static const char *system_violation(const char *file, const char *inc)
{
    if (starts(file, "tests/") || starts(file, "bench/"))
        return NULL;
    for (size_t i = 0; i < sizeof backend_headers / sizeof *backend_headers; i++)
        if (starts(inc, backend_headers[i].prefix) && !starts(file, backend_headers[i].folder))
            return "calls a backend's library outside the backend's folder";
    return NULL;
}

static void scan_file(const char *rel, char *report, size_t cap, int *count)
{
    char path[4096], line[1024];
    snprintf(path, sizeof path, "%s/%s", PB_SOURCE_ROOT, rel);
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot read %s", path);
    for (int ln = 1; fgets(line, sizeof line, f); ln++) {
        char inc[512];
        const char *why;
        if (sscanf(line, " #include \"%511[^\"]\"", inc) == 1)
            why = violation(rel, inc);
        else if (sscanf(line, " #include <%511[^>]>", inc) == 1)
            why = system_violation(rel, inc);
        else
            continue;
        if (!why)
            continue;
        (*count)++;
        size_t used = strlen(report);
        snprintf(report + used, cap - used, "\n  %s:%d: \"%s\" %s", rel, ln, inc, why);
    }
    fclose(f);
}

static void scan_dir(const char *rel, char *report, size_t cap, int *count, int *files)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", PB_SOURCE_ROOT, rel);
    DIR *d = opendir(path);
    ck_assert_msg(d != NULL, "cannot list %s", path);
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char sub[1024];
        snprintf(sub, sizeof sub, "%s/%s", rel, de->d_name);
        char full[4096];
        snprintf(full, sizeof full, "%s/%s", PB_SOURCE_ROOT, sub);
        struct stat st;
        if (stat(full, &st))
            continue;
        const char *dot = strrchr(de->d_name, '.');
        if (S_ISDIR(st.st_mode))
            scan_dir(sub, report, cap, count, files);
        else if (dot && (!strcmp(dot, ".c") || !strcmp(dot, ".h") || !strcmp(dot, ".cu"))) {
            scan_file(sub, report, cap, count);
            (*files)++;
        }
    }
    closedir(d);
}

START_TEST(test_includes_point_down)
{
    static char report[1 << 16];
    report[0] = 0;
    int count = 0, files = 0;
    const char *roots[] = {"harness", "predictors", "schedules", "workloads", "results", "plots",
                           "tests", "bench"};
    for (size_t i = 0; i < sizeof roots / sizeof *roots; i++)
        scan_dir(roots[i], report, sizeof report, &count, &files);
    ck_assert_msg(files > 100, "only %d source files found under %s", files, PB_SOURCE_ROOT);
    ck_assert_msg(count == 0, "%d include(s) break the layering:%s", count, report);
}
END_TEST

/* The rule itself: an upward include is caught, a downward one is not. */
START_TEST(test_rule_catches_upward)
{
    ck_assert_ptr_nonnull(violation("harness/compute/backend.c", "harness/optim/optim.h"));
    ck_assert_ptr_nonnull(violation("results/results.c", "harness/compute/backend.h"));
    ck_assert_ptr_nonnull(violation("harness/driver/run.c", "harness/cli/cli.h"));
    ck_assert_ptr_nonnull(violation("harness/exec/worker.c", "worker.h"));
    ck_assert_ptr_nonnull(violation("harness/model/stage.c", "harness/compute/cpu/cpu_internal.h"));
    ck_assert_ptr_nonnull(violation("harness/compute/backend.c", "harness/compute/cpu/cpu_backend.h"));
    ck_assert_ptr_nonnull(violation("harness/compute/registry.c", "harness/compute/cpu/cpu_internal.h"));
    ck_assert_ptr_null(violation("harness/compute/registry.c", "harness/compute/cpu/cpu_backend.h"));
    ck_assert_ptr_nonnull(violation("harness/ir/program.c", "schedules/registry.h"));
    ck_assert_ptr_nonnull(violation("workloads/datasets/cifar.c", "workloads/models/workload.h"));
    ck_assert_ptr_nonnull(violation("workloads/models/gnmt.c",
                                    "workloads/evaluation/decode/decode.h"));
    ck_assert_ptr_null(violation("workloads/evaluation/decode/beam.c",
                                 "workloads/datasets/dataset.h"));
    ck_assert_ptr_null(violation("harness/exec/worker.c", "harness/model/stage.h"));
    ck_assert_ptr_null(violation("plots/report.c", "results/results.h"));
    ck_assert_ptr_nonnull(violation("harness/sim/sim.c", "harness/exec/worker.h"));
    ck_assert_ptr_nonnull(violation("harness/sim/sim.c", "schedules/common.h"));
    ck_assert_ptr_null(violation("harness/sim/sim.h", "harness/ir/metrics.h"));
    ck_assert_ptr_null(violation("harness/exec/worker.c", "harness/sim/sim.h"));
    ck_assert_ptr_null(violation("harness/driver/run_epoch.c", "harness/sim/sim_periodic.h"));
    ck_assert_ptr_nonnull(system_violation("results/results_env.c", "oneapi/dnnl/dnnl.h"));
    ck_assert_ptr_nonnull(system_violation("harness/exec/worker.c", "cuda_runtime.h"));
    ck_assert_ptr_null(system_violation("harness/compute/cpu/cpu_backend.c", "oneapi/dnnl/dnnl.h"));
    ck_assert_ptr_null(system_violation("harness/compute/cuda/cuda_backend.c", "cudnn.h"));
}
END_TEST

/* The lines of `file` that hold any of names[n], each added to report as file:line: name;
 * returns how many. */
static int find_names(const char *file, const char *const *names, size_t n, char *report,
                      size_t cap)
{
    char path[4096], line[1024];
    snprintf(path, sizeof path, "%s/%s", PB_SOURCE_ROOT, file);
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot read %s", path);
    int count = 0;
    for (int ln = 1; fgets(line, sizeof line, f); ln++)
        for (size_t k = 0; k < n; k++)
            if (strstr(line, names[k])) {
                count++;
                size_t used = strlen(report);
                snprintf(report + used, cap - used, "\n  %s:%d: %s", file, ln, names[k]);
            }
    fclose(f);
    return count;
}

/* A run decides once (docs/design.md §3.2): the files that run after its plan is built —
 * the story of a run, its epochs, its resume state, the worker and the data feed — look
 * nothing up by name and compare no names; they read the plan's entries. */
START_TEST(test_no_lookup_after_setup)
{
    static const char *const files[] = {
        "harness/driver/run.c", "harness/driver/run_epoch.c", "harness/driver/run_resume.c",
        "harness/exec/worker.c", "harness/exec/feed.c",
    };
    static const char *const lookups[] = {"strcmp(", "_find(", "pb_backend_create("};
    static char report[1 << 14];
    report[0] = 0;
    int count = 0;
    for (size_t i = 0; i < sizeof files / sizeof *files; i++)
        count += find_names(files[i], lookups, sizeof lookups / sizeof *lookups, report,
                            sizeof report);
    ck_assert_msg(count == 0, "%d name lookup(s) after the plan is built:%s", count, report);
}
END_TEST

/* Registries sit beside what they list (docs/design.md §1): a file that does the shared
 * work beside a registry names none of its entries, so no circle ties it to them; the
 * registry's table names them instead (adding an entry is one row there). A layer below
 * a registry's folder does not declare it (the IR holds struct pb_schedule, the
 * interface; schedules/registry.h the table). */
static const struct {
    const char *file, *name;
} names_none[] = {
    {"workloads/datasets/dataset.c", "pb_dataset_fashion_mnist"},
    {"workloads/datasets/dataset.c", "pb_dataset_synthetic"},
    {"workloads/datasets/dataset.c", "pb_dataset_cifar"},
    {"workloads/datasets/dataset.c", "pb_dataset_tiny_imagenet"},
    {"workloads/datasets/dataset.c", "pb_dataset_imdb"},
    {"workloads/datasets/dataset.c", "pb_dataset_wmt16"},
    {"workloads/datasets/dataset.c", "\"cifar10\""},
    {"harness/compute/backend.c", "pb_backend_cpu_"},
    {"harness/compute/backend.c", "pb_backend_cuda_"},
    {"harness/compute/backend.h", "pb_backend_cpu_"},
    {"harness/compute/backend.h", "pb_backend_cuda_"},
    {"harness/ir/program.h", "pb_schedules"},
    {"harness/ir/program.h", "pb_schedule_find"},
};

START_TEST(test_registries_beside)
{
    static char report[1 << 14];
    report[0] = 0;
    int count = 0;
    for (size_t i = 0; i < sizeof names_none / sizeof *names_none; i++)
        count += find_names(names_none[i].file, &names_none[i].name, 1, report, sizeof report);
    ck_assert_msg(count == 0, "%d name(s) of a registry or its entries outside its folder:%s",
                  count, report);
}
END_TEST

/* The circle opens both ways: the dataset loaders are given what the registry resolved
 * (struct pb_dataset_source: the folder, where it came from, the image kind) and look
 * nothing up in it. */
START_TEST(test_loaders_look_nothing_up)
{
    static const char *const loaders[] = {
        "workloads/datasets/idx.c",       "workloads/datasets/cifar.c",
        "workloads/datasets/tiny_imagenet.c", "workloads/datasets/imdb.c",
        "workloads/datasets/imdb_npz.c",  "workloads/datasets/wmt16.c",
        "workloads/datasets/synthetic.c", "workloads/datasets/synthetic_seq.c",
        "workloads/datasets/synthetic_wmt16.c",
    };
    static const char *const lookups[] = {
        "pb_dataset_env_var(", "pb_dataset_default_dir(", "pb_dataset_image_kind(",
        "pb_dataset_dir(",     "pb_dataset_load",         "pb_dataset_is_",
        "pb_dataset_summary(", "pb_dataset_names",
    };
    static char report[1 << 14];
    report[0] = 0;
    int count = 0;
    for (size_t i = 0; i < sizeof loaders / sizeof *loaders; i++)
        count += find_names(loaders[i], lookups, sizeof lookups / sizeof *lookups, report,
                            sizeof report);
    ck_assert_msg(count == 0, "%d registry lookup(s) in a dataset loader:%s", count, report);
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("layering");
    TCase *tc = tcase_create("includes");
    tcase_add_test(tc, test_includes_point_down);
    tcase_add_test(tc, test_rule_catches_upward);
    tcase_add_test(tc, test_no_lookup_after_setup);
    tcase_add_test(tc, test_registries_beside);
    tcase_add_test(tc, test_loaders_look_nothing_up);
    suite_add_tcase(s, tc);
    return s;
}
