/* tests/fuzz/fuzz_sweep.c — libFuzzer target: the sweep file parser and its checks
 * (pb_sweep_load_mem: inih, the [grid] lists and continuations, [run] options, the
 * expansion and each configuration's check). Input: a whole sweep file. What it
 * accepts holds 1 to PB_SWEEP_MAX_CONFIGS labelled configurations; what it refuses says
 * why. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "harness/driver/sweep.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct pb_sweep s;
    struct pb_err e = {{0}};
    if (pb_sweep_load_mem(&s, "fuzz.ini", data, size, NULL, 0, &e) == 0) {
        PB_FUZZ_ASSERT(s.n >= 1 && s.n <= PB_SWEEP_MAX_CONFIGS && s.nerrors == 0,
                       "%d configurations, %d errors", s.n, s.nerrors);
        for (int i = 0; i < s.n; i++)
            PB_FUZZ_ASSERT(s.items[i].label[0] && memchr(s.items[i].label, 0,
                                                         sizeof s.items[i].label),
                           "configuration %d has no label", i);
        pb_fuzz_accepted("sweep");
    } else {
        for (int i = 0; i < s.nerrors; i++)
            PB_FUZZ_ASSERT(s.errors[i].msg[0], "error %d is empty", i);
        pb_fuzz_refused(s.nerrors ? s.errors[0].msg : e.msg);
    }
    pb_sweep_finish(&s);
    return 0;
}
