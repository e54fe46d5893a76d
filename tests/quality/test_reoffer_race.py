"""Annotators racing for the place that a failed submission frees (paper 3.4): one of them gets it. A transactional
test of its own, apart from tests/quality/test_reoffer.py, whose tests share one project inside a transaction."""

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import Assignment, Grade, Hit, Task
from annotation.services.assignment import reserve_next_hit
from corpus.models import Project
from tests.work import build_all, crowd_annotator, import_generated, race


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_annotators_racing_for_a_freed_place_never_overfill_the_hit():
    project = import_generated(Project.objects.create(slug="freed", name="Freed"), documents=1, summarizers=1)
    build_all(project)
    hit = Hit.objects.get(project=project, task=Task.FACT_VERIFICATION)
    now = timezone.now()
    for name, passed in (("a", True), ("b", False), ("c", True)):
        assignment = Assignment.objects.create(hit=hit, annotator=crowd_annotator(name), status="submitted",
                                               expires_at=now + timedelta(hours=1), submitted_at=now)
        Grade.objects.create(assignment=assignment, passed=passed)
    racers = [crowd_annotator(f"racer-{i}") for i in range(8)]
    got = race(lambda annotator: reserve_next_hit(annotator, project, Task.FACT_VERIFICATION, confirmed=True), racers, timeout=60)
    winners = [assignment for assignment in got if assignment is not None]
    assert len(winners) == 1 and winners[0].hit == hit  # one freed place, one annotator
    assert Assignment.objects.holding_a_place().filter(hit=hit).count() == project.annotators_per_unit

