# bench/torch_peer.py — the first line each PyTorch script of bench/ answers (bench_torch.h,
# bench_peers.h): what this interpreter's torch is and computes with, as torch itself reports it
# (its build configuration, not numpy's), on PyTorch 1.13 and 2.x alike:
#   torch VERSION blas BLAS_INFO[ LIBRARY] [mkl MKL_VERSION] onednn VERSION|off cpu CAPABILITY
#   threads N
# LIBRARY: the BLAS library this process mapped, where torch calls a shared one (Debian's
# "generic": whatever libblas.so.3 LD_LIBRARY_PATH or the alternatives give); MKL is linked into
# PyPI's builds, so none is mapped then. N: torch.get_num_threads() before any request sets it.
import os
import re

import torch


def blas_library():
    """The BLAS this process mapped: its libblas or libopenblas, else any library with "blas"
    in its path (OpenBLAS's liblapack.so.3 sits in the same folder); CUDA's cuBLAS is not torch's
    CPU BLAS and is skipped. None when none is mapped."""
    with open("/proc/self/maps") as maps:
        paths = [line.split()[-1] for line in maps
                 if "blas" in line and "cublas" not in line.split()[-1]]
    named = [p for p in paths if os.path.basename(p).startswith(("libblas", "libopenblas"))]
    return (named or paths or [None])[0]


def build_setting(config, name):
    """A NAME=value of torch.__config__.show()'s "Build settings", None when absent."""
    m = re.search(r"\b%s=([^,\s]+)" % name, config)
    return m.group(1) if m else None


def describe():
    """The line above, from torch.__config__.show() and torch.backends."""
    config = torch.__config__.show()
    blas = build_setting(config, "BLAS_INFO") or "unknown"
    library = blas_library()
    parts = ["torch", torch.__version__, "blas", blas]
    if library and blas != "mkl":
        parts.append(library)
    mkl = re.search(r"Math Kernel Library Version ([0-9.]+)", config)
    if torch.backends.mkl.is_available():
        parts += ["mkl", mkl.group(1) if mkl else "yes"]
    onednn = re.search(r"MKL-DNN v(\S+)", config)
    parts += ["onednn", (onednn.group(1) if onednn else "yes")
              if torch.backends.mkldnn.is_available() else "off"]
    cpu = re.search(r"CPU capability usage: (\S+)", config)
    parts += ["cpu", cpu.group(1) if cpu else "unknown", "threads", str(torch.get_num_threads())]
    return " ".join(parts)
