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
