"""The people who label: one pseudonymous row per worker, whichever way they arrive (account, link, crowd), and
their standing in each project they work in (status and screening test), which is per project: a block or a failed
screening in one project says nothing about another."""

import uuid

from django.conf import settings
from django.db import models
from django.db.models.functions import Coalesce
from django.utils import timezone


class AnnotatorQuerySet(models.QuerySet):
    def with_status_in(self, project):
        """Each annotator with `status_in_project`, their status in `project` (active when nothing is recorded)."""
        status = ProjectAnnotator.objects.filter(annotator=models.OuterRef("pk"), project=project).values("status")
        return self.annotate(status_in_project=Coalesce(
            models.Subquery(status[:1]), models.Value(Annotator.Status.ACTIVE.value)))


class Annotator(models.Model):
    class Provider(models.TextChoices):
        ACCOUNT = "account", "In-house account"
        LINK = "link", "Private link"
        MTURK = "mturk", "Amazon Mechanical Turk"
        PROLIFIC = "prolific", "Prolific"
        # Synthetic labels from `simulate_annotations` (pilots, load tests): never mixed with real ones in exports.
        SIMULATED = "simulated", "Simulated (pilot)"

    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        PAUSED = "paused", "Paused"
        BLOCKED = "blocked", "Blocked"

    # Exports and manager pages name annotators by this id only, never by account or crowd worker id.
    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    user = models.OneToOneField(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="annotator")
    provider = models.CharField(max_length=16, choices=Provider.choices)
    # The account's primary key, the link token's id, or the crowd platform's worker id.
    external_id = models.CharField(max_length=200)
    created = models.DateTimeField(auto_now_add=True)

    objects = AnnotatorQuerySet.as_manager()

    class Meta:
        ordering = ["created", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["provider", "external_id"], name="one_annotator_per_worker")
        ]

    def __str__(self) -> str:
        return self.pseudonym

    @property
    def pseudonym(self) -> str:
        return f"ann-{self.public_id.hex[:10]}"

    @property
    def is_simulated(self) -> bool:
        return self.provider == self.Provider.SIMULATED

    def standing_in(self, project) -> "ProjectAnnotator":
        """The annotator's standing in `project`, as stored now (an unsaved active one if nothing was recorded)."""
        found = ProjectAnnotator.objects.filter(annotator=self, project=project).first()
        return found or ProjectAnnotator(annotator=self, project=project)

    def status_in(self, project) -> str:
        return self.standing_in(project).status


class ProjectAnnotator(models.Model):
    """An annotator as one project knows them: whether they may work there, and their screening test there.

    No row means active and not screened. The status is set by the project's quality policy and its managers, and
    by the provider decisions of that project only; it cites the submissions it rests on.
    """

    project = models.ForeignKey("corpus.Project", on_delete=models.CASCADE, related_name="annotator_standings")
    annotator = models.ForeignKey(Annotator, on_delete=models.CASCADE, related_name="standings")
    status = models.CharField(max_length=16, choices=Annotator.Status.choices, default=Annotator.Status.ACTIVE)
    status_reason = models.TextField(blank=True)
    status_changed_at = models.DateTimeField(null=True, blank=True)
    status_changed_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                          related_name="+", help_text="Empty: the project's policy")
    # The confirmed submissions a policy pause or block rests on (empty for a manager's own judgment).
    status_rests_on = models.ManyToManyField("Assignment", blank=True, related_name="+")
    # The comprehension test (annotation/quality/qualification.py): when it was passed here, and how many attempts
    # were used; `Project.screening_attempts` bounds them.
    qualified_at = models.DateTimeField(null=True, blank=True)
    screening_attempts = models.PositiveSmallIntegerField(default=0)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "annotator"]
        constraints = [models.UniqueConstraint(fields=["project", "annotator"],
                                               name="one_standing_per_annotator_and_project")]

    def __str__(self) -> str:
        return f"{self.annotator} in {self.project}: {self.status}"

    @property
    def may_work(self) -> bool:
        return self.status == Annotator.Status.ACTIVE

    @classmethod
    def locked(cls, annotator, project) -> "ProjectAnnotator":
        """The row, created if missing and locked for an update (call inside a transaction)."""
        cls.objects.get_or_create(annotator=annotator, project=project)
        return cls.objects.select_for_update().get(annotator=annotator, project=project)

    def set_status(self, status: str, *, reason: str = "", user=None, rests_on=None) -> None:
        """Record a status change here, who made it (None: the policy) and why; `rests_on`: the confirmed
        submissions it rests on. The row must be saved (and locked: `locked`)."""
        self.status, self.status_reason, self.status_changed_by = status, reason, user
        self.status_changed_at = timezone.now()
        self.save(update_fields=["status", "status_reason", "status_changed_by", "status_changed_at"])
        self.status_rests_on.set(list(rests_on or []))
