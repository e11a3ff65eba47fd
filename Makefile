# reduce-tutorial: one Makefile for every step, the CUB baseline, the tests,
# the benchmark, the plots and the profiler. `make help` lists the targets.

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

# No fast-math: the tutorial's sums must be plain IEEE float adds.
NVFLAGS := -O3 -lineinfo -std=c++17 $(GENCODE) -Icommon -Xcompiler -Wall,-Wextra
CFLAGS  := -O2 -std=c11 -Wall -Wextra -Wpedantic -Icommon -I$(CUDA_HOME)/include
LDLIBS  := -ldl

# The git revision goes into every CSV row; `-dirty` marks uncommitted changes.
# Where the tree travels without .git (a remote GPU), pass GIT_REV=... yourself.
GIT_REV ?= $(shell git describe --always --dirty --abbrev=7 2>/dev/null || echo unknown)

# Every stepN_slug/reduce.cu is a step: a new directory needs no edit here.
STEP_DIRS := $(patsubst %/reduce.cu,%,$(sort $(wildcard step*_*/reduce.cu)))
PROGRAMS  := $(addsuffix /run,$(STEP_DIRS)) baseline_cub/run
ALIASES   := $(foreach d,$(STEP_DIRS),$(firstword $(subst _, ,$(d))))
HARNESS   := build/driver.o build/harness.o build/flush.o build/version.o
HEADERS   := $(wildcard common/*.h)

.PHONY: all help test venv bench tune plot profile profile-all sanitize ptxas sass \
        diff new clean $(ALIASES) FORCE
.DEFAULT_GOAL := all

all: $(PROGRAMS)

help:
	@echo "make                 build every step and the CUB baseline"
	@echo "make stepK           build stepK_*/run and link stepK -> stepK_* (then ./stepK/run)"
	@echo "make test            CPU unit tests, plot/script tests, GPU suite (skipped without a GPU)"
	@echo "make bench           measure every step and CUB, write plots/results/<gpu>.csv, draw"
	@echo "make tune            time other block sizes / unroll factors of some steps"
	@echo "make plot            redraw charts and README tables from the committed results"
	@echo "make profile STEP=K  Nsight Compute counters of one step (K = 0..8 or cub)"
	@echo "make profile-all     the same for every step, into plots/results/<gpu>-profile.csv"
	@echo "make sanitize        compute-sanitizer memcheck, racecheck, synccheck on every program"
	@echo "make ptxas           registers, shared memory and spills of every kernel"
	@echo "make sass            sm_90 machine code of every step, with loop lengths"
	@echo "make diff STEP=K     what step K changed over step K-1"
	@echo "make new NAME=step9_slug   start your own step from the last one"
	@echo "make clean           remove what make built"

build:
	mkdir -p build

build/%.o: common/%.c $(HEADERS) | build
	$(CC) $(CFLAGS) -c $< -o $@

build/flush.o: common/flush.cu $(HEADERS) | build
	$(NVCC) $(NVFLAGS) -c $< -o $@

# Rewritten only when the revision changes, so it does not force relinks.
build/version.c: FORCE | build
	@printf 'const char reduce_git_rev[] = "%s";\n' '$(GIT_REV)' > $@.tmp
	@cmp -s $@.tmp $@ && rm -f $@.tmp || mv -f $@.tmp $@

build/version.o: build/version.c
	$(CC) $(CFLAGS) -c $< -o $@

%/run: %/reduce.cu $(HARNESS) $(HEADERS)
	$(NVCC) $(NVFLAGS) -o $@ $< $(HARNESS) $(LDLIBS)

# `make step3` builds step3_idle/run and links step3 -> step3_idle.
define STEP_ALIAS
$(firstword $(subst _, ,$(1))): $(1)/run
	ln -sfn $(1) $$@
endef
$(foreach d,$(STEP_DIRS),$(eval $(call STEP_ALIAS,$(d))))

# ---------------------------------------------------------------- tests
build/unit_tests: tests/unit_tests.c common/harness.c $(HEADERS) | build
	$(CC) $(CFLAGS) -o $@ tests/unit_tests.c common/harness.c -lm

# Deliberately broken programs: the GPU suite checks that they FAIL.
BROKEN := $(patsubst %/reduce.cu,%/run,$(wildcard tests/broken/*/reduce.cu))

test: build/unit_tests $(PROGRAMS) $(BROKEN) $(NEED_VENV)
	@PLOT_PYTHON=$(PLOT_PYTHON) PYTHON=$(PYTHON) bash tests/run_tests.sh

# ---------------------------------------------------------------- results
# matplotlib from the system if it imports, else from a local .venv
# (an absolute path, so scripts run from other directories find it too).
VENV_PYTHON := $(CURDIR)/.venv/bin/python
PLOT_PYTHON ?= $(shell $(PYTHON) -c 'import matplotlib' 2>/dev/null && echo $(PYTHON) || echo $(VENV_PYTHON))
NEED_VENV = $(if $(filter $(VENV_PYTHON),$(PLOT_PYTHON)),$(VENV_PYTHON))

venv: $(NEED_VENV)

$(VENV_PYTHON): plots/requirements.txt
	@echo "matplotlib not importable: installing plots/requirements.txt into .venv"
	$(PYTHON) -m venv .venv
	.venv/bin/python -m pip install -q -r plots/requirements.txt
	@touch $@

RESULTS ?= plots/results/h200.csv
PROFILE_CSV = $(patsubst %.csv,%-profile.csv,$(RESULTS))

# bench.py names the file after the GPU (results: plots/results/h200.csv); plot that one.
bench: $(PROGRAMS) | build
	$(PYTHON) plots/bench.py --root . --out-dir plots/results | tee build/bench.log
	$(MAKE) --no-print-directory plot RESULTS=$$(sed -n 's/^results: //p' build/bench.log | tail -n 1)

# Other values of each step's knobs (BLOCK_SIZE, UNROLL, ...), timed the same way.
tune: $(HARNESS) | build
	bash tools/tune.sh build/tune.csv

plot: $(NEED_VENV)
	$(PLOT_PYTHON) plots/plot.py --results $(RESULTS) \
	    $(if $(wildcard $(PROFILE_CSV)),--profile $(PROFILE_CSV)) \
	    --readme README.md --steps-root .

# ncu runs with --clock-control none: the GPU may be shared, and locking its
# clocks for a profile would change them for everyone else.
profile: $(PROGRAMS)
	@test -n "$(STEP)" || { echo "usage: make profile STEP=K (K = 0..8 or cub)"; exit 2; }
	$(PYTHON) plots/profile.py --root . --step $(STEP)

profile-all: $(PROGRAMS)
	$(PYTHON) plots/profile.py --root . --all --out-dir plots/results

SANITIZE_N ?= 1048579
sanitize: $(PROGRAMS) step4_warp/run-racy
	@bash tools/sanitize.sh $(SANITIZE_N) $(PROGRAMS)

# The racecheck demo: step 4 without its __syncwarp() calls (never shipped).
step4_warp/run-racy: step4_warp/reduce.cu $(HARNESS) $(HEADERS)
	$(NVCC) $(NVFLAGS) -DRACY_WARP -o $@ $< $(HARNESS) $(LDLIBS)

ptxas: | build
	@for d in $(STEP_DIRS) baseline_cub; do \
	    echo "== $$d"; \
	    $(NVCC) $(NVFLAGS) -Xptxas -v -c $$d/reduce.cu -o build/ptxas.o 2>&1 \
	        | grep -E 'Compiling entry|Used|spill' | grep -v -E 'l2_flush' ; \
	done

# The sm_90 machine code of every step's kernel, with its loop lengths
# (needs cuobjdump, no GPU): the instruction counts the step READMEs cite.
SASS_OUT ?= plots/results/sm90-sass.txt
sass:
	@NVCC=$(NVCC) GIT_REV=$(GIT_REV) bash tools/sass.sh $(SASS_OUT) $(STEP_DIRS)

# ---------------------------------------------------------------- teaching
diff:
	@test -n "$(STEP)" || { echo "usage: make diff STEP=K (K = 1..8)"; exit 2; }
	@bash tools/step.sh diff $(STEP)

new:
	@test -n "$(NAME)" || { echo "usage: make new NAME=step9_slug"; exit 2; }
	@bash tools/step.sh new $(NAME)

clean:
	rm -rf build $(PROGRAMS) $(BROKEN) step4_warp/run-racy $(ALIASES)

# ---------------------------------------------------------------- diagrams
# Access-pattern pictures computed from each step's index expressions by
# plots/patterns.py (no GPU): plots/diagrams/<step>-*.png and the
# <!-- BEGIN figures --> block of every step README. `make plot` runs it too.
.PHONY: diagrams
diagrams: $(NEED_VENV)
	$(PLOT_PYTHON) plots/diagrams.py --root . --readmes

plot: diagrams
# ------------------------------------------------------------ end diagrams
