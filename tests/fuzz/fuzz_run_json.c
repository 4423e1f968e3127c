/* tests/fuzz/fuzz_run_json.c — libFuzzer target: a run's recorded configuration read
 * back (pb_run_cfg_from_json, what `pipebench resume` does). Input: the JSON text. A
 * configuration it accepts, recorded again (pb_run_cfg_json) and read back, must give
 * the same JSON. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness/driver/run_flags.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *json = pb_xmalloc(size + 1);
    if (size)
        memcpy(json, data, size);
    json[size] = 0;
    struct pb_run_cfg c, again;
    struct pb_run_json *keep = NULL, *keep_again = NULL;
    struct pb_err e = {{0}};
    pb_run_cfg_defaults(&c);
    if (pb_run_cfg_from_json(json, &c, &keep, &e) == 0) {
        char *first = pb_run_cfg_json(&c);
        pb_run_cfg_defaults(&again);
        int rc = pb_run_cfg_from_json(first, &again, &keep_again, &e);
        PB_FUZZ_ASSERT(rc == 0, "its own record is refused: %s\n%s", e.msg, first);
        char *second = pb_run_cfg_json(&again);
        PB_FUZZ_ASSERT(!strcmp(first, second), "recorded twice, it changes:\n%s\n%s", first,
                       second);
        pb_fuzz_accepted("run configuration");
        free(first);
        free(second);
    } else {
        pb_fuzz_refused(e.msg);
    }
    pb_run_json_finish(keep);
    pb_run_json_finish(keep_again);
    free(json);
    return 0;
}
