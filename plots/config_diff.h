/* plots/config_diff.h — what tells configurations apart: given the identities (JSON
 * objects, results/views.sql's config_id) of runs that share a table row's visible labels,
 * the settings in which each differs from the others, so a table can show them instead
 * of averaging different configurations into one cell. */
#ifndef PB_CONFIG_DIFF_H
#define PB_CONFIG_DIFF_H

#include <stddef.h>

/* For configs[0 .. n): writes to out (cap bytes) "key=value, ..." for the keys of
 * configs[which] whose value is not the same in all n (in the object's key order; a key
 * missing in some reads as absent). Returns the number of keys written; 0 and "" when
 * configs[which] equals every other or a config is not a JSON object. */
int pb_config_diff(const char *const *configs, int n, int which, char *out, size_t cap);

#endif
