"""How far the annotation of a project has come, per task and domain (read by the manager's progress page).

A unit is done when it has N labels from counted submissions; a HIT is done when N of its submissions count. A
submission that failed its attention checks (and was not overridden to pass) is shown apart as "failed": its HIT
is offered again until N count (annotation.services.assignment). Each count is one grouped query, whatever the size
of the project.
"""

from collections import defaultdict

from django.db.models import Count, IntegerField, OuterRef, Q, Subquery, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from ..models import Assignment, Hit, Label, Project, Task, Unit
from ..models.assignment import counted_submission_q


def count_of(queryset, outer: str):
    """How many rows of `queryset` point at the outer row through `outer`, as a subquery (no join fan-out)."""
    return Coalesce(Subquery(queryset.filter(**{outer: OuterRef("pk")}).order_by().values(outer)
                             .annotate(n=Count("pk")).values("n"), output_field=IntegerField()), 0)


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
    failed = Assignment.objects.filter(Q(grade__override_passed=False)
                                       | Q(grade__override_passed__isnull=True, grade__passed=False),
                                       status=Assignment.Status.SUBMITTED)
    reserved = Assignment.objects.filter(status=Assignment.Status.RESERVED, expires_at__gt=now)
    hits = (Hit.objects.filter(project=project)
            .alias(counted_count=count_of(counted, "hit"), failed_count=count_of(failed, "hit"),
                   reserved_count=count_of(reserved, "hit"))
            .values("task", "document__domain")
            .annotate(total=Count("pk"), done=Count("pk", filter=Q(counted_count__gte=needed)),
                      submissions=Coalesce(Sum("counted_count"), 0), failed=Coalesce(Sum("failed_count"), 0),
                      open=Coalesce(Sum("reserved_count"), 0)))
    rows: dict[str, dict[str, dict]] = defaultdict(dict)
    empty = {"units": 0, "units_done": 0, "hits": 0, "hits_done": 0, "submissions": 0, "failed": 0, "open": 0}
    for row in units:
        entry = rows[row["task"]].setdefault(row["hit__document__domain"], dict(empty))
        entry.update(units=row["total"], units_done=row["done"])
    for row in hits:
        entry = rows[row["task"]].setdefault(row["document__domain"], dict(empty))
        entry.update(hits=row["total"], hits_done=row["done"], submissions=row["submissions"], failed=row["failed"],
                     open=row["open"])
    result = []
    for task in (Task.FACT_VERIFICATION, Task.KEYFACT_VALIDATION, Task.KEYFACT_ALIGNMENT):
        domains = [{"domain": domain, **counts} for domain, counts in sorted(rows[task].items())]
        total = {name: sum(row[name] for row in domains) for name in empty}
        for row in (*domains, total):
            row["percent"] = int(100 * row["units_done"] / row["units"]) if row["units"] else 0
            row["submissions_needed"] = row["hits"] * needed
        result.append({"task": task, "label": task.label, "domains": domains, "total": total})
    return result


def is_finished(progress: list[dict]) -> bool:
    """Every task that has units has all of them done, and there is work at all."""
    totals = [entry["total"] for entry in progress]
    return any(t["units"] for t in totals) and all(t["units_done"] == t["units"] for t in totals)
