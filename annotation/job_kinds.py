"""The codes of the annotation app's kinds of long work, as Job rows store them; annotation/tasks.py and
annotation/crowd/tasks.py register them with their tasks (corpus.jobs). A module that imports nothing, so that the
services, the quality rules, the crowd and the views name them without importing one another."""

HITS_BUILD = "hits_build"
TOPUPS = "topups"
REVIEW_TALLY = "review_tally"
QUALITY = "quality"
PUBLISH = "crowd_publish"
COSTS = "costs"
