#!/usr/bin/env bash
# cuda12.sh [LOG]: build every program of the repository with a CUDA 12
# toolkit that this script puts together in a throwaway prefix under
# build/cuda12/, and write what was built with what to LOG (default
# build/cuda12/build.log). Needs no GPU and changes nothing outside build/.
#
# Why: the README says the programs build with CUDA 12 or 13, and the
# machines here carry CUDA 13 only. The sources are copied to
# build/cuda12/tree/ (the normal build is left alone) and `make` runs there
# with the prefix's nvcc and the Makefile's default fat binary (machine code
# for sm_75, sm_80 and sm_90 plus PTX), on every program `make test` builds:
# the steps, baseline_cub, part 2's rows/*, extras/*, tests/broken/* and
# the mutants.
#
# Where the CUDA 12 toolkit comes from, CUDA12_TOOLKIT=
#   debian (default)  a complete, real CUDA 12 toolkit from Debian 13
#       (trixie) non-free: nvidia-cuda-toolkit (nvcc 12.4.131 with its cicc,
#       cudafe++, ptxas, fatbinary and nvlink), nvidia-cuda-dev (the headers
#       and the static runtime) and libcub-dev, libthrust-dev, libcu++-dev
#       (CCCL 2.3.2), fetched with apt-get download into a private apt
#       state (the system's sources and packages are not touched) and
#       unpacked with dpkg-deb. About 1 GB to fetch once: nvidia-cuda-dev
#       alone is 934 MB, and it is the only package that has CUDA 12.4's
#       libcudadevrt.a and libcudart_static.a.
#   pypi  CUDA 12.9's wheels from PyPI: nvidia-cuda-runtime-cu12 (headers,
#       static runtime), nvidia-cuda-cccl-cu12 (CUB, Thrust, libcu++: CCCL
#       2.8.2) and nvidia-cuda-nvcc-cu12. That last wheel carries ptxas,
#       libnvvm and the crt/ headers but no compiler driver (no nvcc, cicc,
#       cudafe++, fatbinary or nvlink), so unless a wheel ever brings them,
#       the compiler and its crt/ headers are borrowed from the CUDA 13
#       toolkit (CUDA13_HOME, default: the one of the nvcc on PATH). That
#       checks CUDA 12.9's headers, CCCL and runtime, not an nvcc 12.9; the
#       log and its last line name the compiler that was used.
# What was fetched is kept and not fetched again: CUDA12_REFRESH=1 fetches
# anew. CUDA12_JOBS sets make's -j (default: the number of cores).
#
# Exit status: 0 every program built; 1 some did not (LOG gives each one's
# first error); 2 usage or setup failure (one line on stderr says why).
set -u

usage() {
    echo "usage: tools/cuda12.sh [LOG]   (default LOG: build/cuda12/build.log;" \
         "CUDA12_TOOLKIT=debian|pypi, default debian)"
}
die() { echo "cuda12: $*" >&2; exit 2; }

case "${1:-}" in
    -h|--help) usage; exit 0 ;;
    -*) usage >&2; exit 2 ;;
esac
[ $# -le 1 ] || { usage >&2; exit 2; }

log=${1:-build/cuda12/build.log}
case $log in /*) ;; *) log=$PWD/$log ;; esac
root=$(cd "$(dirname "$0")/.." && pwd) || die "cannot find the repository root"
cd "$root" || die "cannot enter $root"
mode=${CUDA12_TOOLKIT:-debian}
case $mode in
    debian|pypi) ;;
    *) die "CUDA12_TOOLKIT=$mode: give debian or pypi" ;;
esac
[ "$(uname -m)" = x86_64 ] || die "the toolkit packages used here are x86_64 builds; this is $(uname -m)"
for tool in git make gcc python3 tar; do
    command -v "$tool" >/dev/null || die "$tool not found"
done
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || die "$root is not a git work tree"
mkdir -p "$(dirname "$log")" || die "cannot create the folder of $log"

work=$root/build/cuda12
prefix=$work/$mode/prefix
refresh=${CUDA12_REFRESH:-0}
rel() { echo "${1#"$root"/}"; }

# ------------------------------------------------------------ the toolkits
# nvcc reads nvcc.profile beside the nvcc it was started as (a symlink
# counts as that place): the prefix's own headers and libraries, nothing else.
write_profile() {
    cat > "$prefix/bin/nvcc.profile" <<'EOF'
TOP              = $(_HERE_)/..
CICC_PATH        = $(TOP)/nvvm/bin
NVVMIR_LIBRARY_DIR = $(TOP)/nvvm/libdevice
LD_LIBRARY_PATH += $(TOP)/lib64:
PATH            += $(CICC_PATH):$(_HERE_):
INCLUDES        +=  "-I$(TOP)/include" $(_SPACE_)
LIBRARIES        =+ $(_SPACE_) "-L$(TOP)/lib64"
CUDAFE_FLAGS    +=
PTXAS_FLAGS     +=
EOF
}

# link TARGET NAME: NAME -> TARGET, which must exist.
link() {
    [ -e "$1" ] || die "$mode: the toolkit lacks $(rel "$1")"
    ln -sfn "$1" "$2" || die "cannot link $(rel "$2")"
}

DEB_SUITE=trixie
DEB_PACKAGES="nvidia-cuda-toolkit nvidia-cuda-dev libcub-dev libthrust-dev libcu++-dev"
DEB_LIBS="libcudadevrt.a libcudart_static.a libculibos.a"

fetch_debian() {
    local d=$work/debian apt=$work/debian/apt
    command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null ||
        die "debian: apt-get and dpkg-deb are needed (or CUDA12_TOOLKIT=pypi)"
    # Debian's own mirror, as this system's apt is set up to use it.
    local mirror
    mirror=$(apt-get indextargets --format '$(REPO_URI)|$(LABEL)' 2>/dev/null |
             awk -F'|' '$2 == "Debian" { print $1; exit }')
    [ -n "$mirror" ] || die "debian: no Debian source in this system's apt setup (run apt-get update first)"
    rm -rf "$d/root" "$d/debs" "$apt" "$d/stamp"
    mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/parts" "$d/debs" "$d/root" ||
        die "cannot create $(rel "$d")"
    echo "deb $mirror $DEB_SUITE main contrib non-free" > "$apt/sources.list"
    : > "$apt/status"
    local opts=(-q -o "Dir::Etc::SourceList=$apt/sources.list" -o "Dir::Etc::SourceParts=$apt/parts"
                -o "Dir::Etc::Preferences=$apt/none" -o "Dir::Etc::PreferencesParts=$apt/parts"
                -o "Dir::State::Lists=$apt/lists" -o "Dir::State::Status=$apt/status"
                -o "Dir::Cache=$apt/cache" -o "APT::Architectures=amd64"
                -o "Acquire::Languages=none" -o "APT::Sandbox::User=$(id -un)")
    echo "cuda12: fetching $DEB_PACKAGES ($DEB_SUITE) with apt-get download"
    apt-get "${opts[@]}" update > "$d/apt.log" 2>&1 ||
        die "debian: apt-get update for $DEB_SUITE failed (see $(rel "$d")/apt.log)"
    # shellcheck disable=SC2086
    (cd "$d/debs" && apt-get "${opts[@]}" download $DEB_PACKAGES) >> "$d/apt.log" 2>&1 ||
        die "debian: apt-get download failed (see $(rel "$d")/apt.log)"
    local multiarch bytes=0 deb name
    multiarch=$(gcc -print-multiarch)
    [ -n "$multiarch" ] || die "gcc -print-multiarch printed nothing"
    : > "$d/versions"
    for deb in "$d"/debs/*.deb; do
        name=$(dpkg-deb -f "$deb" Package)
        echo "$name $(dpkg-deb -f "$deb" Version)" >> "$d/versions"
        bytes=$((bytes + $(stat -c %s "$deb")))
        if [ "$name" = nvidia-cuda-dev ]; then
            # Only the headers and the three static libraries nvcc links.
            local members=(./usr/include)
            for lib in $DEB_LIBS; do members+=("./usr/lib/$multiarch/$lib"); done
            dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$d/root" "${members[@]}"
            [ "${PIPESTATUS[0]}${PIPESTATUS[1]}" = 00 ] || die "debian: unpacking $(basename "$deb") failed"
        else
            dpkg-deb -x "$deb" "$d/root" || die "debian: unpacking $(basename "$deb") failed"
        fi
    done
    for name in $DEB_PACKAGES; do
        grep -q "^$name " "$d/versions" || die "debian: apt-get download brought no $name"
    done
    rm -rf "$d/debs" "$apt/cache"   # 1 GB of .deb files, all unpacked now
    { echo "suite $DEB_SUITE"; echo "multiarch $multiarch"; echo "bytes $bytes"; } > "$d/stamp"
}

setup_debian() {
    local d=$work/debian
    if [ "$refresh" = 1 ] || [ ! -f "$d/stamp" ] || ! grep -qx "suite $DEB_SUITE" "$d/stamp"; then
        fetch_debian
        fetched=yes
    fi
    local t=$d/root/usr/lib/nvidia-cuda-toolkit multiarch
    multiarch=$(awk '$1 == "multiarch" { print $2 }' "$d/stamp")
    download_bytes=$(awk '$1 == "bytes" { print $2 }' "$d/stamp")
    rm -rf "$prefix"
    mkdir -p "$prefix/bin" "$prefix/nvvm/bin" "$prefix/lib64" || die "cannot create $(rel "$prefix")"
    link "$t/bin/nvcc" "$prefix/bin/nvcc"
    link "$t/bin/crt" "$prefix/bin/crt"
    for tool in cudafe++ fatbinary nvlink ptxas bin2c; do
        link "$d/root/usr/bin/$tool" "$prefix/bin/$tool"
    done
    link "$t/bin/cicc" "$prefix/nvvm/bin/cicc"
    link "$t/libdevice" "$prefix/nvvm/libdevice"
    link "$d/root/usr/include" "$prefix/include"
    for lib in $DEB_LIBS; do
        link "$d/root/usr/lib/$multiarch/$lib" "$prefix/lib64/$lib"
    done
    write_profile
    packages=$(sed 's/ /=/' "$d/versions" | paste -sd ' ')
    source_line="Debian $DEB_SUITE: $packages"
    compiler_line="the toolkit's own (nvidia-cuda-toolkit)"
}

# The latest 12.9 releases on PyPI (pip index versions NAME).
PYPI_WHEELS="nvidia-cuda-nvcc-cu12==12.9.86 nvidia-cuda-runtime-cu12==12.9.79 nvidia-cuda-cccl-cu12==12.9.27"

fetch_pypi() {
    local d=$work/pypi
    rm -rf "$d/wheels" "$d/root" "$d/stamp"
    mkdir -p "$d/wheels" || die "cannot create $(rel "$d")"
    echo "cuda12: fetching $PYPI_WHEELS with pip"
    # shellcheck disable=SC2086
    python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
        -d "$d/wheels" $PYPI_WHEELS > "$d/pip.log" 2>&1 ||
        die "pypi: pip download failed (see $(rel "$d")/pip.log)"
    python3 -m pip install -q --disable-pip-version-check --no-deps --no-index \
        --target "$d/root" "$d"/wheels/*.whl >> "$d/pip.log" 2>&1 ||
        die "pypi: pip install --target failed (see $(rel "$d")/pip.log)"
    echo "$PYPI_WHEELS" > "$d/stamp"
}

setup_pypi() {
    local d=$work/pypi
    if [ "$refresh" = 1 ] || [ "$(cat "$d/stamp" 2>/dev/null)" != "$PYPI_WHEELS" ]; then
        fetch_pypi
        fetched=yes
    fi
    download_bytes=$(du -cb "$d"/wheels/*.whl | awk 'END { print $1 }')
    local w=$d/root/nvidia c crt
    # The compiler: the wheel's, where it has one; else CUDA 13's.
    if [ -x "$w/cuda_nvcc/bin/nvcc" ] && [ -x "$w/cuda_nvcc/bin/cudafe++" ] &&
       [ -x "$w/cuda_nvcc/nvvm/bin/cicc" ]; then
        c=$w/cuda_nvcc
        crt=$c/include/crt
        compiler_line="the nvidia-cuda-nvcc-cu12 wheel's own"
    else
        c=${CUDA13_HOME:-}
        if [ -z "$c" ]; then
            c=$(command -v nvcc || true)
            [ -n "$c" ] || c=/usr/local/cuda/bin/nvcc
            c=$(dirname "$(dirname "$(readlink -f "$c")")")
        fi
        [ -x "$c/bin/nvcc" ] ||
            die "pypi: the cu12 nvcc wheel has no nvcc, and there is no CUDA 13 compiler to borrow at $c (set CUDA13_HOME)"
        crt=$c/include/crt
        [ -d "$crt" ] || crt=$c/targets/x86_64-linux/include/crt
        compiler_line="borrowed from $c: the cu12 nvcc wheel has no nvcc, cicc, cudafe++, fatbinary or nvlink"
    fi
    rm -rf "$prefix"
    mkdir -p "$prefix/bin" "$prefix/nvvm/bin" "$prefix/include" "$prefix/lib64" ||
        die "cannot create $(rel "$prefix")"
    for tool in nvcc cudafe++ fatbinary nvlink ptxas crt; do
        link "$c/bin/$tool" "$prefix/bin/$tool"
    done
    [ -e "$c/bin/bin2c" ] && link "$c/bin/bin2c" "$prefix/bin/bin2c"
    link "$c/nvvm/bin/cicc" "$prefix/nvvm/bin/cicc"
    link "$c/nvvm/libdevice" "$prefix/nvvm/libdevice"
    # CUDA 12.9's headers; crt/ belongs to the compiler (its launch stubs
    # must match cudafe++'s), so it comes with the compiler.
    cp -r "$w/cuda_runtime/include/." "$w/cuda_cccl/include/." "$w/cuda_nvcc/include/." \
        "$prefix/include/" || die "cannot copy the wheels' headers"
    rm -rf "$prefix/include/crt" "$prefix/include/__init__.py" "$prefix/include/__pycache__"
    link "$crt" "$prefix/include/crt"
    cp "$w"/cuda_runtime/lib/*.a "$prefix/lib64/" || die "the runtime wheel has no static libraries"
    write_profile
    packages=${PYPI_WHEELS// /, }
    source_line="PyPI: $packages"
}

fetched=no
download_bytes=0
"setup_$mode"

nvcc=$prefix/bin/nvcc
nvcc_line=$("$nvcc" --version 2>/dev/null | grep 'Cuda compilation tools')
[ -n "$nvcc_line" ] ||
    die "$(rel "$nvcc") does not run (CUDA12_REFRESH=1 fetches the toolkit anew)"
nvcc_version=${nvcc_line##*V}
echo "cuda12: nvcc: $nvcc_line"

cccl=$(grep -rhs '^#define CCCL_VERSION [0-9]' "$prefix/include/cuda/" | awk '{ print $3; exit }')
cub=$(awk '/^#define CUB_VERSION [0-9]/ { print $3; exit }' "$prefix/include/cub/version.cuh" 2>/dev/null)
[ -n "$cccl" ] && [ -n "$cub" ] || die "$mode: no CCCL_VERSION or CUB_VERSION in $(rel "$prefix")/include"
cccl_line="$((cccl / 1000000)).$((cccl / 1000 % 1000)).$((cccl % 1000)) (CCCL_VERSION $cccl, CUB_VERSION $cub)"

# ---------------------------------------------------------------- the tree
# Tracked and untracked-but-not-ignored files as they are now; no built
# program (rows/*/run may be committed): make builds every one afresh.
tree=$work/tree
rm -rf "$tree"
mkdir -p "$tree" || die "cannot create $(rel "$tree")"
git ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' f; do
        [ -f "$f" ] || continue
        case /$f in */run) continue ;; esac
        printf '%s\0' "$f"
    done | tar --null -T - -cf - | tar -xf - -C "$tree" || die "copying the sources to $(rel "$tree") failed"
rev=$(git describe --always --dirty --abbrev=7 2>/dev/null || echo unknown)

# The prefix's bin/ first on PATH: no other toolkit's nvcc or ptxas is
# found before it (nvcc itself puts its own folder first for the rest).
# ARCH= (empty) keeps the Makefile's fat binary even where a GPU is present.
# Run from `make cuda12`, the outer make's flags and variables stay out.
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES
make_vars=(NVCC="$nvcc" CUDA_HOME="$prefix" ARCH= GIT_REV="$rev")
run_make() { (cd "$tree" && PATH="$prefix/bin:$PATH" make --no-print-directory "${make_vars[@]}" "$@"); }

# The program list and the target code, from the Makefile itself.
query=$(printf 'cuda12-query:\n\t@echo $(PROGRAMS) $(ROW_PROGRAMS) $(EXTRA_PROGRAMS) $(BROKEN) $(MUTANTS)\n\t@echo $(GENCODE)\n' |
        run_make -f Makefile -f - cuda12-query 2>/dev/null)
programs=$(echo "$query" | sed -n 1p)
gencode=$(echo "$query" | sed -n 2p)
[ -n "$programs" ] && [ -n "$gencode" ] || die "the Makefile listed no programs (make -f Makefile -f - failed)"

# Where the compiler really finds its headers: inside the prefix, or the
# check proves nothing.
printf '#include <cuda_runtime_api.h>\n#include <cub/version.cuh>\n#include <cuda/std/version>\n' > "$tree/cuda12-probe.cu"
deps=$(cd "$tree" && PATH="$prefix/bin:$PATH" "$nvcc" -std=c++17 -M cuda12-probe.cu 2>&1) ||
    die "$(rel "$nvcc") cannot compile a file that includes cuda_runtime_api.h, cub/version.cuh and cuda/std/version: $(echo "$deps" | grep -m1 error)"
rm -f "$tree/cuda12-probe.cu"
headers_line=
for h in cuda_runtime_api.h cub/version.cuh crt/host_config.h; do
    # shellcheck disable=SC2086
    path=$(printf '%s\n' $deps | grep -m1 "/$h\$")
    [ -n "$path" ] || die "nvcc -M names no $h"
    real=$(readlink -f "$path")
    case $real in
        "$work"/*) real=$(rel "$real") ;;
        *) [ "$h" = crt/host_config.h ] && [ "$mode" = pypi ] ||
               die "$h comes from $real, outside the prefix" ;;
    esac
    headers_line="${headers_line:+$headers_line, }$h from $real"
done

# ---------------------------------------------------------------- the build
jobs=${CUDA12_JOBS:-$(nproc 2>/dev/null || echo 2)}
echo "cuda12: building $(echo "$programs" | wc -w) programs in $(rel "$tree") (make -j$jobs)"
start=$(date +%s)
# shellcheck disable=SC2086
run_make -k -j"$jobs" $programs > "$work/make.log" 2>&1
seconds=$(($(date +%s) - start))

built=0
failed=0
lines=
for p in $programs; do
    if [ -x "$tree/$p" ]; then
        built=$((built + 1))
        lines+="ok    $p"$'\n'
    else
        failed=$((failed + 1))
        # Again on its own, so that its first error is its own.
        out=$(run_make "$p" 2>&1)
        first=$(echo "$out" | grep -m1 -E 'error|fatal')
        [ -n "$first" ] || first=$(echo "$out" | grep -v '^make' | tail -n 1)
        lines+="FAIL  $p: ${first//$tree\//}"$'\n'
    fi
done

if [ "$fetched" = yes ]; then fetch_note="fetched now"; else fetch_note="cached, not fetched again"; fi
{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "revision: $rev"
    echo "nvcc: $nvcc_line"
    echo "cccl: $cccl_line"
    echo "gcc: $(gcc --version | head -n 1)"
    echo "toolkit ($mode): $source_line; $((download_bytes / 1000000)) MB, $fetch_note"
    echo "compiler: $compiler_line"
    echo "headers: $headers_line"
    echo "arch: $gencode"
    echo "build: make -k -j$jobs in $(rel "$tree"), $seconds s; its output: $(rel "$work")/make.log"
    printf '%s' "$lines"
    if [ "$mode" = pypi ] && [ "${nvcc_version%%.*}" != 12 ]; then
        echo "cuda12: $built programs built with nvcc $nvcc_version on CUDA 12.9's headers and libraries, $failed failed"
    else
        echo "cuda12: $built programs built with nvcc $nvcc_version, $failed failed"
    fi
} > "$log.tmp" && mv -f "$log.tmp" "$log" || die "cannot write $log"

tail -n 1 "$log"
echo "cuda12: log in $(rel "$log") ($seconds s of build)"
[ "$failed" -eq 0 ] || exit 1
exit 0
