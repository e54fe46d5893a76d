"""Who holds which HIT, and the answers they give (paper 3.4: each unit gets N independent annotations)."""

import uuid

from django.db import models
from django.utils import timezone

from .annotator import Annotator
from .work import ErrorType, Hit, Unit


def passing_q(prefix: str = "") -> models.Q:
    """A submission whose grade lets it count: passed, or overridden to pass by a manager; a submission with no grade
    (submitted before grading existed) passes."""
    p = prefix
    return (models.Q(**{f"{p}grade__isnull": True})
            | models.Q(**{f"{p}grade__override_passed": True})
            | models.Q(**{f"{p}grade__override_passed__isnull": True, f"{p}grade__passed": True}))


def counted_submission_q(prefix: str = "") -> models.Q:
    """A submitted assignment whose labels count (paper 3.4, section 4), as a Q; `prefix` ("assignment__") applies it
    through a relation. It counts when the identity behind it is confirmed (`Assignment.confirmed_at`: MTurk and
    Prolific arrivals only once the provider's API said the submission is that worker's) and its grade passes
    (`passing_q`). The one rule behind N, progress, aggregation, exports and the quality policy
    (annotation.quality.selectors)."""
    p = prefix
    return (models.Q(**{f"{p}status": Assignment.Status.SUBMITTED, f"{p}confirmed_at__isnull": False})
            & passing_q(prefix))


def failed_submission_q() -> models.Q:
    """A confirmed submission whose grade keeps it from counting (failed, or overridden to fail): the confirmed
    submissions that `counted_submission_q` leaves out, said without reading every counted one."""
    return (models.Q(grade__override_passed=False) | models.Q(grade__override_passed__isnull=True, grade__passed=False)
            ) & models.Q(status=Assignment.Status.SUBMITTED, confirmed_at__isnull=False)


class AssignmentQuerySet(models.QuerySet):
    def counted(self):
        """Submitted assignments whose labels count (see `counted_submission_q`)."""
        return self.filter(counted_submission_q())

    def confirmed(self):
        return self.filter(confirmed_at__isnull=False)

    def holding_a_place(self, now=None, *, confirmed_only: bool = False):
        """Assignments that count against a HIT's N: counted submissions and reservations that have not expired.

        A submission that failed its attention checks gives its place back, so the HIT is offered to somebody else
        until N submissions count (paper 3.4: N independent annotations per unit); a manager's override that flips
        the grade takes the place again, or frees it.

        An identity the provider has not confirmed yet holds a place only as long as the provider itself would hold
        it for a worker who never comes back: until the end of its reservation (`expires_at`, the project's
        `reservation_minutes`, which is the MTurk HIT type's AssignmentDurationInSeconds and the Prolific study's
        maximum_allowed_time), submitted or not; after that only once confirmed. It is never renewed for another
        claim (annotation/crowd/claims.py). `confirmed_only` leaves unconfirmed ones out altogether: MTurk counts
        its own places, so a worker MTurk sends is kept out only by what MTurk has confirmed.
        """
        now = now or timezone.now()
        live = models.Q(status=Assignment.Status.RESERVED, expires_at__gt=now) | (
            models.Q(status=Assignment.Status.SUBMITTED, confirmed_at__isnull=True, expires_at__gt=now) & passing_q())
        if confirmed_only:
            live &= models.Q(confirmed_at__isnull=False)
        return self.filter(counted_submission_q() | live)


class Assignment(models.Model):
    class Status(models.TextChoices):
        RESERVED = "reserved", "Reserved"
        SUBMITTED = "submitted", "Submitted"
        EXPIRED = "expired", "Expired"
        RETURNED = "returned", "Returned"
        # A crowd submission the provider does not know (or names another worker for): kept for audit with the
        # reason, never counted, holding no place (annotation/crowd/sync.py).
        DISCARDED = "discarded", "Discarded"

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    hit = models.ForeignKey(Hit, on_delete=models.CASCADE, related_name="assignments")
    annotator = models.ForeignKey(Annotator, on_delete=models.PROTECT, related_name="assignments")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.RESERVED)
    reserved_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    submitted_at = models.DateTimeField(null=True, blank=True)
    # The key the first successful submit carried: a resent submit with the same key is answered, not re-applied.
    submission_key = models.CharField(max_length=64, blank=True)
    # When the identity behind it was confirmed. Accounts, private links and simulations: at creation, since the
    # platform issued the identity itself. MTurk and Prolific arrivals: null until the provider's own API says this
    # assignment or submission is that worker's on that HIT or study (unsigned URL parameters are only claims).
    confirmed_at = models.DateTimeField(null=True, blank=True, default=timezone.now)
    discarded_reason = models.TextField(blank=True)
    # Set once, when it is submitted: it holds a label for every unit of its HIT. A submission through the pages or
    # the API always does (a missing answer refuses it) and a simulated one too; a restored one holds only the
    # labels its export had (none on attention checks). The units of a HIT never change once it has an assignment
    # (annotation.quality.injection), so this stays true; progress counts a HIT's units done from it.
    labelled_every_unit = models.BooleanField(default=False)

    objects = AssignmentQuerySet.as_manager()

    class Meta:
        ordering = ["-reserved_at", "pk"]
        constraints = [
            # Nobody holds or submits the same HIT twice; an expired reservation is renewed in place (its answers
            # are kept). Unconfirmed crowd claims are left out: each provider assignment gets its own row, so a
            # forged claim on somebody's worker id never takes the real one's place (annotation/crowd/claims.py).
            models.UniqueConstraint(fields=["hit", "annotator"], name="one_live_assignment_per_annotator_and_hit",
                                    condition=models.Q(confirmed_at__isnull=False,
                                                       status__in=["reserved", "submitted"])),
        ]
        indexes = [models.Index(fields=["hit", "status"]), models.Index(fields=["status", "expires_at"]),
                   models.Index(fields=["annotator", "status"]),
                   # Submissions without a label on every unit of their HIT: none unless restored from an export,
                   # so progress learns at once whether it must count labels (annotation.selectors.task_progress).
                   models.Index(fields=["hit"], condition=models.Q(status="submitted", labelled_every_unit=False),
                                name="assignment_partly_labelled")]
        # And on PostgreSQL "assignment_history", an annotator's assignments latest first (migration 0018; SQLite
        # cannot order an index NULLS LAST).

    def __str__(self) -> str:
        return f"{self.annotator} on {self.hit} ({self.status})"

    @property
    def is_open(self) -> bool:
        return self.status == self.Status.RESERVED

    @property
    def is_confirmed(self) -> bool:
        return self.confirmed_at is not None

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
        # Per assignment: a discarded claim's labels stay (audit) beside the real worker's own on the same unit.
        constraints = [models.UniqueConstraint(fields=["assignment", "unit"],
                                               name="one_label_per_assignment_and_unit")]

    def __str__(self) -> str:
        return f"{self.annotator} on {self.unit}"

    def missing(self, unit: Unit, hit: Hit) -> list[str]:
        """The questions of `unit` this label leaves unanswered, as field names."""
        missing = [name for name in unit.question_fields(hit) if getattr(self, name) is None]
        if "has_error" not in missing and self.has_error and not self.error_types:
            missing.append("error_types")
        return missing

    @property
    def error_type_names(self) -> str:
        """The error types in words ("entity error, relation error"), as the annotator chose them on the page."""
        return ", ".join(ErrorType(value).label.lower() if value in ErrorType.values else value
                         for value in self.error_types)


class ItemFlag(models.Model):
    """An annotator's note that an item is broken or unclear (garbled text, an ambiguous sentence), for the manager.

    Kept apart from the label: a flag is not an answer, and the item must still be answered."""

    MAX_COMMENT = 1000

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="flags")
    unit = models.ForeignKey(Unit, on_delete=models.CASCADE, related_name="flags")
    comment = models.TextField()
    created = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["unit", "pk"]
        constraints = [models.UniqueConstraint(fields=["assignment", "unit"], name="one_flag_per_assignment_and_unit")]

    def __str__(self) -> str:
        return f"Flag on {self.unit} by {self.assignment.annotator}"
