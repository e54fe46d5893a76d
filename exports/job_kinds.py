"""The codes of the exports app's kinds of long work, as Job rows store them; exports/tasks.py registers them with their
tasks (corpus.jobs). A module that imports nothing, so that naming a kind loads none of the analytics' libraries."""

EXPORT = "export"
ANALYTICS = "analytics"
