/* tests/exec/test_transport.c — the transport plan (harness/exec/transport.c): every rule, the
 * mixed placements a run meets (several stages per device in one process, one rank per
 * GPU, ranks sharing a GPU, which NCCL refuses: shared/CUDA.md §7) and bad inputs. */
#include <check.h>
#include <string.h>

#include "harness/exec/transport.h"

static const struct pb_xfer_caps gpu = {.host_visible = false, .device_comm = true,
                                        .peer_copy = true};
static const struct pb_xfer_caps gpu_no_peer = {.host_visible = false, .device_comm = true};
static const struct pb_xfer_caps gpu_no_comm = {.host_visible = false, .device_comm = false};
static const struct pb_xfer_caps cpu = {.host_visible = true, .device_comm = false};

/* The plan of n stages at ranks r [n] and devices d [n], checked against want [n − 1]. */
static void check_plan(const int *r, const int *d, int n, struct pb_xfer_caps c,
                       const enum pb_xfer *want)
{
    struct pb_xfer_place p[8];
    enum pb_xfer got[8];
    memset(got, 0xff, sizeof got);
    for (int k = 0; k < n; k++)
        p[k] = (struct pb_xfer_place){r[k], d[k]};
    struct pb_err e = {0};
    ck_assert_msg(pb_transport_plan(p, n, c, got, &e) == 0, "%s", e.msg);
    for (int k = 0; k + 1 < n; k++)
        ck_assert_msg(got[k] == want[k], "edge %d: %s, want %s", k, pb_xfer_name(got[k]),
                      pb_xfer_name(want[k]));
    ck_assert_int_eq((int)got[n - 1], -1);   /* nothing written past the n − 1 edges */
}

START_TEST(test_each_rule)
{
    /* one process, one device: zero copy */
    check_plan((int[]){0, 0}, (int[]){0, 0}, 2, gpu, (enum pb_xfer[]){PB_XFER_TAKE});
    /* one process, two devices: a peer copy where the backend has one, else host staging,
     * with or without device send/recv */
    check_plan((int[]){0, 0}, (int[]){0, 1}, 2, gpu, (enum pb_xfer[]){PB_XFER_PEER});
    check_plan((int[]){0, 0}, (int[]){0, 1}, 2, gpu_no_peer, (enum pb_xfer[]){PB_XFER_HOST});
    check_plan((int[]){0, 0}, (int[]){0, 1}, 2, gpu_no_comm, (enum pb_xfer[]){PB_XFER_HOST});
    /* host-visible memory is one address space whatever the device index */
    check_plan((int[]){0, 0}, (int[]){0, 1}, 2, cpu, (enum pb_xfer[]){PB_XFER_TAKE});
    /* two processes, two devices: device send/recv where the backend has it */
    check_plan((int[]){0, 1}, (int[]){0, 1}, 2, gpu, (enum pb_xfer[]){PB_XFER_DEVICE});
    check_plan((int[]){0, 1}, (int[]){0, 1}, 2, gpu_no_comm, (enum pb_xfer[]){PB_XFER_MPI_HOST});
    /* two processes on one device: never one NCCL communicator, MPI instead */
    check_plan((int[]){0, 1}, (int[]){0, 0}, 2, gpu, (enum pb_xfer[]){PB_XFER_MPI_HOST});
    /* host-visible memory between processes: MPI reads it directly */
    check_plan((int[]){0, 1}, (int[]){0, 1}, 2, cpu, (enum pb_xfer[]){PB_XFER_MPI_HOST});
    struct pb_xfer_caps odd = {.host_visible = true, .device_comm = true};
    check_plan((int[]){0, 1}, (int[]){0, 1}, 2, odd, (enum pb_xfer[]){PB_XFER_MPI_HOST});
    /* one stage: no edge */
    check_plan((int[]){0}, (int[]){3}, 1, gpu, NULL);
}
END_TEST

START_TEST(test_mixed_placements)
{
    /* D = 4 in one process on devices 0, 0, 1, 1 */
    check_plan((int[]){0, 0, 0, 0}, (int[]){0, 0, 1, 1}, 4, gpu,
               (enum pb_xfer[]){PB_XFER_TAKE, PB_XFER_PEER, PB_XFER_TAKE});
    /* 4 ranks on devices 0, 1, 2, 3 */
    check_plan((int[]){0, 1, 2, 3}, (int[]){0, 1, 2, 3}, 4, gpu,
               (enum pb_xfer[]){PB_XFER_DEVICE, PB_XFER_DEVICE, PB_XFER_DEVICE});
    /* 2 ranks both on device 0 */
    check_plan((int[]){0, 1}, (int[]){0, 0}, 2, gpu, (enum pb_xfer[]){PB_XFER_MPI_HOST});
    /* 4 ranks on 2 GPUs, paired: 0,0 then 1,1 */
    check_plan((int[]){0, 1, 2, 3}, (int[]){0, 0, 1, 1}, 4, gpu,
               (enum pb_xfer[]){PB_XFER_MPI_HOST, PB_XFER_DEVICE, PB_XFER_MPI_HOST});
    /* 4 ranks on 2 GPUs, alternating: every edge joins two GPUs */
    check_plan((int[]){0, 1, 2, 3}, (int[]){0, 1, 0, 1}, 4, gpu,
               (enum pb_xfer[]){PB_XFER_DEVICE, PB_XFER_DEVICE, PB_XFER_DEVICE});
    /* 2 processes of 2 stages each, one device per stage, and one of 2 stages on one device */
    check_plan((int[]){0, 0, 1, 1, 2, 2}, (int[]){0, 1, 0, 1, 2, 2}, 6, gpu,
               (enum pb_xfer[]){PB_XFER_PEER, PB_XFER_DEVICE, PB_XFER_PEER, PB_XFER_DEVICE,
                                PB_XFER_TAKE});
    /* the same placement on the CPU backend */
    check_plan((int[]){0, 0, 1, 1, 2, 2}, (int[]){0, 1, 0, 1, 2, 2}, 6, cpu,
               (enum pb_xfer[]){PB_XFER_TAKE, PB_XFER_MPI_HOST, PB_XFER_TAKE, PB_XFER_MPI_HOST,
                                PB_XFER_TAKE});
}
END_TEST

/* The plan refuses the placement with a message containing `want`. */
static void check_refused(const struct pb_xfer_place *p, int n, const char *want)
{
    enum pb_xfer edges[8];
    struct pb_err e = {0};
    ck_assert_int_eq(pb_transport_plan(p, n, gpu, edges, &e), -1);
    ck_assert_msg(strstr(e.msg, want), "'%s' lacks '%s'", e.msg, want);
}

START_TEST(test_bad_inputs)
{
    struct pb_xfer_place ok[2] = {{0, 0}, {1, 1}};
    check_refused(ok, 0, "0 stages (need at least 1)");
    check_refused(ok, -3, "need at least 1");
    check_refused(NULL, 2, "no placement");
    struct pb_err e = {0};
    ck_assert_int_eq(pb_transport_plan(ok, 2, gpu, NULL, &e), -1);
    ck_assert_int_eq(pb_transport_plan(ok, 1, gpu, NULL, &e), 0);  /* no edge to fill */
    check_refused((struct pb_xfer_place[]){{0, 0}, {-1, 1}}, 2, "stage 1 has rank -1");
    check_refused((struct pb_xfer_place[]){{0, -2}, {1, 1}}, 2, "stage 0 has rank 0 and device -2");
    /* a process's stages are neighbours */
    check_refused((struct pb_xfer_place[]){{0, 0}, {1, 1}, {0, 2}}, 3,
                  "rank 0 runs stages 0 and 2 but not stage 1");
    check_refused((struct pb_xfer_place[]){{0, 0}, {0, 0}, {1, 1}, {1, 1}, {0, 2}}, 5,
                  "rank 0 runs stages 0 and 4");
    ck_assert_str_eq(pb_xfer_name(PB_XFER_MPI_HOST), "mpi-host");
    ck_assert_str_eq(pb_xfer_name((enum pb_xfer)42), "?");
}
END_TEST

Suite *pb_test_suite(void)
{
    Suite *s = suite_create("transport");
    TCase *tc = tcase_create("plan");
    tcase_add_test(tc, test_each_rule);
    tcase_add_test(tc, test_mixed_placements);
    tcase_add_test(tc, test_bad_inputs);
    suite_add_tcase(s, tc);
    return s;
}
