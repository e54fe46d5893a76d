"""A reviewer's adjudicated label on a unit where the annotators disagree: kept apart from their labels."""

from django.conf import settings
from django.db import models

from .annotator import Annotator
from .work import Unit


class Adjudication(models.Model):
    """The settled answer to a unit's question (FV: has_error and error_types; KV: useful; KA: aligned), with the
    reviewer's reason. One per unit: settling it again replaces the answer and keeps who and when."""

    unit = models.OneToOneField(Unit, on_delete=models.CASCADE, related_name="adjudication")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    has_error = models.BooleanField(null=True, blank=True)
    error_types = models.JSONField(default=list, blank=True)
    useful = models.BooleanField(null=True, blank=True)
    aligned = models.BooleanField(null=True, blank=True)
    reason = models.TextField()
    created = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"Adjudication of {self.unit}"

    @property
    def answer(self) -> bool | None:
        """The adjudicated yes/no of the unit's task."""
        return {"fv": self.has_error, "kv": self.useful, "ka": self.aligned}[self.unit.task]


class SplitColumns(models.Model):
    """What the reviewer's list orders and filters a split unit by, as of the project's stored review tally
    (annotation.services.review_tally)."""

    project = models.ForeignKey("corpus.Project", on_delete=models.CASCADE, related_name="+")
    task = models.CharField(max_length=2)
    votes = models.PositiveIntegerField()
    yes = models.PositiveIntegerField()
    majority = models.FloatField()
    missed_check = models.BooleanField()
    hit_position = models.PositiveIntegerField()
    position = models.PositiveIntegerField()
    domain = models.CharField(max_length=100, blank=True)
    summarizer = models.CharField(max_length=100, blank=True)

    class Meta:
        abstract = True


class SplitUnit(SplitColumns):
    """A real unit whose counted answers disagree (at least two, not all the same), as of the project's stored review
    tally: its votes, how many say yes, the majority's share, whether a counted label comes from a submission that
    missed a check, and the document's domain and summarizer, so that the reviewer's list is an indexed query on this
    table alone (plus the live adjudications)."""

    unit = models.OneToOneField(Unit, on_delete=models.CASCADE, primary_key=True, related_name="split")

    class Meta:
        indexes = [models.Index(fields=["project", "task", "majority", "hit_position", "position"],
                                name="split_unit_review_order")]

    def __str__(self) -> str:
        return f"Split unit {self.unit_id}"


class SplitUnitLabel(SplitColumns):
    """A split unit once per annotator who gave one of its counted labels, with the same columns: the list filtered
    by an annotator is then an indexed query too (as a join it reads every split unit the annotator labelled)."""

    unit = models.ForeignKey(Unit, on_delete=models.CASCADE, related_name="+")
    annotator = models.ForeignKey(Annotator, on_delete=models.CASCADE, related_name="+")

    class Meta:
        indexes = [models.Index(fields=["project", "task", "annotator", "majority", "hit_position", "position"],
                                name="split_label_review_order")]

    def __str__(self) -> str:
        return f"Split unit {self.unit_id} labelled by {self.annotator_id}"
