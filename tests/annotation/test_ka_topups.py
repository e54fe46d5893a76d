"""Key-fact alignment under the adaptive policy: a pair of a grid whose two labels disagree gets its third label in a
top-up HIT of that pair alone (with attention checks that are pairs too), shown as a list rather than a grid, from
somebody who labelled neither; the first-round grid stays a grid."""

import pytest
from django.urls import reverse
from django.utils.html import escape

from annotation.models import Assignment, AttentionCheck, Hit, UnitState
from annotation.quality.grading import check_outcome
from annotation.redundancy import Verdict
from annotation.services.answers import save_answers
from annotation.services.assignment import reserve_next_hit
from annotation.services.topups import topups_build
from tests.quality.conftest import with_checks
from tests.work import annotator_for, crowd_annotator, first_round_hit, passing, work_next_hit

pytestmark = pytest.mark.django_db


def split_alignment_pair(project, *, rate: float = 0.2):
    """Two agreeing KV labels open the KA HITs; two KA annotators then disagree on the first pair of the first grid.
    Returns the grid, the split pair and the two annotators."""
    for name in ("k1", "k2"):
        work_next_hit(crowd_annotator(name, project), project, "kv")
    grid = first_round_hit(project, "ka")
    split = grid.units.order_by("position").first()
    ann, bea = crowd_annotator("ann", project), crowd_annotator("bea", project)
    work_next_hit(ann, project, "ka")
    work_next_hit(bea, project, "ka", split=split)
    with_checks(project, rate)
    return grid, split, ann, bea


def test_a_split_pair_gets_a_top_up_hit_of_that_pair_with_an_attention_check(adaptive):
    grid, split, _, _ = split_alignment_pair(adaptive)
    assert topups_build(adaptive)["ka"] == 1
    grid.refresh_from_db()
    assert grid.places == 2  # the grid is not asked for a third label: only the split pair is
    topup = Hit.objects.get(project=adaptive, task="ka", round=1)
    assert (topup.summary_id, topup.places, topup.unit_count) == (grid.summary_id, 1, topup.units.count())
    (unit,) = topup.units.filter(attention_check__isnull=True)
    assert unit.origin_id == split.pk
    assert (unit.text, unit.sentence_text, unit.keyfact_id, unit.summary_sentence_id, unit.highlighted) == (
        split.text, split.sentence_text, split.keyfact_id, split.summary_sentence_id, split.highlighted)
    checks = AttentionCheck.objects.filter(unit__hit=topup)
    assert checks.count() >= 1
    shown = {split.text, split.sentence_text}
    for check in checks:
        assert check.expected == {"aligned": False}
        assert check.kind in (AttentionCheck.Kind.KA_FAKE_KEYFACT, AttentionCheck.Kind.KA_UNRELATED_SENTENCE)
        # One side is the HIT's own, the other from another document.
        assert (check.unit.text in shown) != (check.unit.sentence_text in shown)
        assert check.origin_document_id != topup.document_id
    assert list(topup.units.order_by("position").values_list("position", flat=True)) == list(
        range(topup.units.count()))


def test_a_list_of_pairs_numbers_its_key_facts_and_sentences_as_it_shows_them(adaptive):
    split_alignment_pair(adaptive)
    topups_build(adaptive)
    topup = Hit.objects.get(project=adaptive, task="ka", round=1)
    rows, columns = {}, {}
    for unit in topup.units.order_by("position"):
        assert unit.row == rows.setdefault(unit.text, len(rows))
        assert unit.column == columns.setdefault(unit.sentence_text, len(columns))


def test_the_two_who_disagreed_are_not_offered_it_and_a_third_label_settles_the_pair(adaptive):
    _, split, ann, bea = split_alignment_pair(adaptive)
    topups_build(adaptive)
    topup = Hit.objects.get(project=adaptive, task="ka", round=1)
    for had in (ann, bea):
        taken = reserve_next_hit(had, adaptive, "ka", confirmed=True)
        assert taken is None or taken.hit != topup
    Assignment.objects.filter(annotator__in=[ann, bea], status="reserved").update(status="returned")
    third = work_next_hit(crowd_annotator("cid", adaptive), adaptive, "ka", split=split, yes=False)
    assert third.hit == topup
    state = UnitState.objects.get(unit=split)
    assert (state.verdict, state.counted, state.settled_round) == (Verdict.SETTLED, 3, 1)
    assert topups_build(adaptive)["ka"] == 0


def test_without_checks_the_top_up_holds_the_split_pair_alone(adaptive):
    _, split, _, _ = split_alignment_pair(adaptive, rate=0)
    topups_build(adaptive)
    (unit,) = Hit.objects.get(project=adaptive, task="ka", round=1).units.all()
    assert (unit.origin_id, unit.row, unit.column) == (split.pk, 0, 0)


def test_answering_yes_on_a_pair_check_fails_it(adaptive):
    split_alignment_pair(adaptive)
    topups_build(adaptive)
    topup = Hit.objects.get(project=adaptive, task="ka", round=1)
    assignment = reserve_next_hit(crowd_annotator("cid", adaptive), adaptive, "ka", confirmed=True)
    assert assignment.hit == topup
    save_answers(assignment=assignment, answers={unit: {"aligned": True} for unit in topup.units.all()})
    outcome = check_outcome(assignment)
    assert outcome.checks and len(outcome.failed) == len(outcome.checks)
    save_answers(assignment=assignment, answers={unit: passing(unit, True) for unit in topup.units.all()})
    assert not check_outcome(assignment).failed


def test_the_page_shows_a_top_up_as_a_list_of_pairs(client, adaptive, annotator):
    _, split, _, _ = split_alignment_pair(adaptive)
    topups_build(adaptive)
    topup = Hit.objects.get(project=adaptive, task="ka", round=1)
    assignment = reserve_next_hit(annotator_for(annotator), adaptive, "ka", confirmed=True)
    assert assignment.hit == topup
    client.force_login(annotator)
    html = client.get(reverse("hit_page", args=[assignment.public_id])).content.decode()
    assert 'id="ka-matrix"' not in html
    assert html.count('class="item ka-pair"') == topup.units.count()
    assert "Can the key-fact be inferred from this sentence?" in html
    assert ">Key-fact</dt>" in html and ">Summary sentence</dt>" in html
    assert escape(split.text) in html and escape(split.sentence_text) in html
    assert f"{topup.units.count()} key-fact and sentence pair" in html
    assert "top-up" not in html.lower() and "round" not in html.lower()



def test_the_page_still_shows_a_first_round_hit_as_a_grid(client, adaptive, annotator):
    split_alignment_pair(adaptive)
    topups_build(adaptive)
    assignment = reserve_next_hit(annotator_for(annotator), adaptive, "ka", confirmed=True)
    Assignment.objects.filter(pk=assignment.pk).update(hit=first_round_hit(adaptive, "ka"))
    client.force_login(annotator)
    html = client.get(reverse("hit_page", args=[assignment.public_id])).content.decode()
    assert 'id="ka-matrix"' in html and 'class="item ka-pair"' not in html
