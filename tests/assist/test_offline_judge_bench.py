"""The offline judge benchmark's pooled figure: its interval resamples whole documents."""

from benchmarks.offline_judge import HELD_OUT, SETS, interval, report


def rows(*pairs):
    return [(planted, predicted, "", "") for planted, predicted in pairs]


RIGHT = rows(("entity", "entity"), ("no_error", "no_error"))
WRONG = rows(("entity", "no_error"), ("no_error", "relation"))


def test_identical_documents_give_no_spread():
    assert interval([RIGHT] * 6) == (1.0, 1.0)
    assert interval([WRONG] * 6) == (0.0, 0.0)


def test_the_interval_spans_the_documents_drawn():
    # Two documents: drawn twice over, both right (1.0), one of each (0.5) or both wrong (0.0), each pair at least
    # a quarter of the time, so the 2.5th and 97.5th percentiles are the extremes.
    assert interval([RIGHT, WRONG]) == (0.0, 1.0)
    # Eight right, two wrong: the pooled figure is 0.8 and lies inside; drawing every document wrong is unlikely.
    documents = [RIGHT] * 8 + [WRONG] * 2
    pooled = report([row for document in documents for row in document])["balanced_accuracy"]
    low, high = interval(documents)
    assert pooled == 0.8
    assert 0.5 <= low < pooled < high <= 1.0


def test_pooled_blind_sets_are_all_held_out():
    assert set(SETS["blind8-10"]) <= HELD_OUT
