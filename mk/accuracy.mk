# ================================================================ accuracy
# Owned by the accuracy lesson (ACCURACY.md), in a file of its own so that
# the rest of the build can change around it.
# extras/<name>/reduce.cu: programs on the same harness that are NOT steps
# (make bench, make diff and make new never see them). `make` and `make test`
# build them with the same %/run rule and flags as the steps.
EXTRA_PROGRAMS := $(patsubst %/reduce.cu,%/run,$(sort $(wildcard extras/*/reduce.cu)))

.PHONY: accuracy
ALL_MORE += $(EXTRA_PROGRAMS)
TEST_BUILD_MORE += $(EXTRA_PROGRAMS)
CLEAN_MORE += $(EXTRA_PROGRAMS)

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
PLOT_PARTS += accuracy-chart
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
TEST_BUILD_MORE += build/variance
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
PLOT_PARTS += variance-chart
variance-chart: $(NEED_VENV)
	@if [ -f $(VARIANCE_CSV) ]; then $(PLOT_PYTHON) tools/variance_chart.py --chinese $(VARIANCE_CSV); fi

# The bfloat16 lesson (ACCURACY.md): n ones and n uniform values summed with
# a bfloat16 accumulator, in float and exactly, on the CPU (bfloat16 emulated
# by rounding a float, common/rows_ref.c). No GPU needed; make test checks
# that the ones stall at 256 and that ACCURACY.md quotes its output.
.PHONY: bf16-sum
TEST_BUILD_MORE += build/bf16_sum
build/bf16_sum: tools/bf16_sum.c common/rows_ref.c common/harness.c $(HEADERS) | build
	$(CC) -O2 -std=c11 -Wall -Wextra -Wpedantic -Wno-unknown-pragmas -ffp-contract=off -Icommon \
	    -o $@ tools/bf16_sum.c \
	    common/rows_ref.c common/harness.c -lm
bf16-sum: build/bf16_sum
	./build/bf16_sum

# How wide part 2's checks are: every fill's tolerance at 1024 and 2^20
# columns (rows/README.md, "How correctness is checked"). No GPU needed.
.PHONY: tolerances
TEST_BUILD_MORE += build/tolerances
build/tolerances: tools/tolerances.c common/rows_ref.c common/harness.c $(HEADERS) | build
	$(CC) -O2 -std=c11 -Wall -Wextra -Wpedantic -fopenmp -Icommon -o $@ tools/tolerances.c \
	    common/rows_ref.c common/harness.c -lm
tolerances: build/tolerances
	./build/tolerances
