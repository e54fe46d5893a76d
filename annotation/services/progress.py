"""How far the annotation of a project has come, per task and domain (read by the manager's progress page).

A unit is done when it has N labels from submitted assignments; a HIT is done when N assignments are submitted.
Each count is one grouped query, whatever the size of the project.
"""

from collections import defaultdict

from django.db.models import Count, IntegerField, OuterRef, Q, Subquery, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from ..models import Assignment, Hit, Label, Project, Task, Unit


def count_of(queryset, outer: str):
    """How many rows of `queryset` point at the outer row through `outer`, as a subquery (no join fan-out)."""
    return Coalesce(Subquery(queryset.filter(**{outer: OuterRef("pk")}).order_by().values(outer)
                             .annotate(n=Count("pk")).values("n"), output_field=IntegerField()), 0)


def task_progress(project: Project) -> list[dict]:
    """One entry per task: its per-domain rows and a total row, each with unit and HIT counts."""
    needed = project.annotators_per_unit
    now = timezone.now()
    submitted_labels = Label.objects.filter(assignment__status=Assignment.Status.SUBMITTED)
    units = (Unit.objects.filter(hit__project=project)
             .alias(label_count=count_of(submitted_labels, "unit"))
             .values("task", "hit__document__domain")
             .annotate(total=Count("pk"), done=Count("pk", filter=Q(label_count__gte=needed))))
    submitted = Assignment.objects.filter(status=Assignment.Status.SUBMITTED)
    reserved = Assignment.objects.filter(status=Assignment.Status.RESERVED, expires_at__gt=now)
    hits = (Hit.objects.filter(project=project)
            .alias(submitted_count=count_of(submitted, "hit"), reserved_count=count_of(reserved, "hit"))
            .values("task", "document__domain")
            .annotate(total=Count("pk"), done=Count("pk", filter=Q(submitted_count__gte=needed)),
                      submissions=Coalesce(Sum("submitted_count"), 0), open=Coalesce(Sum("reserved_count"), 0)))
    rows: dict[str, dict[str, dict]] = defaultdict(dict)
    empty = {"units": 0, "units_done": 0, "hits": 0, "hits_done": 0, "submissions": 0, "open": 0}
    for row in units:
        entry = rows[row["task"]].setdefault(row["hit__document__domain"], dict(empty))
        entry.update(units=row["total"], units_done=row["done"])
    for row in hits:
        entry = rows[row["task"]].setdefault(row["document__domain"], dict(empty))
        entry.update(hits=row["total"], hits_done=row["done"], submissions=row["submissions"], open=row["open"])
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
