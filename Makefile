# reduce-tutorial: one Makefile for every step, the CUB baseline, the tests,
# the benchmark, the plots and the profiler: the toolchain, the flags and the
# step lists here, each job's rules in mk/<job>.mk. `make help` lists the targets.

NVCC    ?= nvcc
CC      ?= gcc
PYTHON  ?= python3
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(shell command -v $(NVCC) 2>/dev/null))

# ARCH: the local GPU's (e.g. sm_90) when nvidia-smi sees one; otherwise a
# fat binary with machine code for sm_75, sm_80 and sm_90 plus PTX that newer
# GPUs compile at load. `make ARCH=sm_80` picks one yourself.
ARCH ?= $(shell nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null \
          | head -n 1 | grep -E '^[0-9]+\.[0-9]+$$' | sed 's/\.//; s/^/sm_/')
ifeq ($(strip $(ARCH)),)
GENCODE := -gencode arch=compute_75,code=sm_75 -gencode arch=compute_80,code=sm_80 \
           -gencode arch=compute_90,code=[sm_90,compute_90]
else
GENCODE := -arch=$(ARCH)
endif

# DEVICE=1 runs everything on the second GPU: the CUDA runtime, ncu and
# compute-sanitizer all honour CUDA_VISIBLE_DEVICES.
ifneq ($(strip $(DEVICE)),)
export CUDA_VISIBLE_DEVICES := $(DEVICE)
endif

# No fast-math: the tutorial's sums must be plain IEEE float adds.
# The _BASE flags go into every program's code hash (tools/code_hash.py),
# the target architecture does not: each results row names it (arch).
NVFLAGS_BASE := -O3 -lineinfo -std=c++17 -Icommon -Xcompiler -Wall,-Wextra
NVFLAGS := $(NVFLAGS_BASE) $(GENCODE)
CFLAGS_BASE := -O2 -std=c11 -Wall -Wextra -Wpedantic -Icommon
HASH_FLAGS := nvcc $(NVFLAGS_BASE) cc $(CFLAGS_BASE)
# OpenMP, where the C compiler has it, fills inputs and sums references on
# every core (the GPU work is the same either way, so it is not in the hash).
OPENMP ?= $(shell echo 'int main(void) { return 0; }' | $(CC) -fopenmp -x c - -o /dev/null \
            2>/dev/null && echo -fopenmp)
CFLAGS  := $(CFLAGS_BASE) $(if $(OPENMP),$(OPENMP),-Wno-unknown-pragmas) -I$(CUDA_HOME)/include
LDLIBS  := -ldl $(if $(OPENMP),-lgomp)

# The git revision goes into every CSV row; `-dirty` marks uncommitted changes.
# Where the tree travels without .git (a remote GPU), pass GIT_REV=... yourself.
GIT_REV ?= $(shell git describe --always --dirty --abbrev=7 2>/dev/null || echo unknown)

# Every stepN_slug/reduce.cu is a step, in numeric order (step10 after
# step9): a new directory needs no edit here.
STEP_DIRS := $(shell ls -d step[0-9]*_*/reduce.cu 2>/dev/null | sort -V | sed 's|/reduce.cu||')
PROGRAMS  := $(addsuffix /run,$(STEP_DIRS)) baseline_cub/run
ALIASES   := $(foreach d,$(STEP_DIRS),$(firstword $(subst _, ,$(d))))
COMMON_OBJ := build/device.o build/harness.o build/flush.o build/toolchain.o build/version.o
HARNESS   := build/driver.o $(COMMON_OBJ)
HEADERS   := $(wildcard common/*.h)
HASH_INPUTS := $(wildcard common/*.c common/*.cu common/*.h) tools/code_hash.py

# Part 2 (rows/): every rows/stepN_slug/rows.cu is a step of its own path,
# built on the same harness with the row contract (common/rows.h).
ROW_STEP_DIRS := $(shell ls -d rows/step[0-9]*_*/rows.cu 2>/dev/null | sort -V | sed 's|/rows.cu||')
ROW_PROGRAMS  := $(addsuffix /run,$(ROW_STEP_DIRS)) \
                 $(patsubst %/rows.cu,%/run,$(wildcard rows/baseline_*/rows.cu))
ROW_ALIASES   := $(foreach d,$(ROW_STEP_DIRS),rows/$(firstword $(subst _, ,$(notdir $(d)))))
ROWS_HARNESS  := build/rows_driver.o build/rows_ref.o $(COMMON_OBJ)

# Part 3 (back/): every back/stepN_slug/back.cu is a step of the backward
# pass, on its own harness with the backward contract (common/back.h), and
# back/baseline_copy3/back.cu its bar (dx = x + dy). Measured into a results
# file of its own (back/README.md): make bench times it when asked (ONLY=back);
# a plain make bench, the docs generator and the shipped lists leave it out.
BACK_STEP_DIRS := $(shell ls -d back/step[0-9]*_*/back.cu 2>/dev/null | sort -V | sed 's|/back.cu||')
BACK_PROGRAMS  := $(addsuffix /run,$(BACK_STEP_DIRS)) \
                  $(patsubst %/back.cu,%/run,$(wildcard back/baseline_*/back.cu))
BACK_ALIASES   := $(foreach d,$(BACK_STEP_DIRS),back/$(firstword $(subst _, ,$(notdir $(d)))))
# bfloat16's conversions and output bound are part 2's (common/rows_ref.c):
# linked, not copied.
BACK_HARNESS   := build/back_driver.o build/back_ref.o build/rows_ref.o $(COMMON_OBJ)

# matplotlib (and the pinned font of the Chinese charts, tools/chart_zh.py)
# from the system if they import, else from a local .venv (an absolute path, so scripts run from other directories find it too).
# Defined before any rule names $(NEED_VENV): make expands prerequisites
# when it reads a rule, so a later definition would come too late.
VENV_PYTHON := $(CURDIR)/.venv/bin/python
PLOT_PYTHON ?= $(shell $(PYTHON) -c 'import matplotlib, pylopdf_fonts_zh_cn' 2>/dev/null && echo $(PYTHON) || echo $(VENV_PYTHON))
NEED_VENV := $(if $(filter $(VENV_PYTHON),$(PLOT_PYTHON)),$(VENV_PYTHON))

# make test builds what its suites need TEST_JOBS at a time (default: the
# CPU count, or make's own -j), then runs the suites as many at a time.
# TEST_BUILD_MINUTES and TEST_SECONDS are what make test says a full build
# and the suites take on two cores with no GPU (make help and both READMEs
# quote them; tests/cli_tests.sh checks that they agree; how they were
# measured is in git log -S TEST_SECONDS).
TEST_JOBS ?= $(shell nproc 2>/dev/null || echo 2)
TEST_BUILD_MINUTES := 3.3
TEST_SECONDS := 102

.PHONY: all help test check mutants determinism venv bench tune plot publish docs profile profile-all sanitize \
        ptxas sass diff new clean code-hash hash-flags $(ALIASES) $(ROW_ALIASES) $(BACK_ALIASES) \
        $(BACK_STEP_DIRS) FORCE
.DEFAULT_GOAL := all

# Each job's rules are in a file of their own (mk/): the build, make test,
# the grader, the measurements and charts, the teaching commands, and the
# accuracy lesson, the diagrams and multigpu. The four targets several jobs
# add to are defined once, below: each job appends to these lists.
ALL_MORE :=
TEST_BUILD_MORE :=
PLOT_PARTS :=
CLEAN_MORE :=
include mk/help.mk mk/build.mk mk/test.mk mk/grade.mk mk/results.mk mk/teaching.mk \
        mk/accuracy.mk mk/diagrams.mk mk/multigpu.mk

all: $(PROGRAMS) $(ROW_PROGRAMS) $(ALIASES) $(ROW_ALIASES) $(BACK_PROGRAMS) $(BACK_ALIASES) $(ALL_MORE)

# What make test needs built (mk/test.mk): the GPU suite's fixtures only
# where there is a GPU (TEST_GPU).
.PHONY: test-build
test-build: build/unit_tests $(PROGRAMS) $(ROW_PROGRAMS) $(ALIASES) $(ROW_ALIASES) $(BACK_PROGRAMS) $(NEED_VENV) build/gpu_work_sum.o build/gpu_work_rows.o build/gpu_work_back.o \
            $(if $(TEST_GPU),$(BROKEN) $(MUTANTS) $(MONITORED)) $(TEST_BUILD_MORE)

# The charts of RESULTS and its part 2 and 3 siblings (mk/results.mk), after the
# accuracy, variance, diagram and multigpu pictures.
plot: $(NEED_VENV) $(PLOT_PARTS)
	$(PLOT_PYTHON) tools/plot.py --chinese --results $(RESULTS) $(PROFILE_ARG)
	@if [ -f $(ROW_RESULTS) ]; then $(PLOT_PYTHON) tools/plot.py --chinese --results $(ROW_RESULTS); fi
	@if [ -f $(BACK_RESULTS) ]; then $(PLOT_PYTHON) tools/plot.py --chinese --results $(BACK_RESULTS); fi
	@if [ -f $(WIDTHS_RESULTS) ]; then $(PLOT_PYTHON) tools/plot.py --chinese --results $(WIDTHS_RESULTS); fi

clean:
	rm -rf build $(PROGRAMS) $(ROW_PROGRAMS) $(BROKEN) step4_warp/run-racy $(ALIASES) $(ROW_ALIASES) \
	       $(BACK_PROGRAMS) $(BACK_ALIASES) $(CLEAN_MORE)
