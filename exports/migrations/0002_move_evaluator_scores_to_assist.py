# Evaluator scores moved to assist (assist.EvaluatorScore), beside the runs that compute them; imported scores are
# copied over before the old table is dropped.

from django.db import migrations

DIMENSIONS = ("faithfulness", "completeness", "conciseness", "composite")


def copy_scores(apps, schema_editor):
    Old = apps.get_model("exports", "EvaluatorScore")
    New = apps.get_model("assist", "EvaluatorScore")
    rows = [New(project_id=old.project_id, summary_id=old.summary_id, evaluator=old.evaluator, origin="imported",
                status="ok", **{name: getattr(old, name) for name in DIMENSIONS})
            for old in Old.objects.all().iterator(chunk_size=2000)]
    New.objects.bulk_create(rows, batch_size=2000)


def copy_back(apps, schema_editor):
    Old = apps.get_model("exports", "EvaluatorScore")
    New = apps.get_model("assist", "EvaluatorScore")
    Old.objects.bulk_create([Old(project_id=new.project_id, summary_id=new.summary_id, evaluator=new.evaluator,
                                 **{name: getattr(new, name) for name in DIMENSIONS})
                             for new in New.objects.all().iterator(chunk_size=2000)], batch_size=2000)


class Migration(migrations.Migration):

    dependencies = [
        ('exports', '0001_evaluator_score'),
        ('assist', '0003_evaluator_scores'),
    ]

    operations = [
        migrations.RunPython(copy_scores, copy_back),
        migrations.DeleteModel(
            name='EvaluatorScore',
        ),
    ]
