"""The progress page's numbers, read from HITs and their assignments, are the numbers that counting every counted
label of the project gives, whatever state the work is in."""

from collections import defaultdict
from datetime import timedelta

import pytest
from django.db.models import Count, F, Max, Q
from django.utils import timezone

from annotation.models import Annotator, Assignment, Grade, Hit, Label, Task, Unit
from annotation.models.assignment import counted_submission_q
from annotation.selectors import PROGRESS_COUNTS, count_of, progress_entries, task_progress
from annotation.services.hits import build_hits
from tests.work import complete, crowd_annotator, import_generated

pytestmark = pytest.mark.django_db


def progress_by_labels(project) -> list[dict]:
    """The progress as it was first computed: a unit is done when it has N counted labels, found by grouping every
    counted label of the project by unit."""
    needed = project.annotators_per_unit
    now = timezone.now()
    done_units = (Label.objects.filter(counted_submission_q("assignment__"), unit__hit__project=project)
                  .order_by().values("unit").annotate(n=Count("pk"), places=Max("unit__hit__extra_places"))
                  .filter(n__gte=needed + F("places")).values("unit"))
    units = (Unit.objects.filter(hit__project=project).values("task", "hit__document__domain")
             .annotate(total=Count("pk"), done=Count("pk", filter=Q(pk__in=done_units))))
    counted = Assignment.objects.counted()
    simulated = counted.filter(annotator__provider=Annotator.Provider.SIMULATED)
    failed = Assignment.objects.filter(Q(grade__override_passed=False)
                                       | Q(grade__override_passed__isnull=True, grade__passed=False),
                                       status=Assignment.Status.SUBMITTED, confirmed_at__isnull=False)
    reserved = Assignment.objects.filter(status=Assignment.Status.RESERVED, expires_at__gt=now)
    hits = (Hit.objects.filter(project=project).alias(counted_count=count_of(counted, "hit"))
            .values("task", "document__domain")
            .annotate(total=Count("pk"), done=Count("pk", filter=Q(counted_count__gte=needed + F("extra_places")))))
    rows = defaultdict(dict)
    empty = dict.fromkeys(PROGRESS_COUNTS, 0)
    for row in units:
        rows[row["task"]].setdefault(row["hit__document__domain"], dict(empty)).update(units=row["total"],
                                                                                      units_done=row["done"])
    for row in hits:
        rows[row["task"]].setdefault(row["document__domain"], dict(empty)).update(hits=row["total"],
                                                                                 hits_done=row["done"])
    # Submissions, one HIT at a time.
    for hit in Hit.objects.filter(project=project).select_related("document"):
        entry = rows[hit.task][hit.document.domain]
        entry["submissions"] += counted.filter(hit=hit).count()
        entry["simulated"] += simulated.filter(hit=hit).count()
        entry["failed"] += failed.filter(hit=hit).count()
        entry["open"] += reserved.filter(hit=hit).count()
    return progress_entries(rows, needed)


NAMES = iter(range(10_000))


def submitted(hit, *, provider=Annotator.Provider.PROLIFIC):
    """A submission through the pages' own path: every unit answered, then submitted."""
    if provider == Annotator.Provider.SIMULATED:
        annotator = Annotator.objects.create(provider=provider, external_id=f"sim-{next(NAMES)}")
    else:
        annotator = crowd_annotator(f"w{next(NAMES)}", hit.project)
    assignment = Assignment.objects.create(hit=hit, annotator=annotator,
                                           expires_at=timezone.now() + timedelta(hours=1))
    complete(assignment)
    assignment.refresh_from_db()
    assert assignment.labelled_every_unit
    return assignment


def restored(hit, positions):
    """A submission restored from an export, with labels on the units at `positions` only (an export has none on
    the attention checks)."""
    annotator = crowd_annotator(f"r{next(NAMES)}", hit.project)
    now = timezone.now()
    assignment = Assignment.objects.create(hit=hit, annotator=annotator, status=Assignment.Status.SUBMITTED,
                                           submitted_at=now, expires_at=now)
    for unit in hit.units.filter(position__in=positions):
        Label.objects.create(assignment=assignment, unit=unit, annotator=annotator, has_error=False, useful=True)
    return assignment


def graded(assignment, *, passed, override=None):
    Grade.objects.update_or_create(assignment=assignment, defaults={
        "passed": passed, "override_passed": override, "checks_total": 1, "checks_failed": 0 if passed else 1})
    return assignment


@pytest.fixture
def mixed(project):
    """Two domains, N = 2, HITs in every state a HIT can be in."""
    import_generated(project, documents=4, summarizers=4, sentences=3)
    project.annotators_per_unit = 2
    project.save(update_fields=["annotators_per_unit"])
    build_hits(project, Task.FACT_VERIFICATION)
    build_hits(project, Task.KEYFACT_VALIDATION)
    fv = list(Hit.objects.filter(project=project, task=Task.FACT_VERIFICATION).order_by("position"))
    kv = list(Hit.objects.filter(project=project, task=Task.KEYFACT_VALIDATION).order_by("position"))
    now = timezone.now()
    # Done: two counted submissions; one of them simulated on another HIT.
    submitted(fv[0]), submitted(fv[0])
    submitted(fv[1]), submitted(fv[1], provider=Annotator.Provider.SIMULATED)
    submitted(fv[2], provider=Annotator.Provider.SIMULATED), submitted(fv[2], provider=Annotator.Provider.SIMULATED)
    # One counted, one failed, one reserved; one counted, one expired with answers given.
    submitted(fv[3]), graded(submitted(fv[3]), passed=False)
    Assignment.objects.create(hit=fv[3], annotator=crowd_annotator("holder", project), expires_at=now + timedelta(1))
    late = Assignment.objects.create(hit=fv[4], annotator=crowd_annotator("late", project),
                                     expires_at=now - timedelta(minutes=1))
    Label.objects.create(assignment=late, unit=fv[4].units.first(), annotator=late.annotator, has_error=False)
    submitted(fv[4])
    Assignment.objects.create(hit=fv[4], annotator=crowd_annotator("gone", project), status=Assignment.Status.EXPIRED,
                              expires_at=now - timedelta(hours=1))
    # Overridden both ways, and a grade that passed.
    graded(submitted(fv[5]), passed=False, override=True), graded(submitted(fv[5]), passed=True)
    graded(submitted(fv[6]), passed=True, override=False), submitted(fv[6])
    # Unconfirmed crowd submissions count for nothing yet.
    submitted(fv[7])
    Assignment.objects.filter(pk=submitted(fv[7]).pk).update(confirmed_at=None)
    # An extra place added in review: two are not enough, three are.
    Hit.objects.filter(pk__in=[fv[8].pk, fv[9].pk]).update(extra_places=1)
    submitted(fv[8]), submitted(fv[8])
    submitted(fv[9]), submitted(fv[9]), submitted(fv[9])
    # Restored submissions, labels on some units only: alone, beside one that labelled every unit, more than N.
    submitted(fv[10]), restored(fv[10], [0, 2])
    restored(fv[11], [0, 1]), restored(fv[11], [1, 2]), restored(fv[11], [1])
    submitted(fv[12]), submitted(fv[12]), restored(fv[12], [0])
    graded(restored(fv[13], [0, 1, 2]), passed=False), restored(fv[13], [0, 1, 2])
    Hit.objects.filter(pk=fv[14].pk).update(extra_places=1)
    restored(fv[14], [0, 1]), submitted(fv[14]), submitted(fv[14])
    # KV in the other shapes: done, restored in part, started.
    submitted(kv[0]), submitted(kv[0])
    restored(kv[1], [0]), restored(kv[1], [0, 1])
    submitted(kv[2])
    return project


def test_the_progress_is_the_count_of_counted_labels_per_unit(mixed):
    assert task_progress(mixed) == progress_by_labels(mixed)
    fv = {row["domain"]: row for row in task_progress(mixed)[0]["domains"]}
    assert set(fv) == {"news", "sport"}
    # Done HITs with units that are not done, and the other way round (restored labels): not 3 units per done HIT.
    total = task_progress(mixed)[0]["total"]
    assert 0 < total["hits_done"] < total["hits"] and total["units_done"] != 3 * total["hits_done"]
    assert total["failed"] == 3 and total["simulated"] == 3 and total["open"] == 1


def test_the_numbers_follow_a_grade_override_and_a_confirmation(mixed):
    Grade.objects.filter(passed=False, override_passed__isnull=True).update(override_passed=True)
    Assignment.objects.filter(confirmed_at__isnull=True).update(confirmed_at=timezone.now())
    assert task_progress(mixed) == progress_by_labels(mixed)
    Grade.objects.update(override_passed=False)
    assert task_progress(mixed) == progress_by_labels(mixed)


def test_a_restored_project_counts_its_units_by_their_labels(project, tmp_path):
    """An export has no labels on the attention checks the restore builds into its HITs: those submissions did not
    label every unit, and only the units they labelled N times are done."""
    from exports.export import ExportOptions, export_benchmark
    from exports.restore import import_benchmark
    from exports.simulate import simulate_annotations

    import_generated(project, documents=2, summarizers=2, sentences=3)
    simulate_annotations(project=project, annotators=3, accuracy=0.9, seed=1)
    assert not Assignment.objects.filter(hit__project=project, labelled_every_unit=False).exists()
    export_benchmark(project=project, out=tmp_path / "bench.jsonl", options=ExportOptions(annotator_labels=True))
    fresh = type(project).objects.create(slug="fresh", name="Fresh", attention_check_rate=0.5)
    import_benchmark(project=fresh, data=(tmp_path / "bench.jsonl").read_bytes())
    restored_ones = Assignment.objects.filter(hit__project=fresh)
    assert restored_ones.filter(labelled_every_unit=False).exists()
    progress = task_progress(fresh)
    assert progress == progress_by_labels(fresh)
    total = progress[0]["total"]
    assert total["hits_done"] == total["hits"] and 0 < total["units_done"] < total["units"]


def test_the_home_pages_count_of_available_hits_is_the_count_of_the_hits_offered(mixed, annotator):
    from annotation.selectors import available_hits, count_available_hits
    from tests.work import annotator_for

    Assignment.objects.create(hit=Hit.objects.get(project=mixed, task="fv", position=11),
                              annotator=crowd_annotator("holder-2", mixed),
                              expires_at=timezone.now() + timedelta(hours=1))
    people = [annotator_for(annotator), *Annotator.objects.filter(assignments__hit__project=mixed).distinct()]
    for person in people:
        for task in (Task.FACT_VERIFICATION, Task.KEYFACT_VALIDATION, Task.KEYFACT_ALIGNMENT):
            assert count_available_hits(person, mixed, task) == available_hits(person, mixed, task).count()
    assert count_available_hits(people[0], mixed, Task.FACT_VERIFICATION) > 0
