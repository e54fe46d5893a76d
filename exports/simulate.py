"""A pilot simulation: synthetic annotators label a whole project, all three tasks (README, "Analytics and the
benchmark export").

HITs are built by the real service (annotation.services.hits.build_hits, KV before KA, so key-fact validation
is settled by the same majority rule as real work). Answers are written with bulk inserts rather than through
reserve/save/submit one HIT at a time: at UniSumEval scale (~335,000 labels) the services take hours, the bulk
path minutes. The invariants the services keep hold here too:
- one submitted Assignment per (HIT, annotator), never more assignments holding a place than annotators_per_unit:
  beside real work, only the places it left are filled;
- one Label per (annotator, unit), every question of the unit answered (ai_right when the AI label was shown,
  error types when the sentence has an error);
- attention-check units are answered like the others, and a submission with checks is graded by quality
  control's grade_assignment, as a real one is.

Each simulated annotator answers correctly with probability `accuracy` against a hidden truth: the AI pre-label
for FV sentences that have one (else a seeded coin, 10% errors), a seeded coin for KV (90% useful) and KA (15%
aligned), and the expected answer for attention checks. Simulated annotators have provider "simulated"; the
analytics never mix their labels with real ones (exports.selectors).
"""

import dataclasses
from datetime import timedelta

import numpy as np
from django.db import connection, transaction
from django.db.models import Count, IntegerField, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotation.models import Annotator, Assignment, AttentionCheck, ErrorType, Hit, Label, Task, Unit
from annotation.quality.grading import grade_assignment
from annotation.services.hits import build_hits
from corpus.models import Project

ERROR_TYPES = [choice.value for choice in ErrorType]
BASE_RATE = {Task.FACT_VERIFICATION: 0.10, Task.KEYFACT_VALIDATION: 0.90, Task.KEYFACT_ALIGNMENT: 0.15}
FIELD = {Task.FACT_VERIFICATION: "has_error", Task.KEYFACT_VALIDATION: "useful", Task.KEYFACT_ALIGNMENT: "aligned"}


@dataclasses.dataclass
class SimulationResult:
    annotators: list[str]
    assignments: int = 0
    labels: int = 0
    grades: int = 0
    hits_by_task: dict = dataclasses.field(default_factory=dict)


def simulated_annotators(project: Project, count: int) -> list[Annotator]:
    return [Annotator.objects.get_or_create(provider=Annotator.Provider.SIMULATED,
                                            external_id=f"{project.slug}-sim-{number}")[0]
            for number in range(1, count + 1)]


def simulate_annotations(*, project: Project, annotators: int = 3, accuracy: float = 0.9, seed: int = 1,
                         progress=None) -> SimulationResult:
    if annotators < 1:
        raise ValueError("--annotators must be at least 1")
    if not 0.0 <= accuracy <= 1.0:
        raise ValueError("--accuracy must be between 0 and 1")
    people = simulated_annotators(project, annotators)
    result = SimulationResult(annotators=[person.pseudonym for person in people])
    rng = np.random.default_rng(seed)
    for task in (Task.KEYFACT_VALIDATION, Task.FACT_VERIFICATION, Task.KEYFACT_ALIGNMENT):
        build_hits(project, task)  # KA after KV: its HITs exist once KV is settled.
        with transaction.atomic():
            _simulate_task(project, task, people, accuracy, rng, result)
        if progress:
            progress(task)
    _refresh_statistics()
    return result


def _refresh_statistics() -> None:
    """After bulk inserts PostgreSQL's planner still believes the tables are small until autovacuum catches up,
    and picks nested loops over ~300,000 labels (minutes instead of seconds): refresh its statistics now."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE annotation_label, annotation_assignment, annotation_unit, annotation_hit, "
                           "annotation_grade, annotation_attentioncheck")


def _simulate_task(project, task, people, accuracy, rng, result) -> None:
    # The lock a build takes: no attention check goes into a HIT between reading its units and labelling them all.
    Project.objects.select_for_update(no_key=True).filter(pk=project.pk).values_list("pk", flat=True).first()
    now = timezone.now()
    # The places already held, real work's included, by the rule assignment uses (counted submissions and live
    # reservations): the simulation fills only what is left of each HIT's N, and counts its own as it goes.
    places = Assignment.objects.holding_a_place(now).filter(hit=OuterRef("pk")).order_by().values("hit").annotate(
        n=Count("pk")).values("n")
    hits = list(Hit.objects.filter(project=project, task=task)
                .annotate(taken=Coalesce(Subquery(places, output_field=IntegerField()), 0))
                .order_by("pk").values_list("pk", "taken", "assistance", "extra_places"))
    taken = {hit_id: count for hit_id, count, _, _ in hits}
    room = {hit_id: project.annotators_per_unit + extra for hit_id, _, _, extra in hits}
    had = set(Assignment.objects.filter(hit__project=project, hit__task=task, annotator__in=people)
              .values_list("hit_id", "annotator_id"))
    units = list(Unit.objects.filter(hit__project=project, task=task).order_by("pk").values_list(
        "pk", "hit_id", "ai_category"))
    result.hits_by_task[str(task)] = len(hits)
    if not units:
        return
    checks = dict(AttentionCheck.objects.filter(unit__hit__project=project, unit__task=task)
                  .values_list("unit_id", "expected"))
    truth = _truth(task, units, rng)
    truth_type = rng.choice(ERROR_TYPES, size=len(units))
    for index, (_, _, category) in enumerate(units):
        if category in ERROR_TYPES:
            truth_type[index] = category
    by_hit: dict[int, list[int]] = {}
    for index, (_, hit_id, _) in enumerate(units):
        by_hit.setdefault(hit_id, []).append(index)
    shows_label = {pk: (assistance or project.assistance) in ("label", "reason") for pk, _, assistance, _ in hits}

    for person in people:
        correct = rng.random(len(units)) < accuracy
        wrong_type = rng.choice(ERROR_TYPES, size=len(units))
        seconds = rng.uniform(4, 40, size=len(units))
        assignments, labels, graded = [], [], []
        for hit_id, _, _, _ in hits:
            if (hit_id, person.pk) in had or taken[hit_id] >= room[hit_id]:
                continue
            taken[hit_id] += 1
            assignment = Assignment(hit_id=hit_id, annotator=person, status=Assignment.Status.SUBMITTED,
                                    reserved_at=now, expires_at=now + timedelta(minutes=project.reservation_minutes),
                                    submitted_at=now, submission_key=f"simulated-{person.pk}-{hit_id}",
                                    labelled_every_unit=True)
            assignments.append(assignment)
            has_check = False
            for index in by_hit.get(hit_id, []):
                unit_id, _, category = units[index]
                answer = _answer(task, bool(truth[index]), bool(correct[index]), checks.get(unit_id))
                has_check = has_check or unit_id in checks
                if task == Task.FACT_VERIFICATION:
                    if answer["has_error"]:
                        answer["error_types"] = [str(truth_type[index] if correct[index] else wrong_type[index])]
                    if shows_label[hit_id] and category and "ai_right" not in answer:
                        answer["ai_right"] = (category != "no_error") == answer["has_error"]
                labels.append(Label(assignment=assignment, unit_id=unit_id, annotator=person,
                                    seconds_on_item=float(seconds[index]), **answer))
            if has_check:
                graded.append(assignment)
        Assignment.objects.bulk_create(assignments, batch_size=2000)
        for label in labels:
            label.assignment_id = label.assignment.pk
        Label.objects.bulk_create(labels, batch_size=5000)
        # Graded by quality control's own service, so the simulation passes or fails exactly as real work would.
        for assignment in graded:
            grade_assignment(assignment)
        result.assignments += len(assignments)
        result.labels += len(labels)
        result.grades += len(graded)


def _truth(task, units, rng) -> np.ndarray:
    coin = rng.random(len(units)) < BASE_RATE[task]
    if task != Task.FACT_VERIFICATION:
        return coin
    ai = np.array([category != "" for _, _, category in units])
    ai_error = np.array([category not in ("", "no_error") for _, _, category in units])
    return np.where(ai, ai_error, coin)


def _answer(task: str, truth: bool, correct: bool, expected: dict | None) -> dict:
    field = FIELD[task]
    if expected is not None:
        answer = {key: value for key, value in expected.items() if key in ("has_error", "ai_right", "useful",
                                                                            "aligned")}
        if not correct and field in answer:
            answer[field] = not answer[field]
            answer.pop("ai_right", None)
        answer.setdefault(field, truth if correct else not truth)
        return answer
    return {field: truth if correct else not truth}
