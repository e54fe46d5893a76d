"""The reviewer's list became one kind of stored numbers (corpus.snapshots): each project's tally moves into a
Snapshot row with the same moment and numbers. Its fingerprint was taken the old way, so the moved list shows as older
than the labels until a reviewer asks for a new tally; the split units it describes stay where they are."""

from django.db import migrations


def move_tallies(apps, schema_editor):
    ReviewTally = apps.get_model("annotation", "ReviewTally")
    Snapshot = apps.get_model("corpus", "Snapshot")
    Snapshot.objects.bulk_create([
        Snapshot(project_id=tally.project_id, kind="review_tally", variant="", fingerprint=tally.fingerprint,
                 basis={}, data={"pairs": tally.pairs, "annotators": tally.annotators}, computed=tally.computed,
                 seconds=tally.seconds)
        for tally in ReviewTally.objects.all()])


def move_back(apps, schema_editor):
    ReviewTally = apps.get_model("annotation", "ReviewTally")
    Snapshot = apps.get_model("corpus", "Snapshot")
    snapshots = Snapshot.objects.filter(kind="review_tally", variant="")
    ReviewTally.objects.bulk_create([
        ReviewTally(project_id=snapshot.project_id, fingerprint=snapshot.fingerprint, computed=snapshot.computed,
                    seconds=snapshot.seconds, pairs=snapshot.data.get("pairs", {}),
                    annotators=snapshot.data.get("annotators", []))
        for snapshot in snapshots])
    snapshots.delete()


class Migration(migrations.Migration):

    dependencies = [
        ("annotation", "0022_unit_state_needs_more_labels"),
        ("corpus", "0011_snapshot_variants"),
    ]

    operations = [
        migrations.RunPython(move_tallies, move_back),
        migrations.DeleteModel(name="ReviewTally"),
    ]
