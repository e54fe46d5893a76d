"""The agreement report on hand-built labels, against values worked out by hand.

The headline reads each unit's first two counted labels (by the time their submissions counted), the other values
all counted labels; both are checked.

Four sentences, three annotators a, b, c submitting in that order, has_error: (1,1,1), (0,0,0), (1,1,0), (0,0,1).
All labels. Krippendorff's alpha (nominal): n = 12 pairable values, n_0 = n_1 = 6, the off-diagonal coincidences
sum to 4 (units 3 and 4 give o_01 = o_10 = 1 each), so alpha = 1 - (n - 1) * 4 / (2 * 6 * 6) = 1 - 44/72 = 7/18.
Gwet's AC1: p_a = (1 + 1 + 1/3 + 1/3) / 4 = 2/3, pi_1 = (1 + 0 + 2/3 + 1/3) / 4 = 1/2,
p_e = (1/4 + 1/4) / (2 - 1) = 1/2, AC1 = (2/3 - 1/2) / (1/2) = 1/3.
First two labels (a and b): (1,1), (0,0), (1,1), (0,0): no disagreement with both categories used, so
alpha = 1 - 0 / D_e = 1 and AC1 = (1 - 1/2) / (1 - 1/2) = 1.

`test_the_headline_reads_the_first_two_labels_in_submission_order` has its own hand values.
"""

import math
from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import Annotator, Hit, Task, Unit
from corpus.models import Summary
from exports.report import agreement_report
from exports.selectors import BOTH, REAL, SIMULATED, label_source, task_ratings

from .labels import annotate, fv_units, make_check

ANSWERS = {"a": [True, False, True, False], "b": [True, False, True, False], "c": [True, False, False, True]}


@pytest.fixture
def hand_labels(project):
    hit, units = fv_units(project, 4)
    for name, answers in ANSWERS.items():
        annotate(hit, units, answers, name=name)
    return hit, units


def overall(report, task="fv"):
    return report.overall(task)


def test_it_matches_the_hand_values(hand_labels, project):
    report = agreement_report(project, n_boot=200)
    row = overall(report)
    assert row.primary.coefficient == row.primary_all.coefficient == "krippendorff_alpha"
    assert row.secondary.coefficient == row.secondary_all.coefficient == "gwet_ac1"
    # The headline: first two labels.
    assert row.primary.value == pytest.approx(1)
    assert row.secondary.value == pytest.approx(1)
    assert (row.n_units, row.n_ratings) == (4, 8)
    # Beside it: all labels.
    assert row.primary_all.value == pytest.approx(7 / 18)
    assert row.secondary_all.value == pytest.approx(1 / 3)
    assert (row.primary_all.n_units, row.n_ratings_all) == (4, 12)
    assert row.primary_all.ci_low <= row.primary_all.value <= row.primary_all.ci_high
    assert report.label_source == REAL


def test_it_orders_ratings_per_annotator(hand_labels, project):
    ratings = task_ratings(project, "fv", REAL)
    # Columns follow the annotators' ids: a, b, c were created in that order.
    assert ratings.ratings.tolist() == [[1, 1, 1], [0, 0, 0], [1, 1, 0], [0, 0, 1]]
    assert ratings.first_two.tolist() == [[1, 1], [0, 0], [1, 1], [0, 0]]


def test_the_headline_reads_the_first_two_labels_in_submission_order(project):
    """Six sentences in two summaries, three annotators, has_error. Summary 1: c submitted first, then a, then b.
    Summary 2: b first, then a and c at the same moment, c's submission created first (the lower id).
        summary 1  a: 1 0 1 0   b: 1 0 0 1   c: 1 1 1 0    first two (c, a): (1,1) (1,0) (1,1) (0,0)
        summary 2  a: 0 1       b: 0 0       c: 1 1        first two (b, c): (0,1) (0,1)
    Had the first two been taken by annotator (a, b), summary 1 would give (1,1) (0,0) (1,0) (0,1) and summary 2
    (0,0) (1,0): other values.

    First two labels: per unit (n_0, n_1) = (0,2) (1,1) (0,2) (2,0) (1,1) (1,1); n = 12, n_0 = 5, n_1 = 7.
    Alpha: sum_c o_cc = 12 - 6 = 6 (three split units, o_01 = o_10 = 1 each), so
        alpha = 1 - (n - 1)(n - sum o_cc) / (n^2 - n_0^2 - n_1^2) = 1 - 11 * 6 / (144 - 25 - 49) = 1 - 66/70 = 2/35.
    AC1: p_a = 3/6 = 1/2 (three units agree), pi_1 = (1 + 1/2 + 1 + 0 + 1/2 + 1/2) / 6 = 7/12,
        p_e = 2 * 7/12 * 5/12 = 35/72, AC1 = (1/2 - 35/72) / (1 - 35/72) = (1/72) / (37/72) = 1/37.
    All labels: (0,3) (2,1) (1,2) (2,1) (2,1) (1,2); n = 18, n_0 = 8, n_1 = 10. A unit with m = 3 labels adds
    (n_0(n_0 - 1) + n_1(n_1 - 1)) / 2 to sum_c o_cc: 3 for (0,3), 1 for the five split units, so sum o_cc = 8 and
        alpha = 1 - 17 * (18 - 8) / (324 - 64 - 100) = 1 - 170/160 = -1/16.
    AC1: per unit p_a = 1 for (0,3), 2/6 = 1/3 for a split unit: p_a = (1 + 5/3) / 6 = 4/9;
        pi_1 = (1 + 1/3 + 2/3 + 1/3 + 1/3 + 2/3) / 6 = 5/9, p_e = 2 * 5/9 * 4/9 = 40/81,
        AC1 = (4/9 - 40/81) / (1 - 40/81) = (-4/81) / (41/81) = -4/41.
    """
    now = timezone.now()
    first, units = fv_units(project, 4)
    second, more = fv_units(project, 2, domain="sport")
    for name, answers, minutes in (("a", [True, False, True, False], 1), ("b", [True, False, False, True], 2),
                                   ("c", [True, True, True, False], 0)):
        annotate(first, units, answers, name=name, submitted_at=now + timedelta(minutes=minutes))
    for name, answers, minutes in (("b", [False, False], 0), ("c", [True, True], 1), ("a", [False, True], 1)):
        annotate(second, more, answers, name=name, submitted_at=now + timedelta(minutes=minutes))

    row = overall(agreement_report(project, n_boot=0))

    assert (row.n_units, row.n_ratings, row.n_ratings_all) == (6, 12, 18)
    assert row.primary.value == pytest.approx(2 / 35)
    assert row.secondary.value == pytest.approx(1 / 37)
    assert row.primary_all.value == pytest.approx(-1 / 16)
    assert row.secondary_all.value == pytest.approx(-4 / 41)
    flat = row.flat()
    assert (flat["primary_value"], flat["secondary_value"]) == (round(2 / 35, 4), round(1 / 37, 4))
    assert (flat["all_labels_primary_value"], flat["all_labels_secondary_value"]) == (-0.0625, round(-4 / 41, 4))


def test_a_units_top_up_labels_are_that_units_labels(hand_labels, project):
    """A label on another unit of the same sentence (a top-up HIT shows the same item again) joins the sentence's
    labels, after the first two."""
    hit, units = hand_labels
    # Another HIT holding units of the same sentences (a HIT of its own summary here, so that this test needs
    # nothing of how top-up HITs are numbered).
    other = Summary.objects.create(document=hit.document, model="m2", text="t", text_sha256="z")
    again = Hit.objects.create(project=project, task=Task.FACT_VERIFICATION, document=hit.document, summary=other,
                               position=1)
    copies = [Unit.objects.create(hit=again, task=Task.FACT_VERIFICATION, position=i, text=unit.text,
                                  summary_sentence=unit.summary_sentence) for i, unit in enumerate(units)]
    annotate(again, copies, [False, False, False, False], name="d")
    row = overall(agreement_report(project, n_boot=0))
    assert (row.n_units, row.n_ratings, row.n_ratings_all) == (4, 8, 16)
    assert row.primary.value == pytest.approx(1)


def test_it_leaves_out_checks_failed_submissions_and_simulated_labels(hand_labels, project):
    hit, units = hand_labels
    check = make_check(hit)
    annotate(hit, [check], [False], name="check-taker")
    annotate(hit, units, [False, True, False, True], name="cheater", passed=False)
    annotate(hit, units, [False, True, False, True], name="robot", provider=Annotator.Provider.SIMULATED)
    report = agreement_report(project, n_boot=0)
    assert overall(report).primary_all.value == pytest.approx(7 / 18)
    assert overall(report).n_ratings_all == 12
    assert overall(report).primary.value == pytest.approx(1)  # a and b: the cheater submitted later


def test_a_manager_override_makes_a_failed_submission_count(hand_labels, project):
    hit, units = hand_labels
    assignment = annotate(hit, units, [True, False, True, False], name="d", passed=False)
    assert overall(agreement_report(project, n_boot=0)).n_ratings_all == 12
    assignment.grade.override_passed = True
    assignment.grade.save()
    assert overall(agreement_report(project, n_boot=0)).n_ratings_all == 16


def test_simulated_labels_are_read_only_without_real_ones_or_on_request(project):
    hit, units = fv_units(project, 4)
    for name, answers in ANSWERS.items():
        annotate(hit, units, answers, name=name, provider=Annotator.Provider.SIMULATED)
    assert label_source(project) == SIMULATED
    assert overall(agreement_report(project, n_boot=0)).primary_all.value == pytest.approx(7 / 18)
    annotate(hit, units, [True, True, True, True], name="human")
    assert label_source(project) == REAL
    assert overall(agreement_report(project, n_boot=0)).n_ratings_all == 4
    assert label_source(project, include_simulated=True) == BOTH
    assert overall(agreement_report(project, include_simulated=True, n_boot=0)).n_ratings_all == 16


def test_it_breaks_down_by_domain_length_and_input_type(hand_labels, project):
    other, units = fv_units(project, 2, domain="sport")
    annotate(other, units, [True, True], name="a")
    annotate(other, units, [True, True], name="b")
    report = agreement_report(project, n_boot=0)
    groups = {(row.breakdown, row.group): row for row in report.for_task("fv")}
    assert groups["domain", "news"].primary_all.value == pytest.approx(7 / 18)
    assert groups["domain", "news"].primary.value == pytest.approx(1)
    assert groups["domain", "sport"].n_units == 2
    assert math.isnan(groups["domain", "sport"].primary.value)  # one category only: alpha undefined
    assert groups["length", "short"].n_units == 6
    assert (groups["input_type", "non-dialogue"].n_ratings, groups["input_type", "non-dialogue"].n_ratings_all) == (
        12, 16)
