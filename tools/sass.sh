#!/usr/bin/env bash
# sass.sh OUT STEP_DIR...: the sm_90 machine code of every step's kernel, for
# reading the loops the step READMEs count. Needs nvcc and cuobjdump, no GPU.
# Each step gets its listing and, for every backward branch (a loop), the
# number of instructions from the branch target to the branch.
set -u
out=${1:?usage: sass.sh OUT STEP_DIR...}; shift
nvcc=${NVCC:-nvcc}
cuobjdump=$(command -v cuobjdump || ls "$(dirname "$(command -v "$nvcc")")/cuobjdump" 2>/dev/null)
if [ -z "$cuobjdump" ]; then
    echo "sass: cuobjdump not found (it and nvdisasm ship with the CUDA toolkit: add its bin/ to PATH;" \
         "or pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm and add their nvidia/cu13/bin)" >&2
    exit 3
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{
    echo "# SASS of reduce_kernel per step: nvcc -O3 -arch=sm_90 ($("$nvcc" --version | tail -n 1)), revision ${GIT_REV:-unknown}"
    for d in "$@"; do
        "$nvcc" -O3 -std=c++17 -arch=sm_90 -Icommon -cubin -o "$tmp/k.cubin" "$d/reduce.cu" || exit 2
        "$cuobjdump" -sass "$tmp/k.cubin" | grep -E '^\s+/\*[0-9a-f]{4}\*/' \
            | sed -E 's#^\s+/\*([0-9a-f]{4})\*/\s+#\1  #; s#\s*/\* 0x[0-9a-f]+ \*/\s*$##; s#\s+$##' > "$tmp/k.txt"
        echo
        echo "== $d"
        # A conditional branch to a lower address closes a loop.
        awk 'function hex(h,   i, v) { v = 0; sub(/^0x/, "", h); h = tolower(h)
                                         for (i = 1; i <= length(h); i++)
                                             v = v * 16 + index("0123456789abcdef", substr(h, i, 1)) - 1
                                         return v }
             /@!?P[0-9] BRA 0x/ { addr = hex($1); for (i = 1; i < NF; i++) if ($i == "BRA") t = $(i + 1)
                                  sub(/;$/, "", t); t = hex(t)
                                  if (t < addr)
                                      printf "loop: 0x%04x -> 0x%04x, %d instructions\n", addr, t, (addr - t) / 16 + 1 }' "$tmp/k.txt"
        cat "$tmp/k.txt"
    done
} > "$out"
echo "sass: wrote $out"
