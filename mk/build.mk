# ---------------------------------------------------------------- build
# The programs of the three parts, their code hashes, the grader's builds and the
# stepK links (the harness objects, flags and step lists are the Makefile's).
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
# results row carries it, see tools/code_hash.py. -S (here and in code-hash):
# it needs the standard library only, and site's start-up hooks cost more
# than the hash.
define HASH_RECIPE
@mkdir -p $(@D)
@h=$$($(PYTHON) -S tools/code_hash.py --flags '$(HASH_FLAGS)' --program $(or $(HASH_DIR),$*)) || exit 1; \
 printf 'const char reduce_code_hash[] = "%s";\n' "$$h" > $@
endef

build/hash/%.o: build/hash/%.c
	$(CC) $(CFLAGS) -c $< -o $@

# A program's source is compiled once into build/obj/, with the same flags,
# then linked with its code hash and the harness: a new revision (every
# commit, any edit: build/version.o) relinks the programs, it does not
# compile them again.
# (The rules themselves are PART_RULES, below: one definition for the three parts.)

# The grader's builds: the same program with its watch on where the work is
# done (common/gpu_work.c, the "gpu-work" check), wrapped around the
# contract's reduce_pass(), row_forward() or back_run() by the linker. Never linked into
# the programs make bench times. build/graded/<name>/run is a student's
# source (tools/grade_source.sh); build/monitored/<dir>/run is <dir>/run's
# twin, from the same object and code hash (make check STEP=, the GPU suite).
CUPTI_LIBRARY := $(firstword $(wildcard $(CUDA_HOME)/lib64/libcupti.so $(CUDA_HOME)/lib/libcupti.so \
                   $(CUDA_HOME)/extras/CUPTI/lib64/libcupti.so $(CUDA_HOME)/targets/*/lib/libcupti.so))
WATCH_CFLAGS := $(CFLAGS) -I$(CUDA_HOME)/extras/CUPTI/include $(if $(CUPTI_LIBRARY),-DCUPTI_LIBRARY='"$(CUPTI_LIBRARY)"')
WATCH_SUM  := build/gpu_work_sum.o -Xlinker --wrap=reduce_pass
WATCH_ROWS := build/gpu_work_rows.o -Xlinker --wrap=row_forward
WATCH_BACK := build/gpu_work_back.o -Xlinker --wrap=back_run

# Rewritten when the toolkit (its CUPTI) or the flags change, as arch.stamp.
build/watch.stamp: FORCE | build
	@tmp=$@.$$$$.tmp; echo '$(WATCH_CFLAGS)' > $$tmp; \
	 cmp -s $$tmp $@ && rm -f $$tmp || mv -f $$tmp $@

build/gpu_work_sum.o: common/gpu_work.c $(HEADERS) build/watch.stamp | build
	$(CC) $(WATCH_CFLAGS) -c $< -o $@

build/gpu_work_rows.o: common/gpu_work.c $(HEADERS) build/watch.stamp | build
	$(CC) $(WATCH_CFLAGS) -DGPU_WORK_ROWS -c $< -o $@

build/gpu_work_back.o: common/gpu_work.c $(HEADERS) build/watch.stamp | build
	$(CC) $(WATCH_CFLAGS) -DGPU_WORK_BACK -c $< -o $@

# The rules of one part's programs, written once and made for each part:
# $(1) its source's name (reduce: part 1, rows: part 2, back: part 3), $(2)
# its harness, $(3) the watch's object and $(4) the watch's link flags. A program, its object,
# its code hash, and the grader's two builds of it.
define PART_RULES
build/hash/%.c: %/$(1).cu $$(HASH_INPUTS) build/arch.stamp
	$$(HASH_RECIPE)

build/obj/%/$(1).o: %/$(1).cu $$(HEADERS) build/arch.stamp
	@mkdir -p $$(@D)
	$$(NVCC) $$(NVFLAGS) -c $$< -o $$@

%/run: build/obj/%/$(1).o build/hash/%.o $$($(2)) build/arch.stamp
	$$(NVCC) $$(NVFLAGS) -o $$@ $$< build/hash/$$*.o $$($(2)) $$(LDLIBS)

build/graded/%/run: build/obj/build/graded/%/$(1).o build/hash/build/graded/%.o $$($(2)) $(3) build/arch.stamp
	$$(NVCC) $$(NVFLAGS) -o $$@ $$< build/hash/build/graded/$$*.o $$($(2)) $$($(4)) $$(LDLIBS)

build/monitored/%/run: build/obj/%/$(1).o build/hash/%.o $$($(2)) $(3) build/arch.stamp
	@mkdir -p $$(@D)
	$$(NVCC) $$(NVFLAGS) -o $$@ $$< build/hash/$$*.o $$($(2)) $$($(4)) $$(LDLIBS)
endef
$(eval $(call PART_RULES,reduce,HARNESS,build/gpu_work_sum.o,WATCH_SUM))
$(eval $(call PART_RULES,rows,ROWS_HARNESS,build/gpu_work_rows.o,WATCH_ROWS))
$(eval $(call PART_RULES,back,BACK_HARNESS,build/gpu_work_back.o,WATCH_BACK))

# `make code-hash DIR=step3_idle`: the hash make builds into that program.
code-hash:
	@test -n "$(DIR)" || { echo "usage: make code-hash DIR=step3_idle"; exit 2; }
	@$(PYTHON) -S tools/code_hash.py --flags '$(HASH_FLAGS)' --program $(DIR)

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
# Parts 2 and 3 in their folders: `make back/step0` links back/step0 ->
# step0_thread; `make back/step0_thread` builds back/step0_thread/run.
define FOLDER_ALIAS
$(dir $(1))$(firstword $(subst _, ,$(notdir $(1)))): $(1)/run
	@$$(call LINK_STEP,$(notdir $(1)),$$@)
endef
$(foreach d,$(ROW_STEP_DIRS) $(BACK_STEP_DIRS),$(eval $(call FOLDER_ALIAS,$(d))))
# And a step's folder in any part builds its program: `make step3_idle`.
$(STEP_DIRS) $(ROW_STEP_DIRS) $(BACK_STEP_DIRS): %: %/run
