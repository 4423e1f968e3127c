/* harness/compute/registry.h — the registry of backends (registry.c, design §4.1): every
 * backend this project knows, built or not, and creation by name. */
#ifndef PB_BACKEND_REGISTRY_H
#define PB_BACKEND_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>

#include "harness/base/err.h"
#include "harness/compute/backend.h"

/* The registry of backends (registry.c): every one this project knows, built or not. */
struct pb_backend_reg {
    const char *name, *summary;
    /* NULL when this build does not have it: creating it is refused with `missing` */
    struct pb_backend *(*create)(const struct pb_backend_cfg *c, struct pb_err *e);
    const char *missing;
    /* The versions of the libraries it computes with ("oneDNN 2.6.3"), for a run's
     * record; NULL when not built. */
    void (*libraries)(char *buf, size_t cap);
    /* whether pb_backend_cfg's tf32 means anything to it (TF32 tensor cores) */
    bool has_tf32;
};
extern const struct pb_backend_reg pb_backends[];   /* {NULL}-terminated */

/* Adds a backend built outside the library to the registry (a test's checking
 * backend); at most 4. */
void pb_backend_register(const struct pb_backend_reg *r);

/* Creates a backend by name ("cpu"); an unknown or unbuilt name is an error that
 * says what to use instead. */
struct pb_backend *pb_backend_create(const char *name, const struct pb_backend_cfg *c,
                                     struct pb_err *e);
/* Whether the registry has a backend of this name built (else e says why not). */
int pb_backend_check_name(const char *name, struct pb_err *e);
/* The registry entry of a backend this build has, NULL (e says why) for any other. */
const struct pb_backend_reg *pb_backend_find(const char *name, struct pb_err *e);
/* The libraries backend `name` computes with (its registry's libraries), "" if none. */
void pb_backend_libraries(const char *name, char *buf, size_t cap);

#endif
