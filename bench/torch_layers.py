# bench/torch_layers.py — PyTorch's side of bench/bench_layers.c: times one layer op per
# request line on stdin and answers the median seconds on stdout, so that the C benchmark
# interleaves its own measurements with PyTorch's in one run. Requests:
#   conv OP N CIN H W COUT K S P THREADS WARMUP REPS    (OP: fwd, bwd_data, bwd_weights)
#   pool OP N C H W K S P THREADS WARMUP REPS           (OP: fwd, bwd; max pooling)
#   attn OP B TQ TK HQ HK U THREADS WARMUP REPS         (OP: fwd, bwd; GNMT's attention)
# The attention is tests/fixtures/fixtures_gnmt.py's BahdanauAttention (the MLPerf
# reference's, its init) with every source at full length; fwd runs with autograd on (as
# in training: it keeps what the backward needs), bwd is torch.autograd.grad of the context
# by q, k and the parameters from one forward's graph (kept).
# The first line answered is bench/torch_peer.py's "torch VERSION blas ...".
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

from torch_peer import describe  # the first line answered

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "fixtures"))
from fixtures_gnmt import BahdanauAttention  # noqa: E402

torch.manual_seed(0)
cache = {}


def conv_case(n, cin, h, w, cout, k, s, p):
    key = ("conv", n, cin, h, w, cout, k, s, p)
    if key not in cache:
        x = torch.rand(n, cin, h, w) * 2 - 1
        wt = torch.rand(cout, cin, k, k) * 2 - 1
        b = torch.rand(cout) * 2 - 1
        y = F.conv2d(x, wt, b, s, p)
        dy = torch.rand_like(y) * 2 - 1
        cache[key] = (x, wt, b, dy)
    x, wt, b, dy = cache[key]
    bwd = torch.ops.aten.convolution_backward
    return {
        "fwd": lambda: F.conv2d(x, wt, b, s, p),
        "bwd_data": lambda: bwd(dy, x, wt, [cout], [s, s], [p, p], [1, 1], False, [0, 0], 1,
                                [True, False, False]),
        "bwd_weights": lambda: bwd(dy, x, wt, [cout], [s, s], [p, p], [1, 1], False, [0, 0], 1,
                                   [False, True, True]),
    }


def pool_case(n, c, h, w, k, s, p):
    key = ("pool", n, c, h, w, k, s, p)
    if key not in cache:
        x = torch.rand(n, c, h, w) * 2 - 1
        y, idx = F.max_pool2d(x, k, s, p, return_indices=True)
        dy = torch.rand_like(y) * 2 - 1
        cache[key] = (x, idx, dy)
    x, idx, dy = cache[key]
    bwd = torch.ops.aten.max_pool2d_with_indices_backward
    return {
        "fwd": lambda: F.max_pool2d(x, k, s, p, return_indices=True),
        "bwd": lambda: bwd(dy, x, [k, k], [s, s], [p, p], [1, 1], False, idx),
    }


def attn_case(b, tq, tk, hq, hk, u):
    key = ("attn", b, tq, tk, hq, hk, u)
    if key not in cache:
        attn = BahdanauAttention(hq, hk, u)
        q = (torch.rand(b, tq, hq) * 2 - 1).requires_grad_()
        k = (torch.rand(b, tk, hk) * 2 - 1).requires_grad_()
        lengths = torch.full((b,), tk, dtype=torch.int64)
        y = attn(q, k, lengths)
        dy = torch.rand_like(y) * 2 - 1
        cache[key] = (attn, q, k, lengths, y, dy)
    attn, q, k, lengths, y, dy = cache[key]
    wrt = [q, k] + list(attn.parameters())
    return {
        "fwd": lambda: attn(q, k, lengths),
        "bwd": lambda: torch.autograd.grad(y, wrt, dy, retain_graph=True),
    }


def main():
    print(describe(), flush=True)
    for line in sys.stdin:
        f = line.split()
        if not f:
            continue
        ints = [int(v) for v in f[2:]]
        threads, warmup, reps = ints[-3:]
        torch.set_num_threads(threads)
        if f[0] == "conv":
            fns = conv_case(*ints[:8])
        elif f[0] == "pool":
            fns = pool_case(*ints[:7])
        else:
            fns = attn_case(*ints[:6])
        fn = fns[f[1]]
        with torch.set_grad_enabled(f[0] == "attn"):
            for _ in range(warmup):
                fn()
            times = []
            for _ in range(reps):
                t0 = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t0)
        print("%.9g" % statistics.median(times), flush=True)


main()
