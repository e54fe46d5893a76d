"""Reservations under real concurrency, on PostgreSQL (CI): SELECT ... FOR UPDATE SKIP LOCKED must hold."""

import threading
from collections import Counter

import pytest
from django.db import connection

from annotation.models import Assignment, Hit, Project
from annotation.services.assignment import reserve_next_hit
from tests.work import build_all, complete, crowd_annotator, import_generated, import_small

WORKERS = 20


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_it_never_overfills_a_hit_when_20_annotators_race():
    project = import_generated(Project.objects.create(slug="race", name="Race"), documents=10, summarizers=4)
    build_all(project)
    assert Hit.objects.filter(project=project, task="fv").count() == 40
    annotators = [crowd_annotator(f"racer-{i}") for i in range(WORKERS)]
    barrier = threading.Barrier(WORKERS)
    errors: list[BaseException] = []

    def work(annotator):
        try:
            barrier.wait()
            # Each annotator keeps taking and submitting FV HITs until none is left for them.
            while (assignment := reserve_next_hit(annotator, project, "fv")) is not None:
                complete(assignment)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(annotator,)) for annotator in annotators]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors

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
    barrier = threading.Barrier(4)
    got: list = []

    def reserve():
        try:
            barrier.wait()
            got.append(reserve_next_hit(annotator, project, "fv"))
        finally:
            connection.close()

    threads = [threading.Thread(target=reserve) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert Assignment.objects.filter(annotator=annotator).count() == 1
    assert len(got) == 4 and len({assignment.pk for assignment in got}) == 1
