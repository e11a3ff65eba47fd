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
bench: gpu-check $(PROGRAMS) $(ROW_PROGRAMS) $(BACK_PROGRAMS) $(NEED_VENV) | build
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

# `make plot` (defined in the Makefile, with the pictures of mk/accuracy.mk,
# mk/diagrams.mk and mk/multigpu.mk) draws the charts of RESULTS (default:
# the committed reference) and of its siblings <name>-rows.csv (part 2) and
# <name>-back.csv (part 3), into
# its folder; --chinese: each chart also as <name>.zh-CN.png for the Chinese
# pages (tools/chart_zh.py; the font is pinned in tools/requirements.txt).
# No README is written: that is `make docs`.
ROW_RESULTS = $(patsubst %.csv,%-rows.csv,$(RESULTS))
BACK_RESULTS = $(patsubst %.csv,%-back.csv,$(RESULTS))   # part 3's (tools/bench.py --only back)
WIDTHS_RESULTS = $(patsubst %.csv,%-rows-widths.csv,$(RESULTS))   # part 2's map (make bench-widths)

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
# Only the program profiled is built (tools/steps.py dir maps STEP to its
# folder); a STEP written another way (03, step3_idle) builds them all.
PROFILE_PROGRAM = $(or $(addsuffix /run,$(shell $(PYTHON) tools/steps.py dir '$(STEP)' 2> /dev/null)),$(PROGRAMS) $(ROW_PROGRAMS))
profile: $(if $(STEP),gpu-check $(PROFILE_PROGRAM))
	@test -n "$(STEP)" || { echo "usage: make profile STEP=K (K = a step number, rows/K, cub or rows/cub)"; exit 2; }
	$(PYTHON) tools/profile.py --root . --step $(STEP)

# SHAPE=RxC[,RxC...]: part 2's counters at those shapes only (part 1 is left
# alone), each merged into OUT_DIR's <gpu>-rows-profile-RxC.csv in place of
# the programs profiled.
profile-all: gpu-check $(PROGRAMS) $(ROW_PROGRAMS)
	if [ -z '$(SHAPE)' ]; then \
	    $(PYTHON) tools/profile.py --root . $(or $(ONLY_FLAG),--all) --out-dir $(OUT_DIR) && \
	    $(PYTHON) tools/profile.py --root . $(or $(ONLY_FLAG),--all) --rows --out-dir $(OUT_DIR); \
	else for s in $$(echo '$(SHAPE)' | tr , ' '); do \
	    $(PYTHON) tools/profile.py --root . $(or $(ONLY_FLAG),--all) --rows --shape "$$s" \
	        --out-dir build/profile --merge-into $(OUT_DIR) || exit 2; done; fi

# Part 2's map: each op's last step, the copies and PyTorch from 256 to 262144
# columns at 256 MiB of x (tools/bench.py --widths), and its chart in both
# languages: make bench with --widths, which draws what it wrote.
# BENCH_FLAGS="--round K --run-id ID" puts its rounds in separate calls.
.PHONY: bench-widths
bench-widths:
	@$(MAKE) --no-print-directory bench BENCH_FLAGS='--widths $(BENCH_FLAGS)'

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
