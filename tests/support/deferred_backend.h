/* tests/support/deferred_backend.h — a checking backend for the tests: the CPU backend behind
 * a queue that runs at `sync`, so the core's side of backend.h's device contract is
 * exercised as an asynchronous device would exercise it (CUDA.md §6). It is not a GPU
 * test: it checks the core, deterministically, on the CPU.
 *   - every op is queued and runs at sync, on the thread that syncs;
 *   - upload reads its source at sync (a source changed or freed before is reported);
 *   - download destinations and write_begin buffers hold NaN until sync;
 *   - host_visible is false; instances share memory only on the same device index;
 *   - an op called from a thread that has not bound the instance is reported;
 *   - a queued op naming a block that left the instance (handed to another instance's
 *     cache or taken over) before the op ran, with no fence recorded since, is reported
 *     with the op and the block;
 *   - errors of the inner backend surface at sync, not before;
 *   - copy_peer reads another device's block at sync, guarded by the reader's fence;
 *   - op times come from marks timed when the queue reaches them, read after a sync.
 * Devices 0..3 are accepted (all on the host's cores), so placement can be tested. */
#ifndef PB_TESTS_DEFERRED_BACKEND_H
#define PB_TESTS_DEFERRED_BACKEND_H

#include <stdbool.h>
#include <stddef.h>

/* Registers "deferred" in the backend registry (idempotent). */
void pb_deferred_register(void);
/* Whether instances created from now on copy from another device's memory themselves
 * (copy_peer, the default) or leave tensors between devices to cross through the host. */
void pb_deferred_peer_copies(bool on);
/* Violations reported so far (each also fails its instance), their text into buf. */
int pb_deferred_violations(char *buf, size_t cap);
void pb_deferred_reset(void);

#endif
