from django.core.serializers.json import DjangoJSONEncoder
from django.db import models

from .project import Project


class Snapshot(models.Model):
    """Numbers a job computed from a project's data (corpus.snapshots), kept with the fingerprint of what they read.
    Current only while the fingerprint of the database still matches; a new computation replaces the row.

    One row per project, kind and variant (e.g. "quality": the annotators' quality numbers; "analytics" with
    "simulated": the figures with simulated labels counted)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="snapshots")
    kind = models.CharField(max_length=40)
    variant = models.CharField(max_length=40, blank=True, default="",
                               help_text="Numbers of one kind kept side by side, e.g. with simulated labels")
    fingerprint = models.CharField(max_length=64, help_text="Of what the numbers read, when the job began")
    basis = models.JSONField(default=dict, encoder=DjangoJSONEncoder,
                             help_text="The counts behind the fingerprint, to tell how much changed since")
    data = models.JSONField(help_text="The numbers, as the pages read them")
    computed = models.DateTimeField(help_text="When the job began reading")
    seconds = models.FloatField(default=0, help_text="How long the computation took")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "kind", "variant"],
                                               name="one_snapshot_per_project_kind_and_variant")]

    def __str__(self) -> str:
        return f"{self.kind} numbers of {self.project} ({self.fingerprint[:8]})"
