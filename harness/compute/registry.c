/* harness/compute/registry.c — the registry of backends (design §4.1): one row per
 * backend this project knows, built or not (name, summary, constructor, the libraries
 * it computes with), those a program adds at run time, and creation by name. The CUDA
 * backend is a module loaded on its first use. */
#include "harness/compute/registry.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "harness/base/self_exe.h"
#include "harness/compute/cpu/cpu_backend.h"
#include "pb_config.h"

static struct pb_backend *create_cpu(const struct pb_backend_cfg *c, struct pb_err *e)
{
    if (c->device != 0)
        return pb_err_set(e, "the cpu backend has one device, 0 (got %d)", c->device), NULL;
    return pb_backend_cpu_create(c->threads, e);
}

#if PB_HAVE_CUDA
/* The CUDA backend's module (meson.build: pipebench-cuda.so), loaded on first use: from
 * the program itself where it links the backend (a test of its internals), else, for a
 * program of the build tree, from the build folder; for any other, from the install tree
 * the program runs from (found from its own folder, so a moved install or the bundle of
 * scripts/gpu-bundle works), else from where it was installed. */
static struct {
    pthread_once_t once;
    struct pb_backend *(*create)(const struct pb_backend_cfg *c, struct pb_err *e);
    void (*libraries)(char *buf, size_t cap);
    char why[512];
} cuda_module = {PTHREAD_ONCE_INIT, NULL, NULL, ""};

static void cuda_module_load(void)
{
    void *create = dlsym(RTLD_DEFAULT, "pb_backend_cuda_create");
    void *libraries = dlsym(RTLD_DEFAULT, "pb_backend_cuda_libraries");
    char exe[4096] = "", beside[4096 + 256] = "";
    bool in_build = pb_self_exe(exe, sizeof exe) && pb_in_build_tree(exe);
    char *slash = strrchr(exe, '/');
    if (!in_build && slash && PB_CUDA_MODULE_FROM_BIN[0]) {
        *slash = 0;
        snprintf(beside, sizeof beside, "%s/%s", exe, PB_CUDA_MODULE_FROM_BIN);
    }
    const char *paths[] = {in_build ? PB_CUDA_MODULE_BUILD : beside,
                           in_build ? "" : PB_CUDA_MODULE_INSTALLED};
    for (int i = 0; i < 2 && !(create && libraries); i++) {
        if (!paths[i][0])
            continue;
        void *h = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            const char *err = dlerror();
            size_t n = strlen(cuda_module.why);
            snprintf(cuda_module.why + n, sizeof cuda_module.why - n, "%s%s", n ? "; " : "",
                     err ? err : paths[i]);
            continue;
        }
        create = dlsym(h, "pb_backend_cuda_create");
        libraries = dlsym(h, "pb_backend_cuda_libraries");
    }
    *(void **)&cuda_module.create = create;
    *(void **)&cuda_module.libraries = libraries;
}

static struct pb_backend *create_cuda(const struct pb_backend_cfg *c, struct pb_err *e)
{
    pthread_once(&cuda_module.once, cuda_module_load);
    if (!cuda_module.create)
        return pb_err_set(e, "the CUDA backend's module could not be loaded (%s); rebuild "
                             "pipebench, or run with --backend cpu", cuda_module.why), NULL;
    return cuda_module.create(c, e);
}

static void cuda_libraries(char *buf, size_t cap)
{
    pthread_once(&cuda_module.once, cuda_module_load);
    if (cuda_module.libraries)
        cuda_module.libraries(buf, cap);
    else
        snprintf(buf, cap, "CUDA backend module not loaded");
}
#endif

const struct pb_backend_reg pb_backends[] = {
    {"cpu", "oneDNN on the host's cores (the reference)", create_cpu, NULL,
     pb_backend_cpu_libraries, false},
#if PB_HAVE_CUDA
    {"cuda", "cuBLAS and cuDNN on NVIDIA GPUs", create_cuda, NULL, cuda_libraries, true},
#else
    {"cuda", "cuBLAS and cuDNN on NVIDIA GPUs", NULL,
     "this pipebench was built without CUDA (no nvcc when it was configured, or -Dcuda=disabled); "
     "rebuild with the CUDA toolkit on the PATH, or run with --backend cpu", NULL, true},
#endif
    {NULL, NULL, NULL, NULL, NULL, false},
};

/* Backends registered at run time (pb_backend_register), after the table's. */
static const struct pb_backend_reg *registered[4];
static int nregistered;

void pb_backend_register(const struct pb_backend_reg *r)
{
    for (int i = 0; i < nregistered; i++)
        if (registered[i] == r)
            return;
    PB_CHECK(nregistered < (int)(sizeof registered / sizeof *registered));
    registered[nregistered++] = r;
}

const struct pb_backend_reg *pb_backend_find(const char *name, struct pb_err *e)
{
    const struct pb_backend_reg *r = NULL;
    for (const struct pb_backend_reg *t = pb_backends; t->name && !r; t++)
        if (!strcmp(t->name, name))
            r = t;
    for (int i = 0; i < nregistered && !r; i++)
        if (!strcmp(registered[i]->name, name))
            r = registered[i];
    if (r && !r->create)
        return pb_err_set(e, "--backend %s: %s", name, r->missing), NULL;
    if (r)
        return r;
    char names[256] = "";
    for (const struct pb_backend_reg *t = pb_backends; t->name; t++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                 t == pb_backends ? "" : ", ", t->name);
    pb_err_set(e, "unknown backend '%s'; valid backends: %s", name, names);
    return NULL;
}

void pb_backend_libraries(const char *name, char *buf, size_t cap)
{
    struct pb_err e;
    const struct pb_backend_reg *r = pb_backend_find(name, &e);
    if (r && r->libraries)
        r->libraries(buf, cap);
    else if (cap)
        buf[0] = '\0';
}

int pb_backend_check_name(const char *name, struct pb_err *e)
{
    return pb_backend_find(name, e) ? 0 : -1;
}

struct pb_backend *pb_backend_create(const char *name, const struct pb_backend_cfg *c,
                                     struct pb_err *e)
{
    const struct pb_backend_reg *r = pb_backend_find(name, e);
    return r ? r->create(c, e) : NULL;
}
