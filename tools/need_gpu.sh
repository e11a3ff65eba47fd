#!/usr/bin/env bash
# need_gpu.sh TARGET [WHAT [DONE]]: exit 0 if this machine has a CUDA GPU
# the programs can use, else one short line saying so and exit 3: what was
# done already (DONE, e.g. "step3_idle compiled; grading it"), that TARGET
# needs a GPU, and what it would run on one (WHAT), or else where to find
# what works without one. Make's GPU targets run it before they measure
# anything; make prints the line as its one error line.
# need_gpu.sh --without-gpu: that last list alone, the one list of the make
# targets that need no GPU (README.md's "Without a GPU these work" sentence
# repeats it, and tests/cli_tests.sh compares the two).
set -u
WITHOUT_GPU="make, make stepK, make test, make diff, make new, make docs, make plot, make publish, make diagrams,"
WITHOUT_GPU="$WITHOUT_GPU make ptxas, make mutants, make cuda12, make variance, make bf16-sum, make tolerances,"
WITHOUT_GPU="$WITHOUT_GPU make multigpu (where NCCL is found)"
if [ "${1:-}" = --without-gpu ]; then
    echo "$WITHOUT_GPU"
    exit 0
fi
target=${1:-this target}
what=${2:-}
done=${3:-}
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
# Short: the list above is make help's and the README's, not this line's.
# No full stop: make's $(error) adds its own.
line="make ${target}: ${done:+$done }needs a CUDA GPU and this machine has none ($why)"
if [ -n "$what" ]; then echo "$line; on one it runs $what"
else echo "$line; make help lists what works without one"; fi
exit 3
