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
# The summary charts' inputs: committed by tools/nccl_check.sh's run, named
# <gpu>x<N>-multigpu.csv and <gpu>x<N>-allreduce.csv by the machine that ran it.
MG_RESULTS ?= plots/reference

.PHONY: multigpu nccl-check multigpu-chart
ifneq ($(NCCL_INC),)
ALL_MORE += $(MG_PROGRAM)
TEST_BUILD_MORE += $(MG_PROGRAM)
multigpu: $(MG_PROGRAM)
else
multigpu:
	$(error $(NO_NCCL_LINE))
endif
TEST_BUILD_MORE += build/multigpu_tests
CLEAN_MORE += $(MG_PROGRAM)

build/mg/plan.o: multigpu/plan.c multigpu/plan.h $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Imultigpu -c $< -o $@

build/mg/multigpu.o: multigpu/multigpu.c multigpu/plan.h $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(filter-out -I/usr/include,-I$(NCCL_INC)) $(CFLAGS) -Imultigpu -c $< -o $@   # NCCL's nccl.h first: a toolkit copy must not shadow it

build/hash/multigpu.c: HASH_DIR := multigpu
build/hash/multigpu.c: $(MG_SOURCES) $(HASH_INPUTS) build/arch.stamp
	$(HASH_RECIPE)

# Step 9's kernel is step9_singlepass/run's own object (the same source and
# flags: compiled once for both): reused, not copied.
MG_STEP9_OBJ := build/obj/step9_singlepass/reduce.o
ifneq ($(NCCL_INC),)
$(MG_PROGRAM): build/mg/multigpu.o build/mg/plan.o $(MG_STEP9_OBJ) build/hash/multigpu.o \
               $(COMMON_OBJ) build/arch.stamp
	$(NVCC) $(NVFLAGS) -o $@ build/mg/multigpu.o build/mg/plan.o $(MG_STEP9_OBJ) \
	    build/hash/multigpu.o $(COMMON_OBJ) $(NCCL_LDFLAGS) $(LDLIBS)
else
$(MG_PROGRAM):   # without nccl.h: the one line make multigpu says, not the compiler's errors
	$(error $(NO_NCCL_LINE))
endif

# Shards and options, tested without a GPU or NCCL.
build/multigpu_tests: tests/multigpu_tests.c tests/expect.h multigpu/plan.c multigpu/plan.h common/harness.c \
                      $(HEADERS) | build
	$(CC) $(CFLAGS) -Imultigpu -o $@ tests/multigpu_tests.c multigpu/plan.c common/harness.c \
	    -lm $(LDLIBS)

# Every check and measurement of the multigpu part on this machine's GPUs,
# into OUT_DIR/nccl (tools/nccl_check.sh; about 5 minutes on two H200s);
# then its two CSVs and its summary (<gpu>x<N>-nccl-check.log) beside the
# other results of OUT_DIR, where the pages,
# the charts and the stale marks read them.
nccl-check: gpu-check
	GIT_REV=$(GIT_REV) bash tools/nccl_check.sh $(OUT_DIR)/nccl
	cp $(OUT_DIR)/nccl/*-multigpu.csv $(OUT_DIR)/nccl/*-allreduce.csv $(OUT_DIR)/
	for f in $(OUT_DIR)/nccl/*-multigpu.csv; do \
	    cp $(OUT_DIR)/nccl/nccl-check-summary.txt $(OUT_DIR)/$$(basename $$f -multigpu.csv)-nccl-check.log; done
	@echo "nccl-check: then make plot docs (the charts and the Measured table read these files)"

# `make plot` draws the multigpu charts once their CSVs exist.
PLOT_PARTS += multigpu-chart
multigpu-chart: $(NEED_VENV)
	@for f in $(wildcard $(MG_RESULTS)/*-multigpu.csv); do \
	    $(PLOT_PYTHON) tools/multigpu_chart.py --chinese --sum $$f --allreduce $${f%-multigpu.csv}-allreduce.csv \
	    || exit 1; done
