"""Reads of the annotation work that pages, the API and the services share; the writes are in annotation.services.

`available_hits` and `current_assignment`: the work an annotator may still be given, and the reservation they hold.
`started_hits`: the HITs somebody works or worked on (their assistance level may no longer change).
`task_progress`: how far the annotation of a project has come, per task and domain (the manager's progress page). A
unit is done when it has N labels from counted submissions; a HIT is done when N of its submissions count; the
counted submissions are split into real and simulated ones (simulated work fills places as real work does). A
submission that failed its attention checks (and was not overridden to pass) is shown apart as "failed": its HIT is
offered again until N count (annotation.services.assignment). Each count is one grouped query, whatever the size of
the project.
"""

from collections import defaultdict

from django.db.models import Count, Exists, IntegerField, OuterRef, Q, Subquery, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from corpus.models import Project

from .models import Annotator, Assignment, Hit, Label, Task, Unit
from .models.assignment import counted_submission_q


def count_of(queryset, outer: str):
    """How many rows of `queryset` point at the outer row through `outer`, as a subquery (no join fan-out)."""
    return Coalesce(Subquery(queryset.filter(**{outer: OuterRef("pk")}).order_by().values(outer)
                             .annotate(n=Count("pk")).values("n"), output_field=IntegerField()), 0)


def _places_taken(now):
    return (Assignment.objects.holding_a_place(now).filter(hit=OuterRef("pk")).order_by()
            .values("hit").annotate(n=Count("pk")).values("n"))


def available_hits(annotator: Annotator, project: Project, task: str, now=None):
    """HITs of `task` that still need annotators and that `annotator` has not had (an expired one may come back).

    A HIT needs annotators while fewer than N assignments hold a place: a failed submission holds none, so its HIT
    comes back for others; its own annotator has had it and never gets it again.
    """
    now = now or timezone.now()
    # A discarded claim was never the annotator's own (a forged worker id): it does not keep them from the HIT.
    had = Assignment.objects.filter(hit=OuterRef("pk"), annotator=annotator).exclude(
        status__in=[Assignment.Status.EXPIRED, Assignment.Status.DISCARDED])
    return (Hit.objects.filter(project=project, task=task)
            .annotate(taken=Coalesce(Subquery(_places_taken(now)), 0))
            .filter(taken__lt=project.annotators_per_unit)
            .exclude(Exists(had)))


def current_assignment(annotator: Annotator, project: Project, task: str, now=None) -> Assignment | None:
    now = now or timezone.now()
    return (Assignment.objects.filter(annotator=annotator, hit__project=project, hit__task=task,
                                      status=Assignment.Status.RESERVED, expires_at__gt=now)
            .order_by("reserved_at").first())


def started_hits(hits):
    """The HITs somebody holds (an unexpired reservation), submitted, or answered."""
    now = timezone.now()
    active = Assignment.objects.filter(hit=OuterRef("pk")).filter(
        Q(status=Assignment.Status.SUBMITTED) | Q(status=Assignment.Status.RESERVED, expires_at__gt=now))
    answered = Label.objects.filter(unit__hit=OuterRef("pk"))
    return hits.filter(Exists(active) | Exists(answered))


def task_progress(project: Project) -> list[dict]:
    """One entry per task: its per-domain rows and a total row, each with unit and HIT counts."""
    needed = project.annotators_per_unit
    now = timezone.now()
    counted_labels = Label.objects.filter(counted_submission_q("assignment__"))
    units = (Unit.objects.filter(hit__project=project)
             .alias(label_count=count_of(counted_labels, "unit"))
             .values("task", "hit__document__domain")
             .annotate(total=Count("pk"), done=Count("pk", filter=Q(label_count__gte=needed))))
    counted = Assignment.objects.counted()
    # Simulated work (a pilot, simulate_annotations) fills places like real work, but is shown apart from it.
    simulated = counted.filter(annotator__provider=Annotator.Provider.SIMULATED)
    # Confirmed ones only: an unconfirmed crowd submission is nobody's yet (annotation/crowd/claims.py).
    failed = Assignment.objects.filter(Q(grade__override_passed=False)
                                       | Q(grade__override_passed__isnull=True, grade__passed=False),
                                       status=Assignment.Status.SUBMITTED, confirmed_at__isnull=False)
    reserved = Assignment.objects.filter(status=Assignment.Status.RESERVED, expires_at__gt=now)
    hits = (Hit.objects.filter(project=project)
            .alias(counted_count=count_of(counted, "hit"), simulated_count=count_of(simulated, "hit"),
                   failed_count=count_of(failed, "hit"), reserved_count=count_of(reserved, "hit"))
            .values("task", "document__domain")
            .annotate(total=Count("pk"), done=Count("pk", filter=Q(counted_count__gte=needed)),
                      submissions=Coalesce(Sum("counted_count"), 0), simulated=Coalesce(Sum("simulated_count"), 0),
                      failed=Coalesce(Sum("failed_count"), 0), open=Coalesce(Sum("reserved_count"), 0)))
    rows: dict[str, dict[str, dict]] = defaultdict(dict)
    empty = {"units": 0, "units_done": 0, "hits": 0, "hits_done": 0, "submissions": 0, "simulated": 0, "failed": 0,
             "open": 0}
    for row in units:
        entry = rows[row["task"]].setdefault(row["hit__document__domain"], dict(empty))
        entry.update(units=row["total"], units_done=row["done"])
    for row in hits:
        entry = rows[row["task"]].setdefault(row["document__domain"], dict(empty))
        entry.update(hits=row["total"], hits_done=row["done"], submissions=row["submissions"],
                     simulated=row["simulated"], failed=row["failed"], open=row["open"])
    result = []
    for task in (Task.FACT_VERIFICATION, Task.KEYFACT_VALIDATION, Task.KEYFACT_ALIGNMENT):
        domains = [{"domain": domain, **counts} for domain, counts in sorted(rows[task].items())]
        total = {name: sum(row[name] for row in domains) for name in empty}
        for row in (*domains, total):
            row["percent"] = int(100 * row["units_done"] / row["units"]) if row["units"] else 0
            row["submissions_needed"] = row["hits"] * needed
            row["real"] = row["submissions"] - row["simulated"]
        result.append({"task": task, "label": task.label, "domains": domains, "total": total})
    return result


def simulated_submissions(progress: list[dict]) -> int:
    """How many counted submissions of the project are simulated (a pilot): the progress page then shows them apart."""
    return sum(entry["total"]["simulated"] for entry in progress)


def is_finished(progress: list[dict]) -> bool:
    """Every task that has units has all of them done, and there is work at all."""
    totals = [entry["total"] for entry in progress]
    return any(t["units"] for t in totals) and all(t["units_done"] == t["units"] for t in totals)
