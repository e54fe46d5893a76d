"""Evaluator scores imported before they moved to assist come along with the migration."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from assist.models import EvaluatorScore
from corpus.models import Summary
from tests.work import import_generated

BEFORE = [("exports", "0001_evaluator_score")]


@pytest.mark.django_db(transaction=True)
def test_imported_scores_are_copied_to_assist_before_the_old_table_goes(project):
    import_generated(project, documents=1, summarizers=2, sentences=1)
    first, second = Summary.objects.order_by("model")
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    Old = executor.loader.project_state(BEFORE).apps.get_model("exports", "EvaluatorScore")
    Old.objects.create(project_id=project.pk, summary_id=first.pk, evaluator="g-eval", faithfulness=0.5)
    Old.objects.create(project_id=project.pk, summary_id=second.pk, evaluator="g-eval", composite=4.0)

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())

    moved = list(EvaluatorScore.objects.order_by("summary__model").values_list(
        "summary_id", "evaluator", "origin", "status", "faithfulness", "composite"))
    assert moved == [(first.pk, "g-eval", "imported", "ok", 0.5, None), (second.pk, "g-eval", "imported", "ok", None,
                                                                          4.0)]
    assert "exports_evaluatorscore" not in connection.introspection.table_names()
