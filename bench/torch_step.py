# bench/torch_step.py — PyTorch's side of bench/bench_step.c: builds the twin of a pipebench
# model from the layer list the C benchmark sends (the same layer configs pipebench runs) and
# times its training step (zero_grad, forward, cross-entropy, backward, SGD-momentum step).
# Requests on stdin, one a line; answers on stdout:
#   def KEY N C H W CLASSES SMOOTHING SPEC   → "ok PARAMS" (its parameter count) or "error WHY"
#   step KEY THREADS WARMUP REPS             → the median seconds of one step
# SPEC: blocks separated by "/", nodes by " "; a node is "kind,arg,...|in,..." with the
# inputs as node indices in its block (-1: the block's input). The first line answered is
# bench/torch_peer.py's "torch VERSION blas ...": what this torch computes with.
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from torch_peer import describe  # the first line answered


class Linear(nn.Linear):
    """nn.Linear on [N, in] or on [N, in, 1, 1] (pipebench's linear reads both)."""

    def forward(self, x):
        return super().forward(x if x.dim() == 2 else x.flatten(1))


class Add(nn.Module):
    def __init__(self, relu):
        super().__init__()
        self.relu = relu

    def forward(self, *xs):
        y = sum(xs[1:], xs[0])
        return torch.relu(y) if self.relu else y


class Concat(nn.Module):
    def forward(self, *xs):
        return torch.cat(xs, 1)


def make_layer(kind, a):
    """The torch module of one pipebench layer (harness/model/layers/*.c)."""
    if kind == "linear":
        return Linear(int(a[0]), int(a[1]), bias=a[2] == "1")
    if kind == "conv":
        cin, cout, kh, kw, sh, sw, ph, pw, bias = (int(v) for v in a)
        return nn.Conv2d(cin, cout, (kh, kw), (sh, sw), (ph, pw), bias=bias == 1)
    if kind == "bn":  # a[3] == "1": its ReLU fused (batchnorm2d's relu)
        bn = nn.BatchNorm2d(int(a[0]), eps=float(a[1]), momentum=float(a[2]))
        return nn.Sequential(bn, nn.ReLU()) if a[3] == "1" else bn
    if kind == "relu":
        return nn.ReLU()
    if kind == "maxpool":
        kh, kw, sh, sw, ph, pw, ceil = (int(v) for v in a)
        return nn.MaxPool2d((kh, kw), (sh, sw), (ph, pw), ceil_mode=ceil == 1)
    if kind == "avgpool":
        kh, kw, sh, sw, ph, pw, ceil, exclude_pad = (int(v) for v in a)
        return nn.AvgPool2d((kh, kw), (sh, sw), (ph, pw), ceil_mode=ceil == 1,
                            count_include_pad=exclude_pad == 0)
    if kind == "gap":
        return nn.AdaptiveAvgPool2d(1)
    if kind == "dropout":
        return nn.Dropout(float(a[0]))
    if kind == "flatten":
        return nn.Flatten()
    if kind == "add":  # a[0] == "1": its ReLU fused (add's relu)
        return Add(a[0] == "1")
    if kind == "concat":
        return Concat()
    raise ValueError("no torch layer for pipebench layer kind '%s'" % kind)


class Twin(nn.Module):
    """A chain of blocks, each a small graph of layers, as pipebench's pb_model."""

    def __init__(self, spec):
        super().__init__()
        self.layers = nn.ModuleList()
        self.plan = []
        for block in spec.split("/"):
            nodes = []
            for node in block.split():
                layer, inputs = node.split("|")
                kind, *args = layer.split(",")
                self.layers.append(make_layer(kind, args))
                nodes.append((self.layers[-1], [int(i) for i in inputs.split(",")]))
            self.plan.append(nodes)

    def forward(self, x):
        for nodes in self.plan:
            outs = []
            for layer, inputs in nodes:
                outs.append(layer(*[x if i < 0 else outs[i] for i in inputs]))
            x = outs[-1]
        return x


def sgd_step(model, n, c, h, w, classes, smoothing):
    """One training step of model in train mode (SGD momentum 0.9, lr 0.01, softmax
    cross-entropy) on fixed random inputs [n, c, h, w]; returns it and the parameter
    count. bench/torch_zoo.py times its models with it too."""
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.rand(n, c, h, w) * 2 - 1
    y = torch.randint(0, classes, (n,))

    def step():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y, label_smoothing=smoothing)
        loss.backward()
        opt.step()

    return step, sum(p.numel() for p in model.parameters())


def median_step_time(step, threads, warmup, reps):
    """Seconds of one step on `threads` threads: the median of reps after warmup."""
    torch.set_num_threads(threads)
    for _ in range(warmup):
        step()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def define(n, c, h, w, classes, smoothing, spec):
    return sgd_step(Twin(spec), n, c, h, w, classes, smoothing)


def main():
    torch.manual_seed(0)
    print(describe(), flush=True)
    cases = {}
    for line in sys.stdin:
        f = line.split(maxsplit=8)
        if not f:
            continue
        if f[0] == "def":
            try:
                n, c, h, w, classes = (int(v) for v in f[2:7])
                cases[f[1]], params = define(n, c, h, w, classes, float(f[7]), f[8])
                print("ok %d" % params, flush=True)
            except (ValueError, RuntimeError) as err:
                print("error %s" % str(err).replace("\n", " "), flush=True)
            continue
        threads, warmup, reps = (int(v) for v in f[2:5])
        print("%.9g" % median_step_time(cases[f[1]], threads, warmup, reps), flush=True)


if __name__ == "__main__":
    main()
