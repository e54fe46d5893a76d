"""The agreement report on hand-built labels, against values worked out by hand.

Four sentences, three annotators, has_error: (1,1,1), (0,0,0), (1,1,0), (0,0,1).
Krippendorff's alpha (nominal): n = 12 pairable values, n_0 = n_1 = 6, the off-diagonal coincidences sum to
4 (units 3 and 4 give o_01 = o_10 = 1 each), so alpha = 1 - (n - 1) * 4 / (2 * 6 * 6) = 1 - 44/72 = 7/18.
Gwet's AC1: p_a = (1 + 1 + 1/3 + 1/3) / 4 = 2/3, pi_1 = (1 + 0 + 2/3 + 1/3) / 4 = 1/2,
p_e = (1/4 + 1/4) / (2 - 1) = 1/2, AC1 = (2/3 - 1/2) / (1/2) = 1/3.
"""

import math

import pytest

from annotation.models import Annotator
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
    assert row.primary.coefficient == "krippendorff_alpha"
    assert row.primary.value == pytest.approx(7 / 18)
    assert row.secondary.coefficient == "gwet_ac1"
    assert row.secondary.value == pytest.approx(1 / 3)
    assert (row.n_units, row.n_ratings) == (4, 12)
    assert row.primary.ci_low <= row.primary.value <= row.primary.ci_high
    assert report.label_source == REAL


def test_it_orders_ratings_per_annotator(hand_labels, project):
    ratings = task_ratings(project, "fv", REAL)
    # Columns follow the annotators' ids: a, b, c were created in that order.
    assert ratings.ratings.tolist() == [[1, 1, 1], [0, 0, 0], [1, 1, 0], [0, 0, 1]]


def test_it_leaves_out_checks_failed_submissions_and_simulated_labels(hand_labels, project):
    hit, units = hand_labels
    check = make_check(hit)
    annotate(hit, [check], [False], name="check-taker")
    annotate(hit, units, [False, True, False, True], name="cheater", passed=False)
    annotate(hit, units, [False, True, False, True], name="robot", provider=Annotator.Provider.SIMULATED)
    report = agreement_report(project, n_boot=0)
    assert overall(report).primary.value == pytest.approx(7 / 18)
    assert overall(report).n_ratings == 12


def test_a_manager_override_makes_a_failed_submission_count(hand_labels, project):
    hit, units = hand_labels
    assignment = annotate(hit, units, [True, False, True, False], name="d", passed=False)
    assert overall(agreement_report(project, n_boot=0)).n_ratings == 12
    assignment.grade.override_passed = True
    assignment.grade.save()
    assert overall(agreement_report(project, n_boot=0)).n_ratings == 16


def test_simulated_labels_are_read_only_without_real_ones_or_on_request(project):
    hit, units = fv_units(project, 4)
    for name, answers in ANSWERS.items():
        annotate(hit, units, answers, name=name, provider=Annotator.Provider.SIMULATED)
    assert label_source(project) == SIMULATED
    assert overall(agreement_report(project, n_boot=0)).primary.value == pytest.approx(7 / 18)
    annotate(hit, units, [True, True, True, True], name="human")
    assert label_source(project) == REAL
    assert overall(agreement_report(project, n_boot=0)).n_ratings == 4
    assert label_source(project, include_simulated=True) == BOTH
    assert overall(agreement_report(project, include_simulated=True, n_boot=0)).n_ratings == 16


def test_it_breaks_down_by_domain_length_and_input_type(hand_labels, project):
    other, units = fv_units(project, 2, domain="sport")
    annotate(other, units, [True, True], name="a")
    annotate(other, units, [True, True], name="b")
    report = agreement_report(project, n_boot=0)
    groups = {(row.breakdown, row.group): row for row in report.for_task("fv")}
    assert groups["domain", "news"].primary.value == pytest.approx(7 / 18)
    assert groups["domain", "sport"].n_units == 2
    assert math.isnan(groups["domain", "sport"].primary.value)  # one category only: alpha undefined
    assert groups["length", "short"].n_units == 6
    assert groups["input_type", "non-dialogue"].n_ratings == 16
