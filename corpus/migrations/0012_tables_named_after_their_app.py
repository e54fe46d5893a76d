"""The corpus's tables are named after the app that owns them: they kept the annotation app's names when their models
moved to corpus. A rename of each table (and of the one index named after the old table); no row is touched."""

from django.db import migrations


class Migration(migrations.Migration):

    # After every app's migrations so far: going back, the tables get their old names before any migration that
    # was written against them is undone (the models' move, foreign keys to them).
    dependencies = [
        ("corpus", "0011_snapshot_variants"),
        ("annotation", "0023_review_tally_is_stored_numbers"),
        ("assist", "0006_text_embeddings"),
        ("exports", "0005_analytics_figures_are_stored_numbers"),
    ]

    operations = [
        migrations.RenameIndex(
            model_name='document',
            new_name='corpus_docu_project_2af15b_idx',
            old_name='annotation__project_532cea_idx',
        ),
        migrations.AlterModelTable(
            name='document',
            table=None,
        ),
        migrations.AlterModelTable(
            name='documentsentence',
            table=None,
        ),
        migrations.AlterModelTable(
            name='job',
            table=None,
        ),
        migrations.AlterModelTable(
            name='keyfact',
            table=None,
        ),
        migrations.AlterModelTable(
            name='membership',
            table=None,
        ),
        migrations.AlterModelTable(
            name='project',
            table=None,
        ),
        migrations.AlterModelTable(
            name='summary',
            table=None,
        ),
        migrations.AlterModelTable(
            name='summarysentence',
            table=None,
        ),
    ]
