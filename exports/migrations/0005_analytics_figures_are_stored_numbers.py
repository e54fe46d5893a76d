"""The analytics figures became one kind of stored numbers (corpus.snapshots). The figures stored before are not
moved: they were fingerprinted the old way and are never shown once the labels may have changed, so the next
computation, asked for on the analytics page, replaces them anyway."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("exports", "0004_analytics_figures"),
    ]

    operations = [
        migrations.DeleteModel(name="AnalyticsFigures"),
    ]
