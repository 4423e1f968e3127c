/* harness/exec/msgq.h — a FIFO of messages between two neighbouring stages (one per
 * direction), the only channel the executors need (design §2.3: FIFO per
 * source, destination and direction makes results independent of timing). */
#ifndef PB_MSGQ_H
#define PB_MSGQ_H

#include <stdlib.h>

#include "harness/exec/worker.h"

struct pb_msgq {
    struct pb_msg *items;
    int head, count, cap;
};

static inline void pb_msgq_push(struct pb_msgq *q, struct pb_msg m)
{
    if (q->count == q->cap) {
        int cap = q->cap ? 2 * q->cap : 8;
        struct pb_msg *items = pb_xmalloc((size_t)cap * sizeof *items);
        for (int i = 0; i < q->count; i++)
            items[i] = q->items[(q->head + i) % q->cap];
        free(q->items);
        q->items = items;
        q->head = 0;
        q->cap = cap;
    }
    q->items[(q->head + q->count) % q->cap] = m;
    q->count++;
}

static inline struct pb_msg pb_msgq_pop(struct pb_msgq *q)
{
    PB_CHECK(q->count > 0);
    struct pb_msg m = q->items[q->head];
    q->head = (q->head + 1) % q->cap;
    q->count--;
    return m;
}

/* Frees the queued messages and the queue. */
static inline void pb_msgq_finish(struct pb_msgq *q)
{
    while (q->count > 0) {
        struct pb_msg m = pb_msgq_pop(q);
        pb_msg_free(&m);
    }
    free(q->items);
    q->items = NULL;
    q->cap = 0;
}

#endif
