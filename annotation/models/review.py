"""A reviewer's adjudicated label on a unit where the annotators disagree: kept apart from their labels."""

from django.conf import settings
from django.db import models

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
