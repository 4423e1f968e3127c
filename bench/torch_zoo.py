# bench/torch_zoo.py — PyTorch's side of bench/bench_zoo.c: the zoo's image models as PyTorch
# defines them, timed on the training step pipebench's bench_zoo times (zero_grad, forward,
# cross-entropy, backward, SGD-momentum step). The `paper` presets are the definitions of
# tests/fixtures/fixtures_zoo.py (torchvision's AlexNet, ResNet-101 and Inception-V3; the
# CIFAR VGG-16-BN, GoogLeNet and DenseNet-121 of the paper's code); the `small` presets are
# written here the same way, with the widths and depths of workloads/*.c's `small` arch.
# Requests on stdin, one a line; answers on stdout:
#   def KEY MODEL PRESET N SIDE CLASSES SMOOTHING → "ok PARAMS" (its parameter count) or
#                                                   "error WHY"; inputs [N, 3, SIDE, SIDE]
#   step KEY THREADS WARMUP REPS                   → the median seconds of one step
#   drop KEY                                       → "ok" (the model's memory is freed)
# The first line answered is bench/torch_peer.py's "torch VERSION blas ...".
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torchvision.models.inception import BasicConv2d
from torchvision.models.resnet import Bottleneck

from torch_peer import describe  # the first line answered
from torch_step import median_step_time, sgd_step  # bench_step's step and timing

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "fixtures"))
import fixtures_zoo  # noqa: E402  (the paper definitions)


def width(w, div):
    """pb_zoo_width: w ÷ div, at least 1."""
    return max(w // div, 1)


class AlexNetSmall(nn.Module):
    """torchvision's AlexNet with workloads/models/alexnet.c's small arch: conv1 5x5/1 pad 2,
    channels 16, 48, 96, 64, 64, the adaptive pool to 3x3, fc 512."""

    def __init__(self, num_classes=200, conv=(16, 48, 96, 64, 64), pool=3, fc=512):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, conv[0], kernel_size=5, stride=1, padding=2), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(conv[0], conv[1], kernel_size=5, padding=2), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(conv[1], conv[2], kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(conv[2], conv[3], kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(conv[3], conv[4], kernel_size=3, padding=1), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2))
        self.avgpool = nn.AdaptiveAvgPool2d((pool, pool))
        self.classifier = nn.Sequential(
            nn.Dropout(p=0.5), nn.Linear(conv[4] * pool * pool, fc), nn.ReLU(inplace=True),
            nn.Dropout(p=0.5), nn.Linear(fc, fc), nn.ReLU(inplace=True),
            nn.Linear(fc, num_classes))

    def forward(self, x):
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


class ResNetSmall(nn.Module):
    """torchvision's ResNet of Bottlenecks (v1.5) with workloads/models/resnet101.c's small arch:
    stem conv 3x3/1 pad 1 (max-pool kept), widths 16, 32, 64, 128, layers [1, 2, 5, 1]."""

    def __init__(self, num_classes=200, layers=(1, 2, 5, 1), base=16):
        super().__init__()
        self.conv1 = nn.Conv2d(3, base, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(base)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        blocks, cin = [], base
        for i, n in enumerate(layers):
            w = base << i
            for j in range(n):
                stride = 2 if j == 0 and i > 0 else 1
                down = None
                if stride != 1 or cin != 4 * w:
                    down = nn.Sequential(nn.Conv2d(cin, 4 * w, 1, stride=stride, bias=False),
                                         nn.BatchNorm2d(4 * w))
                blocks.append(Bottleneck(cin, w, stride, down))
                cin = 4 * w
        self.layers = nn.Sequential(*blocks)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(cin, num_classes)

    def forward(self, x):
        x = self.layers(self.maxpool(self.relu(self.bn1(self.conv1(x)))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


class InceptionA(nn.Module):
    def __init__(self, cin, pool_features, div):
        super().__init__()
        w64, w48, w96 = width(64, div), width(48, div), width(96, div)
        self.branch1x1 = BasicConv2d(cin, w64, kernel_size=1)
        self.branch5x5_1 = BasicConv2d(cin, w48, kernel_size=1)
        self.branch5x5_2 = BasicConv2d(w48, w64, kernel_size=5, padding=2)
        self.branch3x3dbl_1 = BasicConv2d(cin, w64, kernel_size=1)
        self.branch3x3dbl_2 = BasicConv2d(w64, w96, kernel_size=3, padding=1)
        self.branch3x3dbl_3 = BasicConv2d(w96, w96, kernel_size=3, padding=1)
        self.branch_pool = BasicConv2d(cin, width(pool_features, div), kernel_size=1)

    def forward(self, x):
        return torch.cat([self.branch1x1(x), self.branch5x5_2(self.branch5x5_1(x)),
                          self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x))),
                          self.branch_pool(F.avg_pool2d(x, 3, stride=1, padding=1))], 1)


class InceptionB(nn.Module):
    def __init__(self, cin, div):
        super().__init__()
        w64, w96 = width(64, div), width(96, div)
        self.branch3x3 = BasicConv2d(cin, width(384, div), kernel_size=3, stride=2)
        self.branch3x3dbl_1 = BasicConv2d(cin, w64, kernel_size=1)
        self.branch3x3dbl_2 = BasicConv2d(w64, w96, kernel_size=3, padding=1)
        self.branch3x3dbl_3 = BasicConv2d(w96, w96, kernel_size=3, stride=2)

    def forward(self, x):
        return torch.cat([self.branch3x3(x),
                          self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x))),
                          F.max_pool2d(x, 3, stride=2)], 1)


class InceptionC(nn.Module):
    def __init__(self, cin, c7, div):
        super().__init__()
        w192, w7 = width(192, div), width(c7, div)
        self.branch1x1 = BasicConv2d(cin, w192, kernel_size=1)
        self.branch7x7 = nn.Sequential(
            BasicConv2d(cin, w7, kernel_size=1),
            BasicConv2d(w7, w7, kernel_size=(1, 7), padding=(0, 3)),
            BasicConv2d(w7, w192, kernel_size=(7, 1), padding=(3, 0)))
        self.branch7x7dbl = nn.Sequential(
            BasicConv2d(cin, w7, kernel_size=1),
            BasicConv2d(w7, w7, kernel_size=(7, 1), padding=(3, 0)),
            BasicConv2d(w7, w7, kernel_size=(1, 7), padding=(0, 3)),
            BasicConv2d(w7, w7, kernel_size=(7, 1), padding=(3, 0)),
            BasicConv2d(w7, w192, kernel_size=(1, 7), padding=(0, 3)))
        self.branch_pool = BasicConv2d(cin, w192, kernel_size=1)

    def forward(self, x):
        return torch.cat([self.branch1x1(x), self.branch7x7(x), self.branch7x7dbl(x),
                          self.branch_pool(F.avg_pool2d(x, 3, stride=1, padding=1))], 1)


class InceptionD(nn.Module):
    def __init__(self, cin, div):
        super().__init__()
        w192, w320 = width(192, div), width(320, div)
        self.branch3x3 = nn.Sequential(BasicConv2d(cin, w192, kernel_size=1),
                                       BasicConv2d(w192, w320, kernel_size=3, stride=2))
        self.branch7x7x3 = nn.Sequential(
            BasicConv2d(cin, w192, kernel_size=1),
            BasicConv2d(w192, w192, kernel_size=(1, 7), padding=(0, 3)),
            BasicConv2d(w192, w192, kernel_size=(7, 1), padding=(3, 0)),
            BasicConv2d(w192, w192, kernel_size=3, stride=2))

    def forward(self, x):
        return torch.cat([self.branch3x3(x), self.branch7x7x3(x), F.max_pool2d(x, 3, stride=2)],
                         1)


class InceptionE(nn.Module):
    def __init__(self, cin, div):
        super().__init__()
        w384, w448 = width(384, div), width(448, div)
        self.branch1x1 = BasicConv2d(cin, width(320, div), kernel_size=1)
        self.branch3x3_1 = BasicConv2d(cin, w384, kernel_size=1)
        self.branch3x3_2a = BasicConv2d(w384, w384, kernel_size=(1, 3), padding=(0, 1))
        self.branch3x3_2b = BasicConv2d(w384, w384, kernel_size=(3, 1), padding=(1, 0))
        self.branch3x3dbl_1 = BasicConv2d(cin, w448, kernel_size=1)
        self.branch3x3dbl_2 = BasicConv2d(w448, w384, kernel_size=3, padding=1)
        self.branch3x3dbl_3a = BasicConv2d(w384, w384, kernel_size=(1, 3), padding=(0, 1))
        self.branch3x3dbl_3b = BasicConv2d(w384, w384, kernel_size=(3, 1), padding=(1, 0))
        self.branch_pool = BasicConv2d(cin, width(192, div), kernel_size=1)

    def forward(self, x):
        a = self.branch3x3_1(x)
        d = self.branch3x3dbl_2(self.branch3x3dbl_1(x))
        return torch.cat([self.branch1x1(x), self.branch3x3_2a(a), self.branch3x3_2b(a),
                          self.branch3x3dbl_3a(d), self.branch3x3dbl_3b(d),
                          self.branch_pool(F.avg_pool2d(x, 3, stride=1, padding=1))], 1)


class Inception3Small(nn.Module):
    """torchvision's Inception-V3 (no aux logits) with workloads/models/inceptionv3.c's small arch:
    every width ÷ div (4), the stem's 3x3 convs 1a, 2a and 4a with stride 1 and padding 1."""

    def __init__(self, num_classes=200, div=4):
        super().__init__()
        w = [width(v, div) for v in (32, 32, 64, 80, 192)]
        self.stem = nn.Sequential(
            BasicConv2d(3, w[0], kernel_size=3, stride=1, padding=1),
            BasicConv2d(w[0], w[1], kernel_size=3, padding=1),
            BasicConv2d(w[1], w[2], kernel_size=3, padding=1),
            nn.MaxPool2d(kernel_size=3, stride=2),
            BasicConv2d(w[2], w[3], kernel_size=1),
            BasicConv2d(w[3], w[4], kernel_size=3, padding=1),
            nn.MaxPool2d(kernel_size=3, stride=2))
        mods, c = [], w[4]
        for pf in (32, 64, 64):
            mods.append(InceptionA(c, pf, div))
            c = 2 * width(64, div) + width(96, div) + width(pf, div)
        mods.append(InceptionB(c, div))
        c += width(384, div) + width(96, div)
        for c7 in (128, 160, 160, 192):
            mods.append(InceptionC(c, c7, div))
            c = 4 * width(192, div)
        mods.append(InceptionD(c, div))
        c += width(320, div) + width(192, div)
        for _ in range(2):
            mods.append(InceptionE(c, div))
            c = width(320, div) + 4 * width(384, div) + width(192, div)
        self.mixed = nn.Sequential(*mods)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.dropout = nn.Dropout(0.5)
        self.fc = nn.Linear(c, num_classes)

    def forward(self, x):
        x = self.dropout(self.avgpool(self.mixed(self.stem(x))))
        return self.fc(torch.flatten(x, 1))


class VGG16Small(fixtures_zoo.VGG16):
    """The CIFAR VGG-16-BN with workloads/models/vgg16.c's small arch: convs per group 1, 1, 2, 2, 2
    of 16 | 32 | 64 | 128 | 128 channels, Linear 128 -> 100."""

    CFG = [16, "M", 32, "M", 64, 64, "M", 128, 128, "M", 128, 128, "M"]

    def __init__(self, num_classes=100):
        super().__init__(num_classes)
        self.classifier = nn.Linear(128, num_classes)


class GoogLeNetSmall(nn.Module):
    """The CIFAR GoogLeNet with workloads/models/googlenet.c's small arch: every width ÷ 8, the
    modules a3 b3 | a4 b4 e4 | a5 b5 (fixtures_zoo's Inception module)."""

    WIDTHS = {"a3": (64, 96, 128, 16, 32, 32), "b3": (128, 128, 192, 32, 96, 64),
              "a4": (192, 96, 208, 16, 48, 64), "b4": (160, 112, 224, 24, 64, 64),
              "e4": (256, 160, 320, 32, 128, 128), "a5": (256, 160, 320, 32, 128, 128),
              "b5": (384, 192, 384, 48, 128, 128)}
    ORDER = ["a3", "b3", "M", "a4", "b4", "e4", "M", "a5", "b5"]

    def __init__(self, num_classes=100, div=8):
        super().__init__()
        c = width(192, div)
        layers = list(fixtures_zoo.conv_bn_relu(3, c, 3))
        for name in self.ORDER:
            if name == "M":
                layers.append(nn.MaxPool2d(3, stride=2, padding=1))
                continue
            w = [width(v, div) for v in self.WIDTHS[name]]
            layers.append(fixtures_zoo.Inception(c, *w))
            c = w[0] + w[2] + w[4] + w[5]
        layers.append(nn.AvgPool2d(8, stride=1))
        self.features = nn.Sequential(*layers)
        self.linear = nn.Linear(c, num_classes)

    def forward(self, x):
        return self.linear(self.features(x).view(x.size(0), -1))


def small_model(name):
    """The `small` preset of zoo model `name` (workloads/*.c's small arch)."""
    return {
        "alexnet": AlexNetSmall,
        "resnet101": ResNetSmall,
        "inceptionv3": Inception3Small,
        "vgg16": VGG16Small,
        "googlenet": GoogLeNetSmall,
        "densenet121": lambda: fixtures_zoo.DenseNet121(growth=8, blocks=(2, 4, 6, 4)),
    }[name]()


_paper = {}


def paper_model(name):
    """The `paper` preset of zoo model `name`: fixtures_zoo.models()'s definition."""
    if not _paper:
        _paper.update((k, v[0]) for k, v in fixtures_zoo.models().items())
    return _paper.pop(name)


def define(model, preset, n, side, classes, smoothing):
    if preset == "paper":
        net = paper_model(model)
    elif preset == "small":
        net = small_model(model)
    else:
        raise ValueError("no preset '%s'" % preset)
    return sgd_step(net, n, 3, side, side, classes, smoothing)


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
                n, side, classes = (int(v) for v in f[4:7])
                cases[f[1]], params = define(f[2], f[3], n, side, classes, float(f[7]))
                print("ok %d" % params, flush=True)
            except (KeyError, ValueError, RuntimeError, IndexError) as err:
                print("error %s" % str(err).replace("\n", " "), flush=True)
            continue
        if f[0] == "drop":
            cases.pop(f[1], None)
            print("ok", flush=True)
            continue
        threads, warmup, reps = (int(v) for v in f[2:5])
        print("%.9g" % median_step_time(cases[f[1]], threads, warmup, reps), flush=True)


if __name__ == "__main__":
    main()
