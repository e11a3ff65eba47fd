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

# DEVICE=1 runs everything on the second GPU: the CUDA runtime, ncu and
# compute-sanitizer all honour CUDA_VISIBLE_DEVICES.
ifneq ($(strip $(DEVICE)),)
export CUDA_VISIBLE_DEVICES := $(DEVICE)
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

# matplotlib from the system if it imports, else from a local .venv
# (an absolute path, so scripts run from other directories find it too).
# Defined before any rule names $(NEED_VENV): make expands prerequisites
# when it reads a rule, so a later definition would come too late.
VENV_PYTHON := $(CURDIR)/.venv/bin/python
PLOT_PYTHON ?= $(shell $(PYTHON) -c 'import matplotlib' 2>/dev/null && echo $(PYTHON) || echo $(VENV_PYTHON))
NEED_VENV := $(if $(filter $(VENV_PYTHON),$(PLOT_PYTHON)),$(VENV_PYTHON))

.PHONY: all help test check mutants determinism venv bench tune plot docs profile profile-all sanitize \
        ptxas sass diff new clean $(ALIASES) FORCE
.DEFAULT_GOAL := all

all: $(PROGRAMS)

help:
	@echo "make                 build every step and the CUB baseline"
	@echo "make stepK           build stepK_*/run and link stepK -> stepK_* (then ./stepK/run)"
	@echo "make test            CPU unit tests, plot/script tests, GPU suite (skipped without a GPU)"
	@echo "make check STEP=K    grade one program: sizes, fills, offsets, races (K = 0..9, cub)"
	@echo "make bench           measure every step and CUB into plots/results/<gpu>.csv, and draw it"
	@echo "make tune            time other block sizes / unroll factors of some steps"
	@echo "make determinism     100 runs of every program: same bits each time? (and atomics)"
	@echo "make plot            redraw the charts of plots/reference (or RESULTS=...) and diagrams"
	@echo "make docs            rewrite the generated blocks of the READMEs and ACCURACY.md"
	@echo "make diagrams        draw each step's access pattern into plots/diagrams, no GPU"
	@echo "make accuracy        every program's rounding error: plots/results/<gpu>-accuracy.csv"
	@echo "make profile STEP=K  Nsight Compute counters of one step (K = 0..9 or cub)"
	@echo "make profile-all     the same for every step, into plots/results/<gpu>-profile.csv"
	@echo "   OUT_DIR=DIR       where bench, profile-all and accuracy write (default plots/results)"
	@echo "   DEVICE=K          run the GPU targets on device K only (CUDA_VISIBLE_DEVICES=K)"
	@echo "make sanitize        compute-sanitizer memcheck, racecheck, synccheck on every program"
	@echo "make ptxas           registers, shared memory and spills of every kernel"
	@echo "make sass            sm_90 machine code of every step, with loop lengths"
	@echo "make diff STEP=K     what step K changed over the step before it"
	@echo "make new NAME=step10_slug  start your own step from the one below it"
	@echo "make clean           remove what make built"

build:
	mkdir -p build

build/%.o: common/%.c $(HEADERS) | build
	$(CC) $(CFLAGS) -c $< -o $@

build/flush.o: common/flush.cu $(HEADERS) build/arch.stamp | build
	$(NVCC) $(NVFLAGS) -c $< -o $@

# Rewritten only when the revision changes, so it does not force relinks.
build/version.c: FORCE | build
	@printf 'const char reduce_git_rev[] = "%s";\n' '$(GIT_REV)' > $@.tmp
	@cmp -s $@.tmp $@ && rm -f $@.tmp || mv -f $@.tmp $@

build/version.o: build/version.c
	$(CC) $(CFLAGS) -c $< -o $@

# The target GPU code: rewritten when ARCH changes, so `make ARCH=sm_80`
# after a default build rebuilds everything for sm_80.
build/arch.stamp: FORCE | build
	@echo '$(GENCODE)' > $@.tmp
	@cmp -s $@.tmp $@ && rm -f $@.tmp || mv -f $@.tmp $@

# The hash of a program's GPU code (its reduce.cu and the flush kernel,
# comments ignored): every results row carries it, see tools/code_hash.py.
build/hash/%.c: %/reduce.cu common/flush.cu tools/code_hash.py
	@mkdir -p $(@D)
	@h=$$($(PYTHON) tools/code_hash.py $< common/flush.cu) || exit 1; \
	 printf 'const char reduce_code_hash[] = "%s";\n' "$$h" > $@

build/hash/%.o: build/hash/%.c
	$(CC) $(CFLAGS) -c $< -o $@

%/run: %/reduce.cu build/hash/%.o $(HARNESS) $(HEADERS) build/arch.stamp
	$(NVCC) $(NVFLAGS) -o $@ $< build/hash/$*.o $(HARNESS) $(LDLIBS)

# `make step3` builds step3_idle/run and links step3 -> step3_idle.
define STEP_ALIAS
$(firstword $(subst _, ,$(1))): $(1)/run
	ln -sfn $(1) $$@
endef
$(foreach d,$(STEP_DIRS),$(eval $(call STEP_ALIAS,$(d))))

# ---------------------------------------------------------------- tests
build/unit_tests: tests/unit_tests.c common/harness.c $(HEADERS) | build
	$(CC) $(CFLAGS) -o $@ tests/unit_tests.c common/harness.c -lm

# Deliberately broken programs: the grader must FAIL every one of them.
# Hand-written ones in tests/broken/<name>/, and mutants: a shipped step with
# one classic bug put in by tests/broken/mutants.txt (tools/mutate.sh).
BROKEN  := $(patsubst %/reduce.cu,%/run,$(wildcard tests/broken/*/reduce.cu))
MUTANTS := $(shell sed -n 's/^\([a-z0-9_]*\) *|.*/build\/mutants\/\1\/run/p' tests/broken/mutants.txt)

build/mutants/%/reduce.cu: tests/broken/mutants.txt tools/mutate.sh $(wildcard step*_*/reduce.cu)
	@bash tools/mutate.sh $* $@

mutants: $(MUTANTS)

# Generated sources (mutants, code hashes) are kept after a build, for reading.
.SECONDARY:

test: build/unit_tests $(PROGRAMS) $(BROKEN) $(MUTANTS) $(NEED_VENV)
	@PLOT_PYTHON=$(PLOT_PYTHON) PYTHON=$(PYTHON) bash tests/run_tests.sh

# The grader: one program through sizes, fills, offsets, onehot positions,
# repeated runs and compute-sanitizer. STEP=K (a step number or cub) or
# PROGRAM=path/to/run. Exit 0 only if every check passed.
check:
	@prog='$(PROGRAM)'; \
	 if [ -z "$$prog" ]; then \
	     test -n "$(STEP)" || { echo "usage: make check STEP=K (K = a step number or cub) or PROGRAM=path/run"; exit 2; }; \
	     if [ "$(STEP)" = cub ]; then dir=baseline_cub; \
	     else dir=$$(ls -d step$(STEP)_*/ 2>/dev/null | head -n 1); dir=$${dir%/}; fi; \
	     test -n "$$dir" -a -f "$$dir/reduce.cu" || { echo "make check: no step $(STEP) (no step$(STEP)_*/reduce.cu)"; exit 2; }; \
	     $(MAKE) --no-print-directory "$$dir/run" || exit 2; prog=$$dir/run; \
	 fi; \
	 $(PYTHON) tools/grade.py $(GRADE_FLAGS) "$$prog"

# ---------------------------------------------------------------- results
venv: $(NEED_VENV)

$(VENV_PYTHON): tools/requirements.txt
	@echo "matplotlib not importable: installing tools/requirements.txt into .venv"
	$(PYTHON) -m venv .venv
	.venv/bin/python -m pip install -q -r tools/requirements.txt
	@touch $@

# Measurements go to OUT_DIR, git-ignored scratch by default, on whatever GPU
# runs them. The committed reference, which `make plot`, `make docs` and the
# tests read, is replaced only on purpose: `make bench OUT_DIR=plots/reference`.
OUT_DIR ?= plots/results
RESULTS ?= plots/reference/h200.csv
PROFILE ?= $(patsubst %.csv,%-profile.csv,$(RESULTS))
# A PROFILE given on the command line must exist; the default is used if present.
PROFILE_GIVEN = $(filter command line,$(origin PROFILE))
PROFILE_ARG = $(if $(PROFILE_GIVEN)$(wildcard $(PROFILE)),--profile $(PROFILE))
# Extra bench.py options, e.g. BENCH_FLAGS=--quick (two sizes, a smoke test).
BENCH_FLAGS ?=

# bench.py files its rows as $(OUT_DIR)/<gpu>.csv, with <gpu>-bench.log beside
# them, and writes that path to build/bench-results; the charts of that file
# follow, also after failed runs (their rows are never drawn). The exit status
# is bench.py's, else plot.py's. READMEs are never touched: that is `make docs`.
bench: $(PROGRAMS) $(NEED_VENV) | build
	@rm -f build/bench-results
	@status=0; \
	$(PYTHON) tools/bench.py --root . --out-dir $(OUT_DIR) --record-path build/bench-results \
	    $(BENCH_FLAGS) || status=$$?; \
	if [ -s build/bench-results ]; then \
	    csv=$$(cat build/bench-results); profile=$${csv%.csv}-profile.csv; \
	    if [ -f "$$profile" ]; then set -- --profile "$$profile"; else set --; fi; \
	    $(PLOT_PYTHON) tools/plot.py --results "$$csv" "$$@"; plotted=$$?; \
	    [ $$status -ne 0 ] || status=$$plotted; \
	fi; \
	exit $$status

# Other values of each step's knobs (BLOCK_SIZE, UNROLL, ...), timed the same way.
tune: $(HARNESS) | build
	bash tools/tune.sh build/tune.csv

# The charts of RESULTS (default: the committed reference), into its folder;
# the accuracy and diagrams blocks below add their pictures. No README is
# written: that is `make docs`.
plot: $(NEED_VENV)
	$(PLOT_PYTHON) tools/plot.py --results $(RESULTS) $(PROFILE_ARG)

# Every generated block of README.md, ACCURACY.md and the step READMEs, in
# each language present, from RESULTS and its -profile.csv and -accuracy.csv
# siblings (tools/docs.py). Pages only: no chart, no picture.
docs:
	$(PYTHON) tools/docs.py --results $(RESULTS) $(PROFILE_ARG)

# ncu runs with --clock-control none: the GPU may be shared, and locking its
# clocks for a profile would change them for everyone else.
profile: $(PROGRAMS)
	@test -n "$(STEP)" || { echo "usage: make profile STEP=K (K = 0..9 or cub)"; exit 2; }
	$(PYTHON) tools/profile.py --root . --step $(STEP)

profile-all: $(PROGRAMS)
	$(PYTHON) tools/profile.py --root . --all --out-dir $(OUT_DIR)

SANITIZE_N ?= 1048579
sanitize: $(PROGRAMS) step4_warp/run-racy
	@bash tools/sanitize.sh $(SANITIZE_N) $(PROGRAMS)

# The racecheck demo: step 4 without its __syncwarp() calls (never shipped).
step4_warp/run-racy: step4_warp/reduce.cu build/hash/step4_warp.o $(HARNESS) $(HEADERS) build/arch.stamp
	$(NVCC) $(NVFLAGS) -DRACY_WARP -o $@ $< build/hash/step4_warp.o $(HARNESS) $(LDLIBS)

# Same bits every run? Every program and step 9's atomicAdd build, 100 runs
# at two sizes: $(OUT_DIR)/<gpu>-determinism.csv (the `distinct` column).
determinism: $(PROGRAMS) step9_singlepass/run-atomic
	@bash tools/determinism.sh $(OUT_DIR)

# The determinism demo: step 9 adding its block sums with atomicAdd (never shipped).
step9_singlepass/run-atomic: step9_singlepass/reduce.cu build/hash/step9_singlepass.o $(HARNESS) $(HEADERS) build/arch.stamp
	$(NVCC) $(NVFLAGS) -DATOMIC_FLOAT -o $@ $< build/hash/step9_singlepass.o $(HARNESS) $(LDLIBS)

ptxas: | build
	@for d in $(STEP_DIRS) baseline_cub; do \
	    echo "== $$d"; \
	    $(NVCC) $(NVFLAGS) -Xptxas -v -c $$d/reduce.cu -o build/ptxas.o 2>&1 \
	        | grep -E 'Compiling entry|Used|spill' | grep -v -E 'l2_flush' ; \
	done

# The sm_90 machine code of every step's kernel, with its loop lengths
# (needs cuobjdump, no GPU): the instruction counts the step READMEs cite.
SASS_OUT ?= plots/reference/sm90-sass.txt
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
	rm -rf build $(PROGRAMS) $(BROKEN) step4_warp/run-racy step9_singlepass/run-atomic $(ALIASES)

# ================================================================ accuracy
# Owned by the accuracy lesson (ACCURACY.md); kept in one block so that the
# rest of the Makefile can change around it.
# extras/<name>/reduce.cu: programs on the same harness that are NOT steps
# (make bench, make diff and make new never see them). `make` and `make test`
# build them with the same %/run rule and flags as the steps.
EXTRA_PROGRAMS := $(patsubst %/reduce.cu,%/run,$(sort $(wildcard extras/*/reduce.cu)))

.PHONY: accuracy clean-extras
all: $(EXTRA_PROGRAMS)
test: $(EXTRA_PROGRAMS)
clean: clean-extras

# Every program in check mode over three fills and n = 2^10 .. 2^28, the
# CPU's float loops beside them, step 8 timed against its Kahan variant:
# $(OUT_DIR)/<gpu>-accuracy.csv and its chart; planned to take one to two
# minutes on an H200 (tools/accuracy.py says how). ACCURACY.md's block is
# `make docs`'s, from the reference (OUT_DIR=plots/reference).
# The chart is drawn even when some run failed (failed rows are never
# plotted); make still reports the failure.
accuracy: $(PROGRAMS) $(EXTRA_PROGRAMS) $(NEED_VENV)
	$(PYTHON) tools/accuracy.py --root . --out-dir $(OUT_DIR); status=$$?; \
	if [ $$status -le 1 ]; then \
	    $(PLOT_PYTHON) tools/accuracy_chart.py $(OUT_DIR)/*-accuracy.csv || status=$$?; \
	fi; exit $$status

# `make plot` redraws the accuracy chart of RESULTS's -accuracy.csv sibling
# (the file `make docs` reads), once one has been measured.
ACCURACY_CSV := $(patsubst %.csv,%-accuracy.csv,$(RESULTS))
.PHONY: accuracy-chart
plot: accuracy-chart
accuracy-chart: $(NEED_VENV)
	@if [ -f $(ACCURACY_CSV) ]; then $(PLOT_PYTHON) tools/accuracy_chart.py $(ACCURACY_CSV); fi

clean-extras:
	rm -f $(EXTRA_PROGRAMS)
# ============================================================ end accuracy

# ---------------------------------------------------------------- diagrams
# Access-pattern pictures computed from each step's index expressions by
# tools/patterns.py (no GPU): plots/diagrams/<step>-*.png. `make plot` draws
# them too; the <!-- BEGIN figures --> block of each step README that shows
# them is `make docs`'s.
.PHONY: diagrams
diagrams: $(NEED_VENV)
	$(PLOT_PYTHON) tools/diagrams.py --root .

plot: diagrams
# ------------------------------------------------------------ end diagrams
