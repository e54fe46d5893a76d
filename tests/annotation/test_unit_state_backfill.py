"""Items labelled before items had a settling state get the state the settling service would write, so the progress
and cost pages count them; the migration reads the historical models, not today's code."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from annotation.models import Assignment, UnitState
from annotation.services.settling import settle_units
from tests.work import build_all, crowd_annotator, first_round_hit, import_small, work_next_hit

BEFORE = [("annotation", "0020_redundancy")]
FIELDS = ("unit_id", "project_id", "task", "counted", "yes", "target", "verdict", "policy", "settled_round")


@pytest.mark.django_db(transaction=True)
def test_labels_given_before_settling_get_the_state_the_service_writes(project):
    import_small(project)
    build_all(project)
    hit = first_round_hit(project, "fv")
    split = hit.units.order_by("position")[1]
    for name in ("ann", "bea", "cid"):
        work_next_hit(crowd_annotator(name, project), project, "fv", split=split if name == "bea" else None)
    # A HIT with one label in so far: collecting; a submission not yet confirmed by its provider does not count.
    work_next_hit(crowd_annotator("dan", project), project, "kv")
    late = work_next_hit(crowd_annotator("eve", project), project, "kv")
    Assignment.objects.filter(pk=late.pk).update(confirmed_at=None)
    settle_units(UnitState.objects.values_list("unit_id", flat=True))
    expected = sorted(UnitState.objects.filter(counted__gt=0).values_list(*FIELDS))
    assert {row[6] for row in expected} == {"settled", "collecting"}
    UnitState.objects.all().delete()

    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())

    assert sorted(UnitState.objects.values_list(*FIELDS)) == expected
