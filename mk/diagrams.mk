# ---------------------------------------------------------------- diagrams
# Access-pattern pictures computed from each step's index expressions by
# tools/patterns.py (no GPU): plots/diagrams/<step>-*.png. `make plot` draws
# them too; the <!-- BEGIN figures --> block of each step README that shows
# them is `make docs`'s.
.PHONY: diagrams
diagrams: $(NEED_VENV)
	$(PLOT_PYTHON) tools/diagrams.py --root .

PLOT_PARTS += diagrams
