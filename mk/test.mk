# ---------------------------------------------------------------- tests
build/unit_tests: tests/unit_tests.c tests/expect.h common/harness.c common/rows_ref.c common/back_ref.c $(HEADERS) | build
	$(CC) $(CFLAGS) -o $@ tests/unit_tests.c common/harness.c common/rows_ref.c common/back_ref.c -lm $(LDLIBS)

# Part 3's driver on the CPU (tests/back_fake.c: the device half and a
# LayerNorm backward in C, in good and broken modes), for tests/cli_tests.sh.
BACK_FAKE_SRC := tests/back_fake.c common/back_driver.c common/back_ref.c common/rows_ref.c common/harness.c
build/back_fake: $(BACK_FAKE_SRC) $(HEADERS) | build
	$(CC) $(CFLAGS) -o $@ $(BACK_FAKE_SRC) -lm $(LDLIBS)
TEST_BUILD_MORE += build/back_fake
# The same, as part 3's bar (back/baseline_copy3's dx = x + dy).
build/back_fake_copy3: $(BACK_FAKE_SRC) $(HEADERS) | build
	$(CC) $(CFLAGS) -DBACK_FAKE_COPY3 -o $@ $(BACK_FAKE_SRC) -lm $(LDLIBS)
TEST_BUILD_MORE += build/back_fake_copy3
# The same, as a bfloat16 softmax backward (y, dy, dx in bfloat16, sums in
# float), and as a bfloat16 LayerNorm backward (x, dy, dx bfloat16, the rest float).
build/back_fake_bf16: $(BACK_FAKE_SRC) $(HEADERS) | build
	$(CC) $(CFLAGS) -DBACK_FAKE_BF16 -o $@ $(BACK_FAKE_SRC) -lm $(LDLIBS)
build/back_fake_ln_bf16: $(BACK_FAKE_SRC) $(HEADERS) | build
	$(CC) $(CFLAGS) -DBACK_FAKE_LN_BF16 -o $@ $(BACK_FAKE_SRC) -lm $(LDLIBS)
build/back_fake_copy3_bf16: $(BACK_FAKE_SRC) $(HEADERS) | build
	$(CC) $(CFLAGS) -DBACK_FAKE_COPY3 -DBACK_FAKE_BF16 -o $@ $(BACK_FAKE_SRC) -lm $(LDLIBS)
TEST_BUILD_MORE += build/back_fake_bf16 build/back_fake_ln_bf16 build/back_fake_copy3_bf16

# Part 3's steps on the CPU (tests/back_emu.h: blocks one at a time, their
# threads as coroutines taking turns), with the driver and back_fake.c's device half,
# for tests/cli_tests.sh: each launch `k<<<g, b>>>(` becomes
# `emu_launch(g, b, k, `.
CXX ?= g++
BACK_EMU := $(patsubst back/%/back.cu,build/back_emu/%/run,$(wildcard back/step[0-9]*_*/back.cu))
build/back_emu/%/run: back/%/back.cu tests/back_emu.h build/back_emu/device.o build/back_driver.o build/back_ref.o build/rows_ref.o build/harness.o $(HEADERS) | build
	@mkdir -p $(@D)
	sed -E 's/([A-Za-z_0-9]+)<<<([^,]+), *([^>]+)>>>\(/emu_launch(\2, \3, \1, /' $< > $(@D)/back.cpp
	$(CXX) -std=c++20 -O1 -Wall -Wextra -Wno-unknown-pragmas -include tests/back_emu.h -Icommon \
	    -I$(CUDA_HOME)/include -c $(@D)/back.cpp -o $(@D)/back.o
	$(CXX) -o $@ $(@D)/back.o build/back_emu/device.o build/back_driver.o build/back_ref.o build/rows_ref.o build/harness.o \
	    -lm -lpthread $(LDLIBS)
# back_fake.c's device half: the same object for every step, compiled once.
build/back_emu/device.o: tests/back_fake.c $(HEADERS) | build
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DBACK_FAKE_DEVICE_ONLY -c $< -o $@
TEST_BUILD_MORE += $(BACK_EMU)
# and the links back/stepN, as make makes them (cli_tests.sh checks each step has one).
TEST_BUILD_MORE += $(BACK_ALIASES)

# Deliberately broken programs: the grader must FAIL every one of them.
# Hand-written ones in tests/broken/<name>/, and mutants: a shipped step with
# one classic bug put in by tests/broken/mutants.txt (tools/mutate.sh).
BROKEN  := $(patsubst %/reduce.cu,%/run,$(wildcard tests/broken/*/reduce.cu)) \
           $(patsubst %/rows.cu,%/run,$(wildcard tests/broken/rows/*/rows.cu)) \
           $(patsubst %/back.cu,%/run,$(wildcard tests/broken/back/*/back.cu))
MUTANT_LINES := $(shell sed -n 's/^\([a-z0-9_]*\) *| *\([a-z0-9_/]*\) *|.*/\1:\2/p' tests/broken/mutants.txt)
MUTANT_PART = $(if $(filter rows/%,$(1)),rows,$(if $(filter back/%,$(1)),back))
SUM_MUTANTS := $(foreach m,$(MUTANT_LINES),$(if $(call MUTANT_PART,$(lastword $(subst :, ,$(m)))),,$(firstword $(subst :, ,$(m)))))
ROW_MUTANTS := $(foreach m,$(MUTANT_LINES),$(if $(filter rows,$(call MUTANT_PART,$(lastword $(subst :, ,$(m))))),$(firstword $(subst :, ,$(m)))))
BACK_MUTANTS := $(foreach m,$(MUTANT_LINES),$(if $(filter back,$(call MUTANT_PART,$(lastword $(subst :, ,$(m))))),$(firstword $(subst :, ,$(m)))))
MUTANTS := $(addprefix build/mutants/,$(addsuffix /run,$(SUM_MUTANTS))) \
           $(addprefix build/mutants/rows/,$(addsuffix /run,$(ROW_MUTANTS))) \
           $(addprefix build/mutants/back/,$(addsuffix /run,$(BACK_MUTANTS)))
MUTANT_SOURCES := $(patsubst %/run,%/reduce.cu,$(addprefix build/mutants/,$(addsuffix /run,$(SUM_MUTANTS)))) \
                  $(patsubst %/run,%/rows.cu,$(filter build/mutants/rows/%,$(MUTANTS))) \
                  $(patsubst %/run,%/back.cu,$(filter build/mutants/back/%,$(MUTANTS)))

# Each mutant's source is made from its own step's source only, so a step of
# your own (make new), or an edit to another step, rebuilds no mutant.
define MUTANT_RULE
$(if $(filter rows/%,$(2)),build/mutants/rows/$(1)/rows.cu: $(2)/rows.cu,$(if $(filter back/%,$(2)),build/mutants/back/$(1)/back.cu: $(2)/back.cu,build/mutants/$(1)/reduce.cu: $(2)/reduce.cu)) \
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
	     "matplotlib and the chart font: installing tools/requirements.txt into .venv (once, about 200 MB)"
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
MONITORED = $(addprefix build/monitored/,$(PROGRAMS) $(ROW_PROGRAMS) $(BACK_PROGRAMS) $(BROKEN) $(MUTANTS))
.PHONY: monitored broken
monitored: $(MONITORED)
broken: $(BROKEN)

# The grader's watch (common/gpu_work.c, part 1's build) on the CPU, for
# tests/test_grade.py: CUPTI stood in for by tests/fake_cupti.c, loaded by the
# watch from its full path, the CUDA runtime by stubs in tests/watch_fake.c.
# Only where the toolkit has cupti.h (the watch needs it to be built at all).
WATCH_FAKE_CFLAGS := $(CFLAGS) -I$(CUDA_HOME)/extras/CUPTI/include
ifneq ($(wildcard $(CUDA_HOME)/include/cupti.h $(CUDA_HOME)/extras/CUPTI/include/cupti.h),)
build/libfake_cupti.so: tests/fake_cupti.c | build
	$(CC) $(WATCH_FAKE_CFLAGS) -fPIC -shared -o $@ $<
build/watch_fake: tests/watch_fake.c common/gpu_work.c $(HEADERS) build/libfake_cupti.so | build
	$(CC) $(WATCH_FAKE_CFLAGS) -DWATCH_FAKE_PASS -c tests/watch_fake.c -o build/watch_fake_pass.o
	$(CC) $(WATCH_FAKE_CFLAGS) -DCUPTI_LIBRARY='"$(abspath build/libfake_cupti.so)"' \
	    -DFAKE_CUPTI='"$(abspath build/libfake_cupti.so)"' -o $@ tests/watch_fake.c common/gpu_work.c \
	    build/watch_fake_pass.o -Wl,--wrap=reduce_pass -ldl -lpthread
TEST_BUILD_MORE += build/watch_fake
endif
