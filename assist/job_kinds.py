"""The codes of the assist app's kinds of long work, as Job rows store them; assist/tasks.py registers them with their
tasks (corpus.jobs). A module that imports nothing, so that naming a kind loads no model library."""

ASSIST = "assist"
EVALUATOR = "evaluator"
