"""Crowd work on the providers (paper 3.5, G.1-G.2): what was published where, who claimed it,
the provider resources we created once (qualification types, HIT types, participant groups), private links,
and the ledger of every money movement.

Amounts are US dollars with two decimals, as MTurk's Reward strings and Prolific's bonus CSV use them.
"""

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

from corpus.models import Job, Project

from .annotator import Annotator
from .assignment import Assignment
from .quality import Decision
from .work import Hit, Task


class Provider(models.TextChoices):
    MTURK = "mturk", "Amazon Mechanical Turk"
    PROLIFIC = "prolific", "Prolific"
    LINK = "link", "Private link"


class ProviderResource(models.Model):
    """Something created once on a provider and reused: a qualification type, a HIT type, a participant group."""

    provider = models.CharField(max_length=16, choices=Provider.choices)
    sandbox = models.BooleanField(default=False)
    # e.g. "qualification_test", "block_qualification", "hit_type:<project>:<task>:<reward>", "blocklist:<project>"
    key = models.CharField(max_length=200)
    external_id = models.CharField(max_length=200)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["provider", "sandbox", "key"], name="one_resource_per_key")]

    def __str__(self) -> str:
        return f"{self.provider}{' (sandbox)' if self.sandbox else ''} {self.key} = {self.external_id}"


class CrowdBatch(models.Model):
    """One publication: HITs of one task of one project on one provider (a Prolific study, a set of MTurk HITs)."""

    class Status(models.TextChoices):
        PUBLISHING = "publishing", "Publishing"
        PUBLISHED = "published", "Published"
        EXPIRED = "expired", "Expired"

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="crowd_batches")
    task = models.CharField(max_length=2, choices=Task.choices)
    provider = models.CharField(max_length=16, choices=Provider.choices)
    sandbox = models.BooleanField(default=False)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PUBLISHING)
    reward_usd = models.DecimalField(max_digits=8, decimal_places=2)
    assignments_per_hit = models.PositiveSmallIntegerField()
    # MTurk HIT type, or Prolific study id.
    external_id = models.CharField(max_length=200, blank=True)
    completion_code = models.CharField(max_length=64, blank=True)
    estimate = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    # When the provider-side resources (qualification types, HIT type, study) were made: done once per batch.
    prepared_at = models.DateTimeField(null=True, blank=True)
    # The manager page's Job that follows this publication, if any (the queued path advances it per HIT).
    job = models.ForeignKey(Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["-created", "pk"]

    def __str__(self) -> str:
        return f"{self.get_provider_display()} {self.get_task_display()} batch of {self.project}"


class CrowdHit(models.Model):
    """One of our HITs as published in a batch, written before any provider call (the publishing outbox):
    `request_token` makes a repeated or concurrent attempt create nothing twice; pending until `published_at`."""

    batch = models.ForeignKey(CrowdBatch, on_delete=models.CASCADE, related_name="crowd_hits")
    hit = models.ForeignKey(Hit, on_delete=models.CASCADE, related_name="crowd_hits")
    request_token = models.CharField(max_length=64, unique=True)
    external_id = models.CharField(max_length=200, blank=True, db_index=True)
    published_at = models.DateTimeField(null=True, blank=True)
    # When its Celery task was last queued: beat queues it again if it is still pending long after.
    queued_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    # The provider refused it (not a transient failure): left for a person; running `publish` again retries it.
    failed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["batch", "hit__position"]
        constraints = [models.UniqueConstraint(fields=["batch", "hit"], name="one_crowd_hit_per_batch_and_hit")]

    def __str__(self) -> str:
        return f"{self.hit} as {self.external_id or '(unpublished)'}"


class CrowdClaim(models.Model):
    """What a provider told us when a worker arrived (unsigned query parameters), bound to our assignment.

    `verified` turns true only when the provider's own API confirmed the worker holds that assignment (sync).
    """

    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="crowd_claim")
    batch = models.ForeignKey(CrowdBatch, null=True, blank=True, on_delete=models.SET_NULL, related_name="claims")
    provider = models.CharField(max_length=16, choices=Provider.choices)
    # MTurk assignmentId, Prolific SESSION_ID (the submission id), or the private link's id.
    external_assignment_id = models.CharField(max_length=200)
    external_hit_id = models.CharField(max_length=200, blank=True)
    worker_id = models.CharField(max_length=200)
    submit_to = models.URLField(blank=True)
    verified = models.BooleanField(default=False)
    provider_status = models.CharField(max_length=32, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["provider", "external_assignment_id"],
                                               name="one_claim_per_provider_assignment")]

    def __str__(self) -> str:
        return f"{self.provider} {self.external_assignment_id} -> {self.assignment_id}"


class PrivateLink(models.Model):
    """A signed, expiring invitation for in-house annotators and experts: no account needed."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="private_links")
    task = models.CharField(max_length=2, choices=Task.choices)
    label = models.CharField(max_length=200, help_text="Who the link is for, e.g. 'Expert reviewer 2'")
    annotator = models.OneToOneField(Annotator, null=True, blank=True, on_delete=models.SET_NULL,
                                     related_name="private_link")
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"Link for {self.label} ({self.project})"

    def is_usable(self, now=None) -> bool:
        return self.revoked_at is None and self.expires_at > (now or timezone.now())


class LedgerEntry(models.Model):
    """One money movement: a reward on approval, a bonus, and the provider's fee on each. Written once per
    decision and kind, only after the provider accepted the decision, so the ledger is what was really spent."""

    class Kind(models.TextChoices):
        REWARD = "reward", "Reward"
        REWARD_FEE = "reward_fee", "Fee on reward"
        BONUS = "bonus", "Bonus"
        BONUS_FEE = "bonus_fee", "Fee on bonus"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="ledger")
    batch = models.ForeignKey(CrowdBatch, null=True, blank=True, on_delete=models.SET_NULL, related_name="ledger")
    annotator = models.ForeignKey(Annotator, on_delete=models.PROTECT, related_name="ledger")
    decision = models.ForeignKey(Decision, on_delete=models.PROTECT, related_name="ledger")
    provider = models.CharField(max_length=16, choices=Provider.choices)
    kind = models.CharField(max_length=12, choices=Kind.choices)
    amount_usd = models.DecimalField(max_digits=10, decimal_places=2)
    external_ref = models.CharField(max_length=200, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created", "pk"]
        constraints = [models.UniqueConstraint(fields=["decision", "kind"], name="one_ledger_entry_per_decision")]

    def __str__(self) -> str:
        return f"{self.kind} {self.amount_usd} USD to {self.annotator}"
