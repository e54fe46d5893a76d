"""Reservations under real concurrency, on PostgreSQL (CI): SELECT ... FOR UPDATE SKIP LOCKED must hold."""

from collections import Counter

import pytest

from annotation.models import Assignment, Hit
from annotation.services.assignment import reserve_next_hit
from corpus.models import Project
from tests.work import build_all, complete, crowd_annotator, import_generated, import_small, race

WORKERS = 20


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_it_never_overfills_a_hit_when_20_annotators_race():
    project = import_generated(Project.objects.create(slug="race", name="Race"), documents=10, summarizers=4)
    build_all(project)
    assert Hit.objects.filter(project=project, task="fv").count() == 40
    annotators = [crowd_annotator(f"racer-{i}") for i in range(WORKERS)]

    def work(annotator):
        # Each annotator keeps taking and submitting FV HITs until none is left for them.
        while (assignment := reserve_next_hit(annotator, project, "fv", confirmed=True)) is not None:
            complete(assignment)

    race(work, annotators)

    hits = Hit.objects.filter(project=project, task="fv")
    per_hit = Counter(Assignment.objects.filter(hit__in=hits).values_list("hit_id", flat=True))
    # Every HIT got exactly N annotators: never more, and nothing was left behind.
    assert per_hit == {hit.pk: project.annotators_per_unit for hit in hits}
    pairs = Counter(Assignment.objects.values_list("hit_id", "annotator_id"))
    assert max(pairs.values()) == 1
    assert set(Assignment.objects.values_list("status", flat=True)) == {"submitted"}


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_concurrent_first_reservations_of_one_annotator_give_one_assignment():
    project = import_small(Project.objects.create(slug="twice", name="Twice"))
    build_all(project)
    annotator = crowd_annotator("double-clicker")
    got = race(lambda _: reserve_next_hit(annotator, project, "fv", confirmed=True), range(4), timeout=60)
    assert Assignment.objects.filter(annotator=annotator).count() == 1
    assert len(got) == 4 and len({assignment.pk for assignment in got}) == 1
