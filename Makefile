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
TEST_BUILD_MINUTES := 2
TEST_SECONDS := 90

.PHONY: all help test check mutants determinism venv bench tune plot publish docs profile profile-all sanitize \
        ptxas sass diff new clean code-hash hash-flags $(ALIASES) $(ROW_ALIASES) FORCE
.DEFAULT_GOAL := all

all: $(PROGRAMS) $(ROW_PROGRAMS) $(ALIASES) $(ROW_ALIASES)

help:
	@echo "Without a GPU (a laptop, a login node):"
	@echo "  make                 build every step, the CUB baseline and part 2's row programs,"
	@echo "                       and link each stepK and rows/stepK (then ./step5/run)"
	@echo "                       (about $(TEST_BUILD_MINUTES) min on two cores with make -j2; make -j4: four compiles at once)"
	@echo "  make stepK           build stepK_*/run and link stepK -> stepK_* (then ./stepK/run)"
	@echo "  make rows/stepK      the same for part 2 (then ./rows/stepK/run)"
	@echo "  make test            build what the suites need, then every suite: about $(TEST_BUILD_MINUTES) min + $(TEST_SECONDS) s on"
	@echo "                       two cores from a fresh clone, $(TEST_SECONDS) s once built; without a GPU no kernel runs,"
	@echo "                       and the last line says so (V=1: every command and suite output; SUITES=cli: one suite)"
	@echo "  make diff STEP=K     what step K changed over the step before it (STEP=rows/K: part 2)"
	@n=$$(bash tools/step.sh next); echo "  make new NAME=step$${n}_slug  start your own step $$n (the next free number) from step $$((n - 1))"
	@n=$$(bash tools/step.sh next rows); echo "  make new NAME=rows/step$${n}_slug  the same in part 2, from rows/step$$((n - 1))"
	@echo "                       (FROM=K starts it from step K of that part instead)"
	@echo "  make docs            rewrite the generated blocks of the READMEs from plots/reference"
	@echo "  make plot            redraw the charts of plots/reference (or RESULTS=...) and diagrams"
	@echo "  make publish         copy a finished run's CSVs and logs (OUT_DIR) into plots/reference, then redraw its charts"
	@echo "  make diagrams        draw each step's access pattern into plots/diagrams (the steps with a model)"
	@echo "  make ptxas           registers, shared memory and spills of every kernel, per architecture:"
	@echo "                       about 2,000 lines in 2.5 min (ARCH=sm_90: a third; PTXAS_DIRS=step8_vector: one step)"
	@echo "  make sass            sm_90 machine code of every step, with loop lengths (needs cuobjdump)"
	@echo "  make mutants         build the mutants: shipped steps with one bug put in, which the grader must fail"
	@echo "  make variance        a row's variance three ways in float32: plots/results/variance.csv + chart"
	@echo "  make bf16-sum        sums of ones and of values below 1 kept in bfloat16 and in float (CPU)"
	@echo "  make tolerances      how wide part 2's checks are, fill by fill, at 1024 and 2^20 columns (CPU)"
	@echo "  make cuda12          build every program with a CUDA 12 toolkit too (log: plots/reference/)"
	@echo "  make multigpu        build multigpu/run, the sum over several GPUs with NCCL (where nccl.h is found)"
	@echo "  make venv            install the pinned matplotlib into .venv (make test does it when needed)"
	@echo "  make code-hash DIR=step3_idle   the code hash make builds into that program (its --version)"
	@echo "  make clean           remove every build output"
	@echo "With a CUDA GPU (without one, each stops in one line; make check first builds what it grades):"
	@echo "  make check STEP=K    grade one program: sizes, fills, offsets, races (K, rows/K, cub or rows/cub)"
	@echo "  make check SOURCE=path/reduce.cu   grade a source file (or a rows.cu) built with this harness;"
	@echo "                       bash tools/grade_source.sh path/reduce.cu: the same, exit 4 if it does not build"
	@echo "  make check PROGRAM=path/run        grade a program built elsewhere"
	@echo "  make check ... SPEED=\"1.5x step2\"   also time it against step 2 (or copy, cub), in rounds"
	@echo "  make class SUBMISSIONS=dir         grade every dir/<student>/reduce.cu: reports/class.md + chart"
	@echo "  make bench           every program, rounds in shuffled order: plots/results/<gpu>*.csv + charts"
	@echo "  make verify ONLY=rows/step7_wide   one GPU run of a change: grade, profile and time the programs"
	@echo "                       named with what they are compared against; merged into OUT_DIR (ONLY=sum, rows: a part)"
	@echo "  make profile STEP=K  Nsight Compute counters of one program (K, rows/K, cub or rows/cub)"
	@echo "  make profile-all     the same for every program, into plots/results/<gpu>-profile.csv"
	@echo "  make accuracy        every part 1 program's rounding error: plots/results/<gpu>-accuracy.csv"
	@echo "  make determinism     100 runs of every part 1 program: same bits each time? (and atomics)"
	@echo "  make tune            time other block sizes / unroll factors of some steps"
	@echo "  make sanitize        compute-sanitizer memcheck, racecheck, synccheck on every part 1 program"
	@echo "  make nccl-check      every multigpu check and measurement on this machine's GPUs: plots/results/nccl/"
	@echo "Options: OUT_DIR=DIR (where bench, profile-all and accuracy write and publish reads; default plots/results),"
	@echo "  DEVICE=K (run on GPU K only), ARCH=sm_80 (build for one architecture)."
	@echo "make exits 2 whenever anything fails; the grader's own exit codes (1 wrong, 2 usage,"
	@echo "3 no device) come from: python3 tools/grade.py stepK_name/run (make check's last line names it);"
	@echo "bash tools/need_gpu.sh exits 3 where there is no GPU"

build:
	mkdir -p build

build/%.o: common/%.c $(HEADERS) | build
	$(CC) $(CFLAGS) -c $< -o $@

build/flush.o: common/flush.cu $(HEADERS) build/arch.stamp | build
	$(NVCC) $(NVFLAGS) -c $< -o $@

build/toolchain.o: common/toolchain.cu build/arch.stamp | build
	$(NVCC) $(NVFLAGS) -c $< -o $@

# Rewritten only when the revision changes, so it does not force relinks.
# Each make writes its own temporary ($$$$: the shell's process id), so two
# makes at once in one tree (make test's suites) never race on one file.
build/version.c: FORCE | build
	@tmp=$@.$$$$.tmp; printf 'const char reduce_git_rev[] = "%s";\n' '$(GIT_REV)' > $$tmp; \
	 cmp -s $$tmp $@ && rm -f $$tmp || mv -f $$tmp $@

build/version.o: build/version.c
	$(CC) $(CFLAGS) -c $< -o $@

# The target GPU code and the flags: rewritten when either changes, so
# `make ARCH=sm_80` after a default build rebuilds everything for sm_80.
build/arch.stamp: FORCE | build
	@tmp=$@.$$$$.tmp; echo '$(GENCODE) $(HASH_FLAGS)' > $$tmp; \
	 cmp -s $$tmp $@ && rm -f $$tmp || mv -f $$tmp $@

# The hash of everything that decides what a program runs and how it is
# timed (its source, the harness it is built from, the flags): every
# results row carries it, see tools/code_hash.py.
define HASH_RECIPE
@mkdir -p $(@D)
@h=$$($(PYTHON) tools/code_hash.py --flags '$(HASH_FLAGS)' --program $*) || exit 1; \
 printf 'const char reduce_code_hash[] = "%s";\n' "$$h" > $@
endef
build/hash/%.c: %/reduce.cu $(HASH_INPUTS) build/arch.stamp
	$(HASH_RECIPE)
build/hash/%.c: %/rows.cu $(HASH_INPUTS) build/arch.stamp
	$(HASH_RECIPE)

build/hash/%.o: build/hash/%.c
	$(CC) $(CFLAGS) -c $< -o $@

# A program's source is compiled once into build/obj/, with the same flags,
# then linked with its code hash and the harness: a new revision (every
# commit, any edit: build/version.o) relinks the programs, it does not
# compile them again.
build/obj/%/reduce.o: %/reduce.cu $(HEADERS) build/arch.stamp
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -c $< -o $@

build/obj/%/rows.o: %/rows.cu $(HEADERS) build/arch.stamp
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -c $< -o $@

%/run: build/obj/%/reduce.o build/hash/%.o $(HARNESS) build/arch.stamp
	$(NVCC) $(NVFLAGS) -o $@ $< build/hash/$*.o $(HARNESS) $(LDLIBS)

%/run: build/obj/%/rows.o build/hash/%.o $(ROWS_HARNESS) build/arch.stamp
	$(NVCC) $(NVFLAGS) -o $@ $< build/hash/$*.o $(ROWS_HARNESS) $(LDLIBS)

# The grader's builds: the same program with its watch on where the work is
# done (common/gpu_work.c, the "gpu-work" check), wrapped around the
# contract's reduce_pass() or row_forward() by the linker. Never linked into
# the programs make bench times. build/graded/<name>/run is a student's
# source (tools/grade_source.sh); build/monitored/<dir>/run is <dir>/run's
# twin, from the same object and code hash (make check STEP=, the GPU suite).
CUPTI_LIBRARY := $(firstword $(wildcard $(CUDA_HOME)/lib64/libcupti.so $(CUDA_HOME)/lib/libcupti.so \
                   $(CUDA_HOME)/extras/CUPTI/lib64/libcupti.so $(CUDA_HOME)/targets/*/lib/libcupti.so))
WATCH_CFLAGS := $(CFLAGS) -I$(CUDA_HOME)/extras/CUPTI/include $(if $(CUPTI_LIBRARY),-DCUPTI_LIBRARY='"$(CUPTI_LIBRARY)"')
WATCH_SUM  := build/gpu_work_sum.o -Xlinker --wrap=reduce_pass
WATCH_ROWS := build/gpu_work_rows.o -Xlinker --wrap=row_forward

# Rewritten when the toolkit (its CUPTI) or the flags change, as arch.stamp.
build/watch.stamp: FORCE | build
	@tmp=$@.$$$$.tmp; echo '$(WATCH_CFLAGS)' > $$tmp; \
	 cmp -s $$tmp $@ && rm -f $$tmp || mv -f $$tmp $@

build/gpu_work_sum.o: common/gpu_work.c $(HEADERS) build/watch.stamp | build
	$(CC) $(WATCH_CFLAGS) -c $< -o $@

build/gpu_work_rows.o: common/gpu_work.c $(HEADERS) build/watch.stamp | build
	$(CC) $(WATCH_CFLAGS) -DGPU_WORK_ROWS -c $< -o $@

build/graded/%/run: build/obj/build/graded/%/reduce.o build/hash/build/graded/%.o $(HARNESS) build/gpu_work_sum.o build/arch.stamp
	$(NVCC) $(NVFLAGS) -o $@ $< build/hash/build/graded/$*.o $(HARNESS) $(WATCH_SUM) $(LDLIBS)

build/graded/%/run: build/obj/build/graded/%/rows.o build/hash/build/graded/%.o $(ROWS_HARNESS) build/gpu_work_rows.o build/arch.stamp
	$(NVCC) $(NVFLAGS) -o $@ $< build/hash/build/graded/$*.o $(ROWS_HARNESS) $(WATCH_ROWS) $(LDLIBS)

build/monitored/%/run: build/obj/%/reduce.o build/hash/%.o $(HARNESS) build/gpu_work_sum.o build/arch.stamp
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -o $@ $< build/hash/$*.o $(HARNESS) $(WATCH_SUM) $(LDLIBS)

build/monitored/%/run: build/obj/%/rows.o build/hash/%.o $(ROWS_HARNESS) build/gpu_work_rows.o build/arch.stamp
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -o $@ $< build/hash/$*.o $(ROWS_HARNESS) $(WATCH_ROWS) $(LDLIBS)

# `make code-hash DIR=step3_idle`: the hash make builds into that program.
code-hash:
	@test -n "$(DIR)" || { echo "usage: make code-hash DIR=step3_idle"; exit 2; }
	@$(PYTHON) tools/code_hash.py --flags '$(HASH_FLAGS)' --program $(DIR)

# The flags every hash covers (tests/test_claims.py reads them here).
hash-flags:
	@echo '$(HASH_FLAGS)'

# `make step3` builds step3_idle/run and links step3 -> step3_idle;
# `make rows/step3` links rows/step3 -> step3_<slug> beside it. `make` and
# `make test` make every link, so ./step5/run is there after either. A link
# is written (and its command shown, unless make -s) only when it is missing
# or points elsewhere: a built tree's `make` prints nothing for them.
LINK_STEP = [ "$$(readlink $(2))" = $(1) ] || { \
    $(if $(findstring s,$(firstword -$(MAKEFLAGS))),,echo ln -sfn $(1) $(2);) ln -sfn $(1) $(2); }
define STEP_ALIAS
$(firstword $(subst _, ,$(1))): $(1)/run
	@$$(call LINK_STEP,$(1),$$@)
endef
$(foreach d,$(STEP_DIRS),$(eval $(call STEP_ALIAS,$(d))))
define ROW_ALIAS
rows/$(firstword $(subst _, ,$(notdir $(1)))): $(1)/run
	@$$(call LINK_STEP,$(notdir $(1)),$$@)
endef
$(foreach d,$(ROW_STEP_DIRS),$(eval $(call ROW_ALIAS,$(d))))

# ---------------------------------------------------------------- tests
build/unit_tests: tests/unit_tests.c tests/expect.h common/harness.c common/rows_ref.c common/back_ref.c $(HEADERS) | build
	$(CC) $(CFLAGS) -o $@ tests/unit_tests.c common/harness.c common/rows_ref.c common/back_ref.c -lm $(LDLIBS)

# Deliberately broken programs: the grader must FAIL every one of them.
# Hand-written ones in tests/broken/<name>/, and mutants: a shipped step with
# one classic bug put in by tests/broken/mutants.txt (tools/mutate.sh).
BROKEN  := $(patsubst %/reduce.cu,%/run,$(wildcard tests/broken/*/reduce.cu)) \
           $(patsubst %/rows.cu,%/run,$(wildcard tests/broken/rows/*/rows.cu))
MUTANT_LINES := $(shell sed -n 's/^\([a-z0-9_]*\) *| *\([a-z0-9_/]*\) *|.*/\1:\2/p' tests/broken/mutants.txt)
SUM_MUTANTS := $(foreach m,$(MUTANT_LINES),$(if $(filter rows/%,$(lastword $(subst :, ,$(m)))),,$(firstword $(subst :, ,$(m)))))
ROW_MUTANTS := $(foreach m,$(MUTANT_LINES),$(if $(filter rows/%,$(lastword $(subst :, ,$(m)))),$(firstword $(subst :, ,$(m)))))
MUTANTS := $(addprefix build/mutants/,$(addsuffix /run,$(SUM_MUTANTS))) \
           $(addprefix build/mutants/rows/,$(addsuffix /run,$(ROW_MUTANTS)))
MUTANT_SOURCES := $(patsubst %/run,%/reduce.cu,$(filter-out build/mutants/rows/%,$(MUTANTS))) \
                  $(patsubst %/run,%/rows.cu,$(filter build/mutants/rows/%,$(MUTANTS)))

# Each mutant's source is made from its own step's source only, so a step of
# your own (make new), or an edit to another step, rebuilds no mutant.
define MUTANT_RULE
$(if $(filter rows/%,$(2)),build/mutants/rows/$(1)/rows.cu: $(2)/rows.cu,build/mutants/$(1)/reduce.cu: $(2)/reduce.cu) \
        tests/broken/mutants.txt tools/mutate.sh
	@bash tools/mutate.sh $(1) $$@
endef
$(foreach m,$(MUTANT_LINES),$(eval $(call MUTANT_RULE,$(firstword $(subst :, ,$(m))),$(lastword $(subst :, ,$(m))))))

# `make mutants` builds them; `make mutant-sources` only writes their sources
# (no GPU needed either way; only the GPU suite runs them).
.PHONY: mutant-sources
mutants: $(MUTANTS)
mutant-sources: $(MUTANT_SOURCES)

# Generated sources (mutants, code hashes) are kept after a build, for reading.
.SECONDARY:

# make test: first what the suites need (test-build), TEST_JOBS at a time
# unless make was given its own -j, into build/test-build.log: the compiler's
# command lines are shown when the build fails, or with V=1. Then every suite
# (tests/run_tests.sh; SUITES=... picks some). The broken fixtures and the
# mutants are built only where there is a GPU: the GPU suite alone runs them
# (TEST_GPU=1 is need_gpu.sh's answer; make mutants builds them anywhere).
# The suites run make a few hundred times: they get PLOT_PYTHON and OPENMP
# as found here, so that none of those makes probes for them again.
# Said on screen first, a line each, and only when it is so: how many
# programs are not built yet, with the time of a full build, and that the
# plotting Python goes into .venv (the build's own output goes to the log).
TEST_PROGRAMS = $(PROGRAMS) $(ROW_PROGRAMS) $(EXTRA_PROGRAMS)
TEST_UNBUILT = $(filter-out $(wildcard $(TEST_PROGRAMS)),$(TEST_PROGRAMS))
test:
	@mkdir -p build; n=$(words $(TEST_UNBUILT)); [ $$n -eq 0 ] || echo "make test: building $$n of the" \
	     "$(words $(TEST_PROGRAMS)) programs first, $(if $(filter -j%,$(MAKEFLAGS)),make's -j,$(TEST_JOBS)) at a time" \
	     "(all $(words $(TEST_PROGRAMS)): about $(TEST_BUILD_MINUTES) min on two cores), then the suites"; \
	 [ -z "$(NEED_VENV)" ] || [ $(VENV_PYTHON) -nt tools/requirements.txt ] || echo "make test: Python cannot import" \
	     "matplotlib and the chart font: installing tools/requirements.txt into .venv (once)"
	+@gpu=1; bash tools/need_gpu.sh test >/dev/null 2>&1 || gpu=; \
	 build="$(MAKE) --no-print-directory $(if $(filter -j%,$(MAKEFLAGS)),,-j$(TEST_JOBS)) test-build TEST_GPU=$$gpu"; \
	 if [ -n "$(V)" ]; then $$build; else \
	     $$build -Otarget > build/test-build.log 2>&1 || { cat build/test-build.log; \
	         echo "make test: the build failed: its commands and errors are above (build/test-build.log)"; exit 2; }; \
	 fi
	@PLOT_PYTHON=$(PLOT_PYTHON) PYTHON=$(PYTHON) OPENMP='$(OPENMP)' TEST_SECONDS=$(TEST_SECONDS) \
	    GPU_ONLY='$(ONLY)' bash tests/run_tests.sh

# What the GPU suite grades: every program and fixture as the grader builds
# it, with its watch on the work (build/monitored/, above).
MONITORED = $(addprefix build/monitored/,$(PROGRAMS) $(ROW_PROGRAMS) $(BROKEN) $(MUTANTS))
.PHONY: monitored broken
monitored: $(MONITORED)
broken: $(BROKEN)
.PHONY: test-build
test-build: build/unit_tests $(PROGRAMS) $(ROW_PROGRAMS) $(ALIASES) $(ROW_ALIASES) $(NEED_VENV) build/gpu_work_sum.o build/gpu_work_rows.o \
            $(if $(TEST_GPU),$(BROKEN) $(MUTANTS) $(MONITORED))


# The grader: one program through sizes, fills, offsets, onehot positions,
# repeated runs and compute-sanitizer. Exit 0 only if every check passed.
#   STEP=K, STEP=rows/K, STEP=cub, STEP=rows/cub or STEP=rows/copy: a shipped program;
#   SOURCE=path/reduce.cu (or .../rows.cu): a student's file, built here with
#     this repository's harness into build/graded/ by tools/grade_source.sh, so
#     the verdict is the harness's; it says whether the file built;
#   PROGRAM=path/run: a program built elsewhere. The grader runs it and reads
#     its PASS lines, so it trusts the harness that program was built with.
# The program is built first, on any machine; without a GPU one line then
# names the grader's command that would run on one (here it exits 3).
# JUNIT=file.xml and GRADESCOPE=results.json also write the checks in those formats.
# Any failure ends in one line of make's own, the last: check-run writes it to
# CHECK_VERDICT (named for this make's process) and check stops make with it.
# make exits 2 for every failure; that line gives the grader's own exit code
# (1 wrong, 2 usage, 3 no device) and the command that exits with it, or, for
# a source that does not build, bash tools/grade_source.sh's 4.
CHECK_VERDICT = build/.check-verdict-$(shell echo $$PPID)
# SPEED="1.5x step2" (or "0.8x copy", ">= step8") also times the program
# against that one of its part, in alternating rounds (tools/grade.py --speed);
# SPEED_AT=n or ROWSxCOLS, SPEED_ROUNDS, SPEED_POINTS, SPEED_CREDIT=all|ratio
# and SPEED_TIE=pass|fail set how (docs/grading.md, "A speed lab").
SPEED_FLAGS = $(if $(SPEED),--speed '$(SPEED)' $(if $(SPEED_AT),--speed-at '$(SPEED_AT)') \
    $(if $(SPEED_ROUNDS),--speed-rounds '$(SPEED_ROUNDS)') $(if $(SPEED_POINTS),--speed-points '$(SPEED_POINTS)') \
    $(if $(SPEED_CREDIT),--speed-credit '$(SPEED_CREDIT)') $(if $(SPEED_TIE),--speed-tie '$(SPEED_TIE)'))
check: check-run
	@$(eval CHECK_LINE := $(shell cat $(CHECK_VERDICT) 2>/dev/null; rm -f $(CHECK_VERDICT)))$(if $(CHECK_LINE),$(error $(CHECK_LINE)))

.PHONY: check-run
check-run:
	@mkdir -p build; verdict=$(CHECK_VERDICT); rm -f "$$verdict"; \
	 stop() { echo "$$*" > "$$verdict"; exit 0; }; \
	 prog=$${PROGRAM:-}; src=$${SOURCE:-}; dir=; \
	 if [ -n "$$src" ]; then \
	     test ! -d "$$src" || stop "make check: SOURCE=$$src is a folder: give its reduce.cu (part 1) or rows.cu (part 2)"; \
	     test -f "$$src" || stop "make check: SOURCE=$$src: no such file"; \
	     case "$$src" in *.cu) ;; *) stop "make check: SOURCE=$$src: give a reduce.cu (part 1) or rows.cu (part 2)" ;; esac; \
	 elif [ -n "$$prog" ]; then \
	     test ! -d "$$prog" || stop "make check: PROGRAM=$$prog is a folder: give the program in it, e.g. PROGRAM=$${prog%/}/run"; \
	     test -e "$$prog" || stop "make check: PROGRAM=$$prog: no such file"; \
	     test -x "$$prog" || stop "make check: PROGRAM=$$prog is not an executable (SOURCE=file.cu grades a source file)"; \
	 else \
	     step=$${STEP:-}; \
	     test -n "$$step" || stop "usage: make check STEP=K (a step number, rows/K, cub, rows/cub or rows/copy), SOURCE=path/reduce.cu or PROGRAM=path/run"; \
	     k=$${step#rows/}; case "$$step" in cub|rows/cub|rows/copy) k=0 ;; esac; \
	     hint=$$(echo "$$step" | sed -n 's|^\(rows/\)\{0,1\}step\([0-9][0-9]*\)\(_.*\)\{0,1\}$$|\1\2|p'); \
	     case "$$k" in ''|*[!0-9]*) stop "make check: STEP must be a step number, rows/K, cub, rows/cub or rows/copy, got '$$step'$${hint:+ (that step is STEP=$$hint)}" ;; esac; \
	     dir=$$($(PYTHON) tools/steps.py dir "$$step" 2>/dev/null) || \
	         stop "make check: no step $$step (no $$(case "$$step" in rows/*) echo "rows/step$${step#rows/}";; *) echo "step$$step";; esac)_*/ folder)"; \
	 fi; \
	 if [ -n "$$src" ]; then \
	     prog=$$(bash tools/grade_source.sh --build-only "$$src") || \
	         stop "make check: $$src does not build with this harness (the compiler's errors are above); bash tools/grade_source.sh $$src exits 4 for this"; \
	     echo "make check: $$src builds with this harness: $$prog"; \
	 elif [ -n "$$dir" ]; then \
	     prog=build/monitored/$$dir/run; \
	     $(MAKE) --no-print-directory $(if $(V),,-s) "$$prog" || stop "make check: $$prog does not build (the compiler's errors are above)"; \
	 fi; \
	 direct="python3 tools/grade.py $(if $(strip $(GRADE_FLAGS) $(SPEED_FLAGS)),$(strip $(GRADE_FLAGS) $(SPEED_FLAGS)) )$$prog"; \
	 nogpu=$$(bash tools/need_gpu.sh check "$$direct" "$${dir:+$$dir compiled; }grading it" 2>&1) || \
	     stop "$${nogpu:-make check: tools/need_gpu.sh failed}"; \
	 $(PYTHON) tools/grade.py $(GRADE_FLAGS) $(SPEED_FLAGS) $(if $(JUNIT),--junit '$(JUNIT)') \
	     $(if $(GRADESCOPE),--gradescope '$(GRADESCOPE)') $(if $(SUMMARY),--summary '$(SUMMARY)') "$$prog"; rc=$$?; \
	 case $$rc in 0) ;; 1) why="a check failed" ;; 2) why="a usage error" ;; 3) why="no CUDA device" ;; *) why="it stopped" ;; esac; \
	 [ $$rc -eq 0 ] || stop "make check: the grader exited $$rc ($$why); make exits 2 for any failure, this keeps the grader's code: $$direct"

# A whole class: every SUBMISSIONS/<student>/reduce.cu (or rows.cu) graded as
# make check SOURCE= grades it, one at a time, with SPEED=... if given, into
# REPORTS (default reports/): a report per student, class.md, class.csv and
# the chart class.png (tools/grade_class.py; CLASS_TIMEOUT minutes each).
REPORTS ?= reports
CLASS_TIMEOUT ?= 30
# Its chart needs matplotlib, not the pinned one: where only the system's
# Python is at hand (a GPU machine without the network) it draws with that,
# or says it cannot; --redraw draws it again elsewhere, from class.csv.
CLASS_PYTHON = $(if $(NEED_VENV),$(if $(wildcard $(VENV_PYTHON)),$(VENV_PYTHON),$(PYTHON)),$(PLOT_PYTHON))
.PHONY: class
class:
	@$(if $(SUBMISSIONS),,$(error usage: make class SUBMISSIONS=folder [SPEED='1.5x step2'] [REPORTS=reports]))$(eval NO_GPU := $(shell \
	    out=$$(bash tools/need_gpu.sh class "the grader on every submission: tools/grade_class.py $(SUBMISSIONS)" 2>&1) \
	    || echo "$${out:-make class: tools/need_gpu.sh failed}"))$(if $(NO_GPU),$(error $(NO_GPU)))
	@$(CLASS_PYTHON) tools/grade_class.py --out '$(REPORTS)' --timeout '$(CLASS_TIMEOUT)' \
	    $(GRADE_FLAGS) $(SPEED_FLAGS) '$(SUBMISSIONS)'

# ---------------------------------------------------------------- results
venv: $(NEED_VENV)

$(VENV_PYTHON): tools/requirements.txt
	@echo "matplotlib or the chart font not importable: installing tools/requirements.txt into .venv"
	$(PYTHON) -m venv .venv
	.venv/bin/python -m pip install -q -r tools/requirements.txt
	@touch $@

# Measurements go to OUT_DIR, git-ignored scratch by default, on whatever GPU
# runs them. The committed reference, which `make plot`, `make docs` and the
# tests read, is replaced only on purpose: `make publish` copies a finished
# run's files into it (`make bench OUT_DIR=plots/reference` still works).
OUT_DIR ?= plots/results
RESULTS ?= plots/reference/h200.csv
PROFILE ?= $(patsubst %.csv,%-profile.csv,$(RESULTS))
# A PROFILE given on the command line must exist; the default is used if present.
PROFILE_GIVEN = $(filter command line,$(origin PROFILE))
PROFILE_ARG = $(if $(PROFILE_GIVEN)$(wildcard $(PROFILE)),--profile $(PROFILE))
# Extra bench.py options, e.g. BENCH_FLAGS=--quick (a smoke test) or
# BENCH_FLAGS="--part rows --rounds 5". TORCH_PYTHON: a Python that imports
# torch, for PyTorch's rows in part 2 (left out, with one line, without one).
BENCH_FLAGS ?=
TORCH_PYTHON ?= $(PYTHON)

# bench.py files its rows as $(OUT_DIR)/<gpu>.csv, with <gpu>-bench.log beside
# them, and writes that path to build/bench-results; the charts of that file
# follow, each with its Chinese twin (--chinese), also after failed runs (their rows are never drawn). The exit status
# is bench.py's, else plot.py's. READMEs are never touched: that is `make docs`.
# ONLY=rows/step13_x,step9_singlepass (sum or rows: a whole part) times those
# programs and what their ratios are read against, in one run, and merges
# their rows into OUT_DIR's files (tools/bench.py --only).
ONLY ?=
ONLY_FLAG = $(if $(ONLY),--only '$(ONLY)')
bench: gpu-check $(PROGRAMS) $(ROW_PROGRAMS) $(NEED_VENV) | build
	@rm -f build/bench-results
	@status=0; \
	$(PYTHON) tools/bench.py --root . --out-dir $(OUT_DIR) --record-path build/bench-results \
	    --torch-python '$(TORCH_PYTHON)' $(ONLY_FLAG) $(BENCH_FLAGS) || status=$$?; \
	if [ -s build/bench-results ]; then \
	    for csv in $$(cat build/bench-results); do \
	        profile=$${csv%.csv}-profile.csv; \
	        if [ -f "$$profile" ]; then set -- --profile "$$profile"; else set --; fi; \
	        $(PLOT_PYTHON) tools/plot.py --chinese --results "$$csv" "$$@"; plotted=$$?; \
	        [ $$status -ne 0 ] || status=$$plotted; \
	    done; \
	fi; \
	exit $$status

# Other values of each step's knobs (BLOCK_SIZE, UNROLL, ...), timed the same way.
tune: gpu-check $(HARNESS) | build
	bash tools/tune.sh build/tune.csv

# The charts of RESULTS (default: the committed reference) and of its part 2
# sibling <name>-rows.csv, into its folder;
# the accuracy and diagrams blocks below add their pictures. No README is
# written: that is `make docs`.
ROW_RESULTS = $(patsubst %.csv,%-rows.csv,$(RESULTS))
# --chinese: each chart also as <name>.zh-CN.png for the Chinese pages
# (tools/chart_zh.py; the font is pinned in tools/requirements.txt).
plot: $(NEED_VENV)
	$(PLOT_PYTHON) tools/plot.py --chinese --results $(RESULTS) $(PROFILE_ARG)
	@if [ -f $(ROW_RESULTS) ]; then $(PLOT_PYTHON) tools/plot.py --chinese --results $(ROW_RESULTS); fi

# A finished run's results become the reference: tools/publish.py copies
# OUT_DIR's CSVs and logs of the reference's GPU into plots/reference under
# their own names (one line and exit 2, nothing copied, where there is nothing
# to publish, another GPU model's, or a partial run over a full file), then
# the reference's charts are drawn from them in both languages (make plot).
# No GPU; the pages follow with make docs.
publish: $(NEED_VENV) | build
	@rm -f build/published
	$(PYTHON) tools/publish.py --from $(OUT_DIR) --to plots/reference --record-path build/published
	@csv=$$(cat build/published); if [ -f "$$csv" ]; then \
	    $(MAKE) --no-print-directory plot RESULTS="$$csv"; \
	else echo "publish: no $$csv, so no chart drawn"; fi

# Every generated block of README.md, ACCURACY.md and the step READMEs, in
# each language present, from RESULTS and its -profile.csv and -accuracy.csv
# siblings (tools/docs.py). Pages only: no chart, no picture.
docs:
	$(PYTHON) tools/docs.py --results $(RESULTS) $(PROFILE_ARG)

# ncu runs with --clock-control none: the GPU may be shared, and locking its
# clocks for a profile would change them for everyone else.
profile: $(if $(STEP),gpu-check $(PROGRAMS) $(ROW_PROGRAMS))
	@test -n "$(STEP)" || { echo "usage: make profile STEP=K (K = a step number, rows/K, cub or rows/cub)"; exit 2; }
	$(PYTHON) tools/profile.py --root . --step $(STEP)

profile-all: gpu-check $(PROGRAMS) $(ROW_PROGRAMS)
	$(PYTHON) tools/profile.py --root . $(or $(ONLY_FLAG),--all) --out-dir $(OUT_DIR)
	$(PYTHON) tools/profile.py --root . $(or $(ONLY_FLAG),--all) --rows --out-dir $(OUT_DIR)

# One GPU run of a change: `make verify ONLY=rows/step13_x[,...]` builds,
# grades (make check's grader on each), profiles and times the programs named
# with what they are compared against, writes this run's files under
# VERIFY_DIR, merges the rows into OUT_DIR's (plots/reference to publish) and
# prints a short table last (tools/verify.py). VERIFY_FLAGS: e.g. --skip grade.
VERIFY_DIR ?= build/verify
VERIFY_FLAGS ?=
.PHONY: verify
verify:
	@$(if $(ONLY),,$(error usage: make verify ONLY=rows/step13_x[,step9_singlepass ...] (sum or rows: a whole part) [OUT_DIR=plots/reference]))$(eval NO_GPU := $(shell \
	    out=$$(bash tools/need_gpu.sh verify "grading, profiling and timing $(ONLY)" 2>&1) \
	    || echo "$${out:-make verify: tools/need_gpu.sh failed}"))$(if $(NO_GPU),$(error $(NO_GPU)))
	@targets=$$($(PYTHON) tools/verify.py --root . --only '$(ONLY)' --targets) || exit 2; \
	 $(MAKE) --no-print-directory -s -j$(TEST_JOBS) $$targets || exit 2
	$(PYTHON) tools/verify.py --root . --only '$(ONLY)' --out-dir $(OUT_DIR) --verify-dir $(VERIFY_DIR) \
	    --torch-python '$(TORCH_PYTHON)' $(VERIFY_FLAGS)

SANITIZE_N ?= 1048579
sanitize: gpu-check $(PROGRAMS) step4_warp/run-racy
	@bash tools/sanitize.sh $(SANITIZE_N) $(PROGRAMS)

# The racecheck demo: step 4 without its __syncwarp() calls (never shipped).
step4_warp/run-racy: step4_warp/reduce.cu build/hash/step4_warp.o $(HARNESS) $(HEADERS) build/arch.stamp
	$(NVCC) $(NVFLAGS) -DRACY_WARP -o $@ $< build/hash/step4_warp.o $(HARNESS) $(LDLIBS)

# Same bits every run? Every program and step 9's atomicAdd variant
# (extras/atomic_step9), 100 runs at two sizes:
# $(OUT_DIR)/<gpu>-determinism.csv (the `distinct` column).
determinism: gpu-check $(PROGRAMS) extras/atomic_step9/run
	@bash tools/determinism.sh $(OUT_DIR)

# First prerequisite of every target that measures: where there is no GPU,
# need_gpu.sh's line (its exit status is 3) stops make as make's one error
# line, before anything is built. make itself exits 2, as for any failure.
GPU_TARGET = $(or $(firstword $(filter-out gpu-check,$(MAKECMDGOALS))),gpu-check)
.PHONY: gpu-check
gpu-check:
	@$(eval NO_GPU := $(shell out=$$(bash tools/need_gpu.sh "$(GPU_TARGET)" 2>&1) || echo "$${out:-make $(GPU_TARGET): tools/need_gpu.sh failed}"))$(if $(NO_GPU),$(error $(NO_GPU)))

# Registers, shared memory and spills of every kernel of both parts (no GPU;
# ARCH=sm_90 for the figures part 2's READMEs quote: plots/reference/h200-ptxas.log).
# PTXAS_DIRS="step8_vector rows/step3_vector" compiles those only.
PTXAS_DIRS ?= $(STEP_DIRS) baseline_cub $(ROW_STEP_DIRS) rows/baseline_copy rows/baseline_copy16 rows/baseline_cub
ptxas: | build
	@for d in $(PTXAS_DIRS); do \
	    src=$$d/reduce.cu; [ -f $$src ] || src=$$d/rows.cu; \
	    echo "== $$d"; \
	    $(NVCC) $(NVFLAGS) -Xptxas -v -c $$src -o build/ptxas.o 2>&1 \
	        | grep -E 'Compiling entry|Used|spill' | grep -v -E 'l2_flush' ; \
	done

# The sm_90 machine code of every step's kernel, with its loop lengths
# (needs cuobjdump, no GPU): the instruction counts the step READMEs cite.
SASS_OUT ?= plots/reference/sm90-sass.txt
sass:
	@NVCC=$(NVCC) GIT_REV=$(GIT_REV) bash tools/sass.sh $(SASS_OUT) $(STEP_DIRS)

# Every program built with a CUDA 12 toolkit too, in build/cuda12/ (no GPU):
# CUDA12_TOOLKIT=debian (default: CUDA 12.4 from Debian's archive) or pypi
# (CUDA 12.9's headers, CCCL and runtime from PyPI; see tools/cuda12.sh).
.PHONY: cuda12
cuda12:
	bash tools/cuda12.sh $(or $(CUDA12_LOG),plots/reference/cuda12-build.log)

# ---------------------------------------------------------------- teaching
# STEP, NAME and FROM reach the script through the environment (make exports what
# is given on its command line), so no quote or space in them can break a recipe.
diff:
	@bash tools/step.sh diff "$${STEP:-}"

new:
	@bash tools/step.sh new "$${NAME:-}" "$${FROM:-}"

# A target that does not exist (make setp3): one line pointing to make help.
# A missing file that a rule needs keeps make's words, less its "needed by".
.DEFAULT:
	@$(if $(filter $@,$(MAKECMDGOALS)),$(error make $@: no such target; make help lists them),$(error No rule to make target '$@'))

clean:
	rm -rf build $(PROGRAMS) $(ROW_PROGRAMS) $(BROKEN) step4_warp/run-racy $(ALIASES) $(ROW_ALIASES)

# ================================================================ accuracy
# Owned by the accuracy lesson (ACCURACY.md); kept in one block so that the
# rest of the Makefile can change around it.
# extras/<name>/reduce.cu: programs on the same harness that are NOT steps
# (make bench, make diff and make new never see them). `make` and `make test`
# build them with the same %/run rule and flags as the steps.
EXTRA_PROGRAMS := $(patsubst %/reduce.cu,%/run,$(sort $(wildcard extras/*/reduce.cu)))

.PHONY: accuracy clean-extras
all: $(EXTRA_PROGRAMS)
test-build: $(EXTRA_PROGRAMS)
clean: clean-extras

# Every program in check mode over three fills and n = 2^10 .. 2^28, the
# CPU's float loops beside them, step 8 timed against its Kahan variant:
# $(OUT_DIR)/<gpu>-accuracy.csv and its chart; planned to take one to two
# minutes on an H200 (tools/accuracy.py says how). ACCURACY.md's block is
# `make docs`'s, from the reference (OUT_DIR=plots/reference).
# The chart and its Chinese twin (--chinese; without the font one line says
# so) are drawn even when some run failed (failed rows are never plotted);
# make still reports the failure.
accuracy: gpu-check $(PROGRAMS) $(EXTRA_PROGRAMS) $(NEED_VENV)
	$(PYTHON) tools/accuracy.py --root . --out-dir $(OUT_DIR); status=$$?; \
	if [ $$status -le 1 ]; then \
	    $(PLOT_PYTHON) tools/accuracy_chart.py --chinese $(OUT_DIR)/*-accuracy.csv || status=$$?; \
	fi; exit $$status

# `make plot` redraws the accuracy chart of RESULTS's -accuracy.csv sibling
# (the file `make docs` reads), once one has been measured.
ACCURACY_CSV := $(patsubst %.csv,%-accuracy.csv,$(RESULTS))
.PHONY: accuracy-chart
plot: accuracy-chart
accuracy-chart: $(NEED_VENV)
	@if [ -f $(ACCURACY_CSV) ]; then $(PLOT_PYTHON) tools/accuracy_chart.py --chinese $(ACCURACY_CSV); fi

# The variance lesson (ACCURACY.md): one-pass, two-pass and Welford variances
# of 1024-float rows with their mean shifted far from 0, in float32 on the CPU
# with the warp-per-row kernel's order and fused multiply-adds (tools/
# variance.c says why those are the GPU's bits). No GPU needed; the output
# is the same on every machine, and make test checks the committed one. The
# chart comes with its Chinese twin (--chinese; without the font one line
# says so).
.PHONY: variance
test-build: build/variance
build/variance: tools/variance.c | build
	$(CC) -O2 -std=c11 -Wall -Wextra -Wpedantic -ffp-contract=off -o $@ $< -lm
variance: build/variance $(NEED_VENV)
	@mkdir -p $(OUT_DIR)
	./build/variance > $(OUT_DIR)/variance.csv
	$(PLOT_PYTHON) tools/variance_chart.py --chinese $(OUT_DIR)/variance.csv

# `make plot` redraws the committed variance chart (and its Chinese twin)
# from RESULTS's folder's variance.csv, with no build.
VARIANCE_CSV := $(dir $(RESULTS))variance.csv
.PHONY: variance-chart
plot: variance-chart
variance-chart: $(NEED_VENV)
	@if [ -f $(VARIANCE_CSV) ]; then $(PLOT_PYTHON) tools/variance_chart.py --chinese $(VARIANCE_CSV); fi

# The bfloat16 lesson (ACCURACY.md): n ones and n uniform values summed with
# a bfloat16 accumulator, in float and exactly, on the CPU (bfloat16 emulated
# by rounding a float, common/rows_ref.c). No GPU needed; make test checks
# that the ones stall at 256 and that ACCURACY.md quotes its output.
.PHONY: bf16-sum
test-build: build/bf16_sum
build/bf16_sum: tools/bf16_sum.c common/rows_ref.c common/harness.c $(HEADERS) | build
	$(CC) -O2 -std=c11 -Wall -Wextra -Wpedantic -Wno-unknown-pragmas -ffp-contract=off -Icommon \
	    -o $@ tools/bf16_sum.c \
	    common/rows_ref.c common/harness.c -lm
bf16-sum: build/bf16_sum
	./build/bf16_sum

# How wide part 2's checks are: every fill's tolerance at 1024 and 2^20
# columns (rows/README.md, "How correctness is checked"). No GPU needed.
.PHONY: tolerances
test-build: build/tolerances
build/tolerances: tools/tolerances.c common/rows_ref.c common/harness.c $(HEADERS) | build
	$(CC) -O2 -std=c11 -Wall -Wextra -Wpedantic -fopenmp -Icommon -o $@ tools/tolerances.c \
	    common/rows_ref.c common/harness.c -lm
tolerances: build/tolerances
	./build/tolerances

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

# ================================================================ multigpu
# Beyond one GPU (multigpu/README.md): the sum over every visible GPU with
# NCCL, and NCCL's all-reduce of vectors. Built only where nccl.h is found:
# in NCCL_HOME (a pip wheel's nvidia/nccl, or NVIDIA's tarball), else in the
# CUDA toolkit, /usr/include or /usr/local/include. Without it `make` skips
# it and `make multigpu` says how to get NCCL, in one line.
NCCL_HOME ?=
NCCL_INC := $(firstword $(foreach d,$(if $(NCCL_HOME),$(NCCL_HOME)/include) $(CUDA_HOME)/include \
              /usr/include /usr/local/include,$(if $(wildcard $(d)/nccl.h),$(d))))
# The library beside the header, if there is one there (a pip wheel ships
# libnccl.so.2 only, hence -l: with the full name); else the linker's own path.
NCCL_LIBDIR := $(firstword $(foreach d,$(if $(NCCL_INC),$(patsubst %/include,%,$(NCCL_INC))/lib64 \
                 $(patsubst %/include,%,$(NCCL_INC))/lib),$(if $(wildcard $(d)/libnccl.so.2),$(d))))
NCCL_LDFLAGS := $(if $(NCCL_LIBDIR),-L$(NCCL_LIBDIR) -Xlinker -rpath -Xlinker $(NCCL_LIBDIR)) \
                -l:libnccl.so.2
MG_PROGRAM := multigpu/run
MG_SOURCES := multigpu/multigpu.c multigpu/plan.c multigpu/plan.h step9_singlepass/reduce.cu
NO_NCCL_LINE := make multigpu: NCCL not found (no nccl.h in NCCL_HOME, $(CUDA_HOME)/include, \
  /usr/include or /usr/local/include): pip install nvidia-nccl-cu13 and set \
  NCCL_HOME=<site-packages>/nvidia/nccl, or install NVIDIA's libnccl-dev, then make multigpu again
# The summary charts' inputs: committed by tools/nccl_check.sh's run.
MG_SUM_CSV ?= plots/reference/h200x2-multigpu.csv
MG_ALLREDUCE_CSV ?= plots/reference/h200x2-allreduce.csv

.PHONY: multigpu nccl-check multigpu-chart
ifneq ($(NCCL_INC),)
all: $(MG_PROGRAM)
test-build: $(MG_PROGRAM)
multigpu: $(MG_PROGRAM)
else
multigpu:
	$(error $(NO_NCCL_LINE))
endif
test-build: build/multigpu_tests
clean: clean-multigpu

# Step 9's kernel once more, as an object of its own: reused, not copied.
build/mg/step9.o: step9_singlepass/reduce.cu $(HEADERS) build/arch.stamp
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -c $< -o $@

build/mg/plan.o: multigpu/plan.c multigpu/plan.h $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Imultigpu -c $< -o $@

build/mg/multigpu.o: multigpu/multigpu.c multigpu/plan.h $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Imultigpu $(filter-out -I/usr/include,-I$(NCCL_INC)) -c $< -o $@

build/hash/multigpu.c: $(MG_SOURCES) $(HASH_INPUTS) build/arch.stamp
	@mkdir -p $(@D)
	@h=$$($(PYTHON) tools/code_hash.py --flags '$(HASH_FLAGS)' --program multigpu) || exit 1; \
	 printf 'const char reduce_code_hash[] = "%s";\n' "$$h" > $@

$(MG_PROGRAM): build/mg/multigpu.o build/mg/plan.o build/mg/step9.o build/hash/multigpu.o \
               $(COMMON_OBJ) build/arch.stamp
	$(NVCC) $(NVFLAGS) -o $@ build/mg/multigpu.o build/mg/plan.o build/mg/step9.o \
	    build/hash/multigpu.o $(COMMON_OBJ) $(NCCL_LDFLAGS) $(LDLIBS)

# Shards and options, tested without a GPU or NCCL.
build/multigpu_tests: tests/multigpu_tests.c tests/expect.h multigpu/plan.c multigpu/plan.h common/harness.c \
                      $(HEADERS) | build
	$(CC) $(CFLAGS) -Imultigpu -o $@ tests/multigpu_tests.c multigpu/plan.c common/harness.c \
	    -lm $(LDLIBS)

# Every check and measurement of the multigpu part on this machine's GPUs,
# into OUT_DIR/nccl (tools/nccl_check.sh; about 5 minutes on two H200s).
nccl-check: gpu-check
	GIT_REV=$(GIT_REV) bash tools/nccl_check.sh $(OUT_DIR)/nccl

# `make plot` draws the multigpu charts once their CSVs exist.
plot: multigpu-chart
multigpu-chart: $(NEED_VENV)
	@if [ -f $(MG_SUM_CSV) ] || [ -f $(MG_ALLREDUCE_CSV) ]; then \
	    $(PLOT_PYTHON) tools/multigpu_chart.py --chinese --sum $(MG_SUM_CSV) --allreduce $(MG_ALLREDUCE_CSV); fi

.PHONY: clean-multigpu
clean-multigpu:
	rm -f $(MG_PROGRAM)
# ============================================================ end multigpu
