"""Settling and top-ups under real concurrency, on PostgreSQL (CI): two submissions that split a unit at the same
moment, and top-up jobs that run at once, release one extra label for it, never two."""

import pytest

from annotation.models import Hit, UnitState
from annotation.redundancy import Verdict
from annotation.services.answers import save_answers
from annotation.services.assignment import reserve_next_hit, submit_assignment
from annotation.services.topups import topups_build
from corpus.models import Project, RedundancyPolicy
from tests.work import answers_for, build_all, crowd_annotator, import_small, race


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_two_splitting_submissions_and_three_top_up_jobs_at_once_release_one_label(monkeypatch):
    project = import_small(Project.objects.create(slug="split", name="Split",
                                                  redundancy_policy=RedundancyPolicy.ADAPTIVE))
    build_all(project)
    hit = Hit.objects.filter(project=project, task="fv").order_by("position").first()
    split = hit.units.order_by("position").first()
    assignments = []
    for name, yes in (("ann", True), ("bea", False)):
        assignment = reserve_next_hit(crowd_annotator(name, project), project, "fv", confirmed=True)
        assert assignment.hit == hit
        save_answers(assignment=assignment, answers={
            unit: answers_for(unit, yes=yes if unit.pk == split.pk else True) for unit in hit.units.all()})
        assignments.append(assignment)

    # The job the splitting submission queues is held back here, so that three builds race for the unit.
    monkeypatch.setattr("annotation.services.topups.topups_start", lambda **kwargs: None)
    race(lambda assignment: submit_assignment(assignment=assignment), assignments, timeout=60)
    state = UnitState.objects.get(unit=split)
    assert (state.verdict, state.counted, state.yes, state.target) == (Verdict.NEEDS_MORE, 2, 1, 3)
    assert set(UnitState.objects.filter(unit__hit=hit).exclude(unit=split).values_list("verdict", flat=True)) \
        == {Verdict.SETTLED}

    assert sorted(race(lambda _: topups_build(project)["fv"], range(3), timeout=60)) == [0, 0, 1]
    assert list(Hit.objects.filter(project=project, round__gt=0).values_list("round", "units__origin")) \
        == [(1, split.pk)]
