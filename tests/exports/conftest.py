import pytest

from .labels import annotate, fv_units


@pytest.fixture
def labelled(project):
    """One FV HIT of 4 sentences labelled by three annotators (the FV alpha is 7/18, see test_report)."""
    hit, units = fv_units(project, 4)
    for name, answers in {"a": [True, False, True, False], "b": [True, False, True, False],
                          "c": [True, False, False, True]}.items():
        annotate(hit, units, answers, name=name)
    return project


# Ten FV sentences (1 = error). Three careful annotators and a spammer who says "error" on every sentence it sees and
# got past its attention checks; careful-b's one false alarm (sentence 8) makes it a little less reliable than
# careful-a. Sentence 9: careful-a says no error, careful-b and the spammer say error: the majority says error,
# Dawid-Skene no error (tests/exports/test_second_opinion.py works it through).
SPAMMER_ANSWERS = {
    "careful-a": [0, 0, 0, 0, 0, 0, 1, 1, 0, 0],
    "careful-b": [0, 0, 0, 0, 0, 0, 1, 1, 1, 1],
    "careful-c": [0, 0, 0, 0, 0, 0, 1, 1, 0, None],
    "spam-worker-77": [1, 1, 1, 1, 1, 1, 1, 1, None, 1],
}
# (attention checks, failed) of each one's submission.
SPAMMER_CHECKS = {"careful-a": (4, 0), "careful-b": (4, 1), "careful-c": (2, 0), "spam-worker-77": (5, 0)}


@pytest.fixture
def with_spammer(project):
    hit, units = fv_units(project, 10)
    for name, answers in SPAMMER_ANSWERS.items():
        annotate(hit, units, [None if answer is None else bool(answer) for answer in answers], name=name,
                 checks=SPAMMER_CHECKS[name])
    return project
