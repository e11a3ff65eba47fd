#!/usr/bin/env bash
# need_gpu.sh TARGET: exit 0 if this machine has a CUDA GPU the programs can
# use, else one line saying so and exit 3. Make's GPU targets run it before
# they build or measure anything.
set -u
target=${1:-this target}
# The driver's library is what every program loads first (common/device.c).
if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1' || ls /usr/lib*/*/libcuda.so.1 /usr/lib*/libcuda.so.1 \
        /usr/local/nvidia/lib*/libcuda.so.1 >/dev/null 2>&1; then
    if ! command -v nvidia-smi >/dev/null 2>&1 || nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
        exit 0
    fi
    why="nvidia-smi lists no GPU"
else
    why="no NVIDIA driver, libcuda.so.1 not found"
fi
echo "make ${target}: needs a CUDA GPU and this machine has none ($why). Without one: make, make test, make diff, make new, make docs, make plot, make diagrams"
exit 3
