"""Who holds which HIT, and the answers they give (paper 3.4: each unit gets N independent annotations)."""

import uuid

from django.db import models
from django.utils import timezone

from .annotator import Annotator
from .work import Hit, Unit


def counted_submission_q(prefix: str = "") -> models.Q:
    """A submitted assignment whose labels count (BRIEF steps 7, 9), as a Q; `prefix` ("assignment__") applies it
    through a relation. It counts when its grade does: passed, or overridden to pass by a manager; a submission
    with no grade (submitted before grading existed) counts. The one rule behind annotation.quality.selectors."""
    p = prefix
    return models.Q(**{f"{p}status": Assignment.Status.SUBMITTED}) & (
        models.Q(**{f"{p}grade__isnull": True})
        | models.Q(**{f"{p}grade__override_passed": True})
        | models.Q(**{f"{p}grade__override_passed__isnull": True, f"{p}grade__passed": True})
    )


class AssignmentQuerySet(models.QuerySet):
    def counted(self):
        """Submitted assignments whose labels count (see `counted_submission_q`)."""
        return self.filter(counted_submission_q())

    def holding_a_place(self, now=None):
        """Assignments that count against a HIT's N: counted submissions and reservations that have not expired.

        A submission that failed its attention checks gives its place back, so the HIT is offered to somebody else
        until N submissions count (paper 3.4: N independent annotations per unit); a manager's override that flips
        the grade takes the place again, or frees it.
        """
        now = now or timezone.now()
        return self.filter(
            counted_submission_q()
            | models.Q(status=Assignment.Status.RESERVED, expires_at__gt=now)
        )


class Assignment(models.Model):
    class Status(models.TextChoices):
        RESERVED = "reserved", "Reserved"
        SUBMITTED = "submitted", "Submitted"
        EXPIRED = "expired", "Expired"
        RETURNED = "returned", "Returned"

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    hit = models.ForeignKey(Hit, on_delete=models.CASCADE, related_name="assignments")
    annotator = models.ForeignKey(Annotator, on_delete=models.PROTECT, related_name="assignments")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.RESERVED)
    reserved_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    submitted_at = models.DateTimeField(null=True, blank=True)
    # The key the first successful submit carried: a resent submit with the same key is answered, not re-applied.
    submission_key = models.CharField(max_length=64, blank=True)

    objects = AssignmentQuerySet.as_manager()

    class Meta:
        ordering = ["-reserved_at", "pk"]
        constraints = [
            # Nobody gets the same HIT twice; an expired reservation is renewed in place (its answers are kept).
            models.UniqueConstraint(fields=["hit", "annotator"], name="one_assignment_per_annotator_and_hit"),
        ]
        indexes = [models.Index(fields=["hit", "status"]), models.Index(fields=["status", "expires_at"]),
                   models.Index(fields=["annotator", "status"])]

    def __str__(self) -> str:
        return f"{self.annotator} on {self.hit} ({self.status})"

    @property
    def is_open(self) -> bool:
        return self.status == self.Status.RESERVED

    def has_expired(self, now=None) -> bool:
        return self.status == self.Status.RESERVED and self.expires_at <= (now or timezone.now())


class Label(models.Model):
    """One annotator's answers for one unit. Only the fields of the unit's task are used.

    FV: `has_error` (the annotator's own label), `error_types` when it is true, and `ai_right` (their answer to
    "is the AI right?", asked only when the AI judgment was shown). KV: `useful`. KA: `aligned`.
    """

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="labels")
    unit = models.ForeignKey(Unit, on_delete=models.CASCADE, related_name="labels")
    annotator = models.ForeignKey(Annotator, on_delete=models.PROTECT, related_name="labels")
    has_error = models.BooleanField(null=True, blank=True)
    error_types = models.JSONField(default=list, blank=True)
    ai_right = models.BooleanField(null=True, blank=True)
    useful = models.BooleanField(null=True, blank=True)
    aligned = models.BooleanField(null=True, blank=True)
    # Focus time the page measured, clamped by the server to what the reservation allows.
    seconds_on_item = models.FloatField(default=0)
    created = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["unit", "pk"]
        constraints = [models.UniqueConstraint(fields=["annotator", "unit"], name="one_label_per_annotator_and_unit")]

    def __str__(self) -> str:
        return f"{self.annotator} on {self.unit}"

    def missing(self, unit: Unit, hit: Hit) -> list[str]:
        """The questions of `unit` this label leaves unanswered, as field names."""
        missing = [name for name in unit.question_fields(hit) if getattr(self, name) is None]
        if "has_error" not in missing and self.has_error and not self.error_types:
            missing.append("error_types")
        return missing
