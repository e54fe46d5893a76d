"""Items labelled before items had a settling state get one, so that the progress and cost pages count them.

Every project then had the fixed design (the redundancy policy came with 0020, its default fixed): an item is settled
once it has N counted labels, in its first round. Counted is the rule of annotation.models.assignment
(`counted_submission_q`: submitted, its identity confirmed, its grade passing or overridden to pass), written out
here on the historical models so that this migration keeps working whatever the code becomes. Items that already
have a state (labelled since 0020) are left as the settling service wrote them.
"""

from django.db import migrations
from django.db.models import Case, Count, IntegerField, Q, Sum, When

DECIDING = {"fv": "has_error", "kv": "useful", "ka": "aligned"}
BATCH = 2000


def counted(prefix: str) -> Q:
    p = prefix
    passing = (Q(**{f"{p}grade__isnull": True}) | Q(**{f"{p}grade__override_passed": True})
               | Q(**{f"{p}grade__override_passed__isnull": True, f"{p}grade__passed": True}))
    return Q(**{f"{p}status": "submitted", f"{p}confirmed_at__isnull": False}) & passing


def backfill(apps, schema_editor):
    Project = apps.get_model("corpus", "Project")
    Label = apps.get_model("annotation", "Label")
    UnitState = apps.get_model("annotation", "UnitState")
    for project in Project.objects.filter(redundancy_policy="fixed").only("pk", "annotators_per_unit").iterator():
        states = []
        for task, field in DECIDING.items():
            labels = (Label.objects.filter(counted("assignment__"), unit__hit__project_id=project.pk,
                                           unit__task=task, unit__origin__isnull=True,
                                           unit__attention_check__isnull=True, unit__state__isnull=True,
                                           **{f"{field}__isnull": False})
                      .order_by().values("unit_id")
                      .annotate(n=Count("pk"), yes=Sum(Case(When(**{field: True}, then=1), default=0,
                                                            output_field=IntegerField()))))
            for row in labels.iterator():
                settled = row["n"] >= project.annotators_per_unit
                states.append(UnitState(unit_id=row["unit_id"], project_id=project.pk, task=task, counted=row["n"],
                                        yes=row["yes"], target=project.annotators_per_unit,
                                        verdict="settled" if settled else "collecting", policy="fixed",
                                        settled_round=0 if settled else None))
        for start in range(0, len(states), BATCH):
            UnitState.objects.bulk_create(states[start:start + BATCH], ignore_conflicts=True)


class Migration(migrations.Migration):

    dependencies = [
        ("annotation", "0020_redundancy"),
        ("corpus", "0009_staff_managers_create_projects"),
    ]

    operations = [migrations.RunPython(backfill, migrations.RunPython.noop)]
