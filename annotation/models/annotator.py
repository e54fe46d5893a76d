"""The people who label: one pseudonymous row per worker, whichever way they arrive (account, link, crowd)."""

import uuid

from django.conf import settings
from django.db import models


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
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    created = models.DateTimeField(auto_now_add=True)
    # When the annotator passed the comprehension test (annotation/quality/qualification.py); null: not yet.
    qualified_at = models.DateTimeField(null=True, blank=True)

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

    @property
    def may_work(self) -> bool:
        return self.status == self.Status.ACTIVE
