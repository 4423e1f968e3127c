# scripts/gpu-lib.sh — what scripts/gpu-bundle and scripts/gpu-check share (sourced by both):
# where the bundle lies, the fingerprint of the sources it was built from, and the CUDA
# libraries a bundle leaves to the GPU machine.

# the bundle scripts/gpu-bundle writes and scripts/gpu-check reads (ignored by git; carry it
# to the GPU machine)
PB_GPU_BUNDLE=.gpu-bundle/pipebench-gpu.tar.xz

# The libraries a bundle never holds, as patterns of their file names: the C and C++
# runtimes every machine has, and the driver and the CUDA libraries the GPU machine brings
# (cuBLAS and cuBLASLt, cuDNN's, NCCL), which are too large to carry (cuDNN's engines alone
# are 250 MB) and must match its driver anyway; the bundle's MANIFEST names the latter.
PB_GPU_RUNTIME_LIBS='^(ld-linux-x86-64|libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s)\.so'
PB_GPU_MACHINE_LIBS='^(libcuda|libcublas|libcublasLt|libcudnn[a-z_]*|libnccl)\.so'

# pb_sources_hash: a SHA-256 over the sources the bundle's programs are built from (C, CUDA,
# SQL, the build files, the gnuplot scripts and kits they read), from the repository root,
# by path and content; the same tree gives the same hash with or without a .git folder
pb_sources_hash() {
    LC_ALL=C find meson.build meson_options.txt harness schedules predictors workloads \
        results plots bench tests/meson.build tests/compute tests/support experiments -type f \
        \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' -o -name '*.sql' \
        -o -name meson.build -o -name meson_options.txt -o -name '*.gp' -o -name '*.ini' \) \
        -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16
}
