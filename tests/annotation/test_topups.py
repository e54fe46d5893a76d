"""Labels per unit under the redundancy policy: the first round asks for two labels (adaptive, N = 3), a unit whose two
counted labels disagree gets one more in a top-up HIT built for it, the top-up goes to somebody who has not labelled
the unit, and the unit settles on the majority the fixed design would give."""

import pytest

from annotation.models import Assignment, Grade, Hit, UnitState
from annotation.redundancy import Verdict
from annotation.services.assignment import reserve_next_hit
from annotation.services.grades import grade_override
from annotation.services.topups import topups_build, wanting
from corpus.models import RedundancyPolicy
from tests.quality.conftest import with_checks
from tests.work import add_assistance, build_all, crowd_annotator, first_round_hit, import_small, work_next_hit

pytestmark = pytest.mark.django_db


def test_a_first_round_hit_asks_two_labels_of_each_unit_under_adaptive(adaptive):
    hit = first_round_hit(adaptive, "fv")
    assert hit.places == 2
    ann, bea, cid = (crowd_annotator(name, adaptive) for name in ("ann", "bea", "cid"))
    assert reserve_next_hit(ann, adaptive, "fv", confirmed=True).hit == hit
    assert reserve_next_hit(bea, adaptive, "fv", confirmed=True).hit == hit
    third = reserve_next_hit(cid, adaptive, "fv", confirmed=True)
    assert third is None or third.hit != hit


def test_agreeing_labels_settle_every_unit_and_ask_for_nothing_more(adaptive, django_capture_on_commit_callbacks):
    ann, bea = crowd_annotator("ann", adaptive), crowd_annotator("bea", adaptive)
    with django_capture_on_commit_callbacks() as queued:
        work_next_hit(ann, adaptive, "fv")
        work_next_hit(bea, adaptive, "fv")
    hit = first_round_hit(adaptive, "fv")
    states = UnitState.objects.filter(unit__hit=hit)
    assert states.count() == hit.units.count()
    assert {(s.verdict, s.counted, s.target, s.settled_round) for s in states} == {(Verdict.SETTLED, 2, 2, 0)}
    assert not queued and not wanting(adaptive)


def test_a_split_unit_gets_one_more_label_in_a_top_up_hit_from_somebody_else(adaptive,
                                                                              django_capture_on_commit_callbacks):
    hit = first_round_hit(adaptive, "fv")
    split = hit.units.order_by("position")[1]
    ann, bea, cid = (crowd_annotator(name, adaptive) for name in ("ann", "bea", "cid"))
    work_next_hit(ann, adaptive, "fv")
    with django_capture_on_commit_callbacks() as queued:
        work_next_hit(bea, adaptive, "fv", split=split)
    state = UnitState.objects.get(unit=split)
    assert (state.verdict, state.counted, state.yes, state.target) == (Verdict.NEEDS_MORE, 2, 1, 3)
    assert len(queued) == 1  # the top-up job, once the submission commits
    assert [s.unit_id for s in wanting(adaptive)] == [split.pk]

    assert topups_build(adaptive)["fv"] == 1
    assert topups_build(adaptive)["fv"] == 0  # built once: the unit's HITs now promise three labels
    topup = Hit.objects.get(project=adaptive, round=1)
    (unit,) = topup.units.all()
    assert (topup.task, topup.summary_id, topup.places, unit.origin_id) == ("fv", hit.summary_id, 1, split.pk)
    assert (unit.text, unit.highlighted, unit.ai_category) == (split.text, split.highlighted, split.ai_category)
    # Neither annotator who labelled the unit is offered its top-up; a third one is.
    for had in (ann, bea):
        taken = reserve_next_hit(had, adaptive, "fv", confirmed=True)
        assert taken is None or taken.hit != topup
    assert reserve_next_hit(cid, adaptive, "fv", confirmed=True).hit == topup
    Assignment.objects.filter(annotator__in=[ann, bea], status="reserved").update(status="returned")

    work_next_hit(cid, adaptive, "fv", split=split, yes=True)  # cid sides with bea: an error
    state.refresh_from_db()
    assert (state.verdict, state.counted, state.yes, state.settled_round) == (Verdict.SETTLED, 3, 2, 1)
    assert not wanting(adaptive)


def test_every_top_up_hit_carries_an_attention_check(project):
    project.redundancy_policy = RedundancyPolicy.ADAPTIVE
    project.save(update_fields=["redundancy_policy"])
    import_small(project)
    add_assistance(project)
    with_checks(project, 0.2)
    build_all(project)
    hit = first_round_hit(project, "kv")
    split = hit.units.filter(attention_check__isnull=True).order_by("position").first()
    work_next_hit(crowd_annotator("ann", project), project, "kv")
    work_next_hit(crowd_annotator("bea", project), project, "kv", split=split)
    assert topups_build(project)["kv"] == 1
    topup = Hit.objects.get(project=project, round=1)
    assert topup.units.filter(origin=split).count() == 1
    assert topup.units.filter(attention_check__isnull=False).count() >= 1
    assert topup.unit_count == topup.units.count()


def test_a_split_alignment_pair_gets_a_top_up_hit_of_its_own(adaptive):
    # KA HITs exist once key-fact validation settles: two agreeing KV labels settle it under adaptive.
    for name in ("k1", "k2"):
        work_next_hit(crowd_annotator(name, adaptive), adaptive, "kv")
    hit = first_round_hit(adaptive, "ka")
    assert hit is not None and hit.places == 2
    split = hit.units.order_by("position").first()
    work_next_hit(crowd_annotator("ann", adaptive), adaptive, "ka")
    work_next_hit(crowd_annotator("bea", adaptive), adaptive, "ka", split=split)
    assert topups_build(adaptive)["ka"] == 1
    hit.refresh_from_db()
    topup = Hit.objects.get(project=adaptive, round=1)
    assert hit.places == 2 and list(topup.units.values_list("origin_id", flat=True)) == [split.pk]
    work_next_hit(crowd_annotator("cid", adaptive), adaptive, "ka", split=split, yes=False)
    assert UnitState.objects.get(unit=split).verdict == Verdict.SETTLED


def test_a_label_that_stops_counting_reopens_its_unit(adaptive, manager):
    hit = first_round_hit(adaptive, "fv")
    ann, bea = crowd_annotator("ann", adaptive), crowd_annotator("bea", adaptive)
    work_next_hit(ann, adaptive, "fv")
    second = work_next_hit(bea, adaptive, "fv")
    assert set(UnitState.objects.filter(unit__hit=hit).values_list("verdict", flat=True)) == {Verdict.SETTLED}
    grade = Grade.objects.get(assignment=second)
    grade_override(grade=grade, passed=False, reason="Copied the AI", user=manager)
    states = UnitState.objects.filter(unit__hit=hit)
    assert {(s.verdict, s.counted, s.target) for s in states} == {(Verdict.COLLECTING, 1, 2)}
    # Its HIT is offered again for the label it lost: a first-round place, not a top-up.
    assert reserve_next_hit(crowd_annotator("cid", adaptive), adaptive, "fv", confirmed=True).hit == hit


def test_fixed_projects_keep_three_places_and_never_build_top_ups(project):
    import_small(project)
    build_all(project)
    hit = first_round_hit(project, "fv")
    assert hit.places == 3
    split = hit.units.order_by("position").first()
    for name, answer in (("ann", True), ("bea", False)):
        work_next_hit(crowd_annotator(name, project), project, "fv", split=split if not answer else None)
    assert UnitState.objects.get(unit=split).verdict == Verdict.COLLECTING
    assert topups_build(project) == {"fv": 0, "kv": 0, "ka": 0}


def test_a_top_ups_labels_are_its_units_for_the_reviewers_tally(adaptive):
    from annotation.job_kinds import REVIEW_TALLY
    from annotation.models import SplitUnit
    from tests.conftest import numbers_now

    hit = first_round_hit(adaptive, "fv")
    split = hit.units.order_by("position").first()
    work_next_hit(crowd_annotator("ann", adaptive), adaptive, "fv")
    work_next_hit(crowd_annotator("bea", adaptive), adaptive, "fv", split=split)
    topups_build(adaptive)
    work_next_hit(crowd_annotator("cid", adaptive), adaptive, "fv", split=split)
    numbers_now(adaptive, REVIEW_TALLY)
    (row,) = SplitUnit.objects.filter(project=adaptive)
    assert (row.unit_id, row.votes, row.yes) == (split.pk, 3, 2)


def test_past_the_budget_a_split_unit_goes_to_review_instead_of_a_top_up(adaptive):
    from decimal import Decimal

    adaptive.budget_usd = Decimal("0.01")
    adaptive.save(update_fields=["budget_usd"])
    hit = first_round_hit(adaptive, "fv")
    split = hit.units.order_by("position").first()
    work_next_hit(crowd_annotator("ann", adaptive), adaptive, "fv")
    work_next_hit(crowd_annotator("bea", adaptive), adaptive, "fv", split=split)
    assert topups_build(adaptive)["escalated"] == 1
    assert UnitState.objects.get(unit=split).verdict == Verdict.ESCALATED
    assert not Hit.objects.filter(project=adaptive, round__gt=0).exists()


def test_the_progress_page_says_how_many_items_are_settled_and_keeps_polling_while_one_waits(client, adaptive,
                                                                                            manager):
    hit = first_round_hit(adaptive, "fv")
    split = hit.units.order_by("position").first()
    work_next_hit(crowd_annotator("ann", adaptive), adaptive, "fv")
    work_next_hit(crowd_annotator("bea", adaptive), adaptive, "fv", split=split)
    client.force_login(manager)
    page = client.get(f"/projects/{adaptive.slug}/progress/").content.decode()
    settled = hit.units.count() - 1
    assert f"Items settled: <strong>{settled}</strong>" in page and "1 waiting for more labels" in page
    assert 'hx-trigger="every 5s"' in page


def test_a_queued_top_up_job_serves_every_unit_that_waits_and_a_running_one_gets_a_successor(adaptive):
    from annotation.services.topups import topups_start
    from corpus.models import Job

    first = topups_start(project=adaptive)
    assert topups_start(project=adaptive) == first  # queued: it has not read the units yet
    Job.objects.filter(pk=first.pk).update(status=Job.Status.RUNNING)
    second = topups_start(project=adaptive)
    assert second != first and second.status == Job.Status.QUEUED


def test_under_lead_a_split_unit_asks_two_labels_in_one_top_up_hit(adaptive):
    adaptive.redundancy_policy = RedundancyPolicy.LEAD
    adaptive.save(update_fields=["redundancy_policy"])
    hit = first_round_hit(adaptive, "fv")
    split = hit.units.order_by("position")[1]
    ann, bea, cid, dan, eve = (crowd_annotator(name, adaptive) for name in ("ann", "bea", "cid", "dan", "eve"))
    work_next_hit(ann, adaptive, "fv")
    work_next_hit(bea, adaptive, "fv", split=split)
    state = UnitState.objects.get(unit=split)
    assert (state.verdict, state.counted, state.target) == (Verdict.NEEDS_MORE, 2, 4)

    assert topups_build(adaptive)["fv"] == 1
    topup = Hit.objects.get(project=adaptive, round=1)
    assert topup.places == 2 and [unit.origin_id for unit in topup.units.all()] == [split.pk]
    assert topups_build(adaptive)["fv"] == 0
    # The first of the two labels leaves the unit leading by one: it waits for the second, already asked.
    work_next_hit(cid, adaptive, "fv", split=split, yes=True)
    state.refresh_from_db()
    assert (state.verdict, state.counted, state.target) == (Verdict.NEEDS_MORE, 3, 4)
    assert not wanting(adaptive) and topups_build(adaptive)["fv"] == 0
    assert reserve_next_hit(dan, adaptive, "fv", confirmed=True).hit == topup
    Assignment.objects.filter(annotator=dan, status="reserved").update(status="returned")
    work_next_hit(eve, adaptive, "fv", split=split, yes=True)
    state.refresh_from_db()
    assert (state.verdict, state.counted, state.yes, state.settled_round) == (Verdict.SETTLED, 4, 3, 1)
