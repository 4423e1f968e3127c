# bench/torch_seq.py — PyTorch's side of bench/bench_seq.c: the sequence zoo's models as the
# fixture script defines them (fixtures_seq.ResidualLSTM; torch_gnmt.GNMT, with
# fixtures_gnmt's attention and label smoothing written the same way), loaded with
# pipebench's initial weights and its batch, and timed on the training step bench_seq times
# (zero_grad, forward, the loss, backward, Adam step).
# Requests on stdin, one a line; answers on stdout:
#   def KEY KIND B T LR WD SMOOTHING DIMS COUNTS WEIGHTS BATCH [FLOATS]
#       → "ok PARAMS" (its parameter count) or "error WHY". KIND and DIMS (comma lists):
#         rlstm V,H,BLOCKS,CLASSES  the residual LSTM; loss cross_entropy(logits, labels)
#         gnmt  V,H,ENC,DEC         GNMT; loss cross_entropy over the B·T next tokens,
#                                   ignore_index 0 (PAD), label_smoothing SMOOTHING
#         stack H,ENC               GNMT's encoder LSTM stack (GNMT.encode) on inputs x
#                                   [B, T, H]; loss sum(y · dy), x's gradient computed
#       COUNTS: pipebench's parameter tensors' sizes in order, each checked against
#       parameters(); WEIGHTS: their values, float32 raw; BATCH: int32 raw, rlstm tokens
#       [B, T], lengths [B], labels [B]; gnmt source [B, T], target [B, T], source lengths
#       [B], labels [B, T]; stack source lengths [B]; FLOATS (stack): float32 x then dy.
#       The optimizer: torch.optim.Adam(lr LR, weight_decay WD), its L2 form.
#   check KEY → "LOSS0 GRAD2 LOSS1": with every dropout at p = 0 on one thread, the loss of
#       the first step, the sum of its squared parameter gradients and the loss after its
#       update (dropout is restored after)
#   step KEY THREADS WARMUP REPS → the median seconds of one step
#   drop KEY → "ok" (the case's memory is freed)
# The first line answered is bench/torch_peer.py's "torch VERSION blas ...".
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from torch_peer import describe  # the first line answered
from torch_step import median_step_time  # bench_step's timing

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "fixtures"))
import fixtures_seq  # noqa: E402  (ResidualLSTM)
import torch_gnmt  # noqa: E402  (GNMT)


class EncoderStack(nn.Module):
    """GNMT's encoder LSTMs alone (bidirectional H, 2H -> H, residual H -> H), run by
    torch_gnmt.GNMT.encode: the parameters of the GNMT it is cut from are only these."""

    def __init__(self, hidden, enc_layers):
        super().__init__()
        g = torch_gnmt.GNMT(8, hidden, enc_layers, 1)
        self.enc_layers = g.enc_layers
        self.dropout = g.dropout

    forward = torch_gnmt.GNMT.encode


def ints(data, n, shape):
    """The next n int32 of data as an int64 tensor of shape, and the rest."""
    return torch.from_numpy(data[:n].astype(np.int64)).reshape(shape), data[n:]


def build(kind, b, t, dims, smoothing, batch, floats):
    """The module of KIND and its loss on the batch: (module, loss(), the inputs that take a
    gradient, the ids left over)."""
    if kind == "rlstm":
        v, h, blocks, classes = dims
        net = fixtures_seq.ResidualLSTM(v, h, blocks, classes)
        tokens, batch = ints(batch, b * t, (b, t))
        lengths, batch = ints(batch, b, (b,))
        labels, batch = ints(batch, b, (b,))
        return net, lambda: F.cross_entropy(net(tokens, lengths), labels), [], batch
    if kind == "gnmt":
        v, h, enc, dec = dims
        net = torch_gnmt.GNMT(v, h, enc, dec)
        src, batch = ints(batch, b * t, (b, t))
        tgt, batch = ints(batch, b * t, (b, t))
        src_len, batch = ints(batch, b, (b,))
        labels, batch = ints(batch, b * t, (b * t,))
        return net, lambda: F.cross_entropy(net(src, src_len, tgt).reshape(b * t, v), labels,
                                            ignore_index=0, label_smoothing=smoothing), [], batch
    if kind == "stack":
        h, enc = dims
        net = EncoderStack(h, enc)
        src_len, batch = ints(batch, b, (b,))
        if floats.size != 2 * b * t * h:
            raise ValueError("the stack's floats hold %d values, not x and dy (%d)"
                             % (floats.size, 2 * b * t * h))
        x = torch.from_numpy(floats[:b * t * h].copy()).reshape(b, t, h).requires_grad_(True)
        dy = torch.from_numpy(floats[b * t * h:].copy()).reshape(b, t, h)
        return net, lambda: (net(x, src_len) * dy).double().sum(), [x], batch
    raise ValueError("no sequence model kind '%s'" % kind)


def load_weights(net, counts, path):
    """pipebench's initial weights into parameters(), tensor by tensor."""
    params = list(net.parameters())
    if len(params) != len(counts) or any(p.numel() != n for p, n in zip(params, counts)):
        raise ValueError("PyTorch's tensors %s are not pipebench's %s"
                         % ([p.numel() for p in params], counts))
    flat = np.fromfile(path, dtype=np.float32)
    if flat.size != sum(counts):
        raise ValueError("%s holds %d floats, not %d" % (path, flat.size, sum(counts)))
    off = 0
    with torch.no_grad():
        for p in params:
            p.copy_(torch.from_numpy(flat[off:off + p.numel()]).reshape(p.shape))
            off += p.numel()
    return sum(counts)


class Case:
    """One model on one batch with its optimizer: the step bench_seq times, and its check."""

    def __init__(self, f):
        kind, b, t = f[0], int(f[1]), int(f[2])
        lr, wd = float(f[3]), float(f[4])
        dims = [int(v) for v in f[6].split(",")]
        counts = [int(v) for v in f[7].split(",")]
        batch = np.fromfile(f[9], dtype=np.int32)
        floats = np.fromfile(f[10], dtype=np.float32) if len(f) > 10 else None
        self.net, self.loss, self.leaves, rest = build(kind, b, t, dims, float(f[5]), batch,
                                                      floats)
        if rest.size:
            raise ValueError("%s holds %d ids more than a batch" % (f[9], rest.size))
        self.params = load_weights(self.net, counts, f[8])
        self.net.train()
        self.opt = torch.optim.Adam(self.net.parameters(), lr=lr, weight_decay=wd)

    def step(self):
        self.opt.zero_grad(set_to_none=True)
        for x in self.leaves:
            x.grad = None
        self.loss().backward()
        self.opt.step()

    def check(self):
        drops = [m for m in self.net.modules() if isinstance(m, nn.Dropout)]
        kept = [m.p for m in drops]
        for m in drops:
            m.p = 0.0
        torch.set_num_threads(1)
        self.opt.zero_grad(set_to_none=True)
        loss0 = self.loss()
        loss0.backward()
        grad2 = sum(float((p.grad.double() ** 2).sum()) for p in self.net.parameters()
                    if p.grad is not None)
        self.opt.step()
        with torch.no_grad():
            loss1 = self.loss()
        for m, p in zip(drops, kept):
            m.p = p
        return loss0.item(), grad2, loss1.item()


def main():
    torch.manual_seed(0)
    print(describe(), flush=True)
    cases = {}
    for line in sys.stdin:
        f = line.split()
        if not f:
            continue
        if f[0] == "def":
            try:
                cases[f[1]] = Case(f[2:])
                print("ok %d" % cases[f[1]].params, flush=True)
            except (KeyError, ValueError, RuntimeError, IndexError, OSError) as err:
                print("error %s" % str(err).replace("\n", " "), flush=True)
        elif f[0] == "check":
            print("%.9g %.9g %.9g" % cases[f[1]].check(), flush=True)
        elif f[0] == "drop":
            cases.pop(f[1], None)
            print("ok", flush=True)
        else:
            threads, warmup, reps = (int(v) for v in f[2:5])
            print("%.9g" % median_step_time(cases[f[1]].step, threads, warmup, reps), flush=True)


if __name__ == "__main__":
    main()
