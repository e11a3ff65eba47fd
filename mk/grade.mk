# ---------------------------------------------------------------- grader
# make check ends in make's one error line, from here: kept first in the
# file so that the line (file and line number included) stays short.
check: check-run
	@$(eval CHECK_LINE := $(shell cat $(CHECK_VERDICT) 2>/dev/null; rm -f $(CHECK_VERDICT)))$(if $(CHECK_LINE),$(error $(CHECK_LINE)))

# The grader: one program through sizes, fills, offsets, onehot positions,
# repeated runs and compute-sanitizer. Exit 0 only if every check passed.
#   STEP=K, STEP=rows/K, STEP=back/K, STEP=cub, STEP=rows/cub, STEP=rows/copy or
#     STEP=back/copy3: a shipped program;
#   SOURCE=path/reduce.cu (or .../rows.cu, .../back.cu): a student's file, built here with
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

# The work itself is tools/check.sh's; make gives it what it reads here.
.PHONY: check-run
check-run:
	@mkdir -p build; CHECK_VERDICT=$(CHECK_VERDICT) PYTHON='$(PYTHON)' MAKE='$(MAKE)' MAKE_QUIET='$(if $(V),,-s)' \
	    GRADER_FLAGS="$(strip $(GRADE_FLAGS) $(SPEED_FLAGS))" \
	    REPORT_FLAGS="$(if $(JUNIT),--junit '$(JUNIT)') $(if $(GRADESCOPE),--gradescope '$(GRADESCOPE)') $(if $(SUMMARY),--summary '$(SUMMARY)')" \
	    bash tools/check.sh

# A whole class: every SUBMISSIONS/<student>/reduce.cu (or rows.cu, back.cu) graded as
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
