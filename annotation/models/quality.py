"""Quality control records (paper 3.4, 3.5, G.1-G.3).

AttentionCheck: the expected answer of an injected check unit. It lives only here, never on the Unit, and no
serializer or template reads it: nothing sent to an annotator can tell a check from a real unit.
Grade: the outcome of grading one submitted assignment, with a manager's recorded override.
Decision: an intent to approve, reject, pay a bonus, block, unblock or add a place, written once with a deterministic
idempotency key and executed by the crowd provider's outbox task, so a decision is never lost and never carried out
twice.
"""

from django.conf import settings
from django.db import models

from corpus.models import Document, Project

from .annotator import Annotator
from .assignment import Assignment
from .work import Unit


class AttentionCheck(models.Model):
    class Kind(models.TextChoices):
        # FV: a sentence taken from a document of another domain, shown with a platform-set AI judgment.
        FV_AI_SAYS_CORRECT = "fv_ai_says_correct", "FV: foreign sentence, AI says correct (must disagree)"
        FV_AI_SAYS_ERROR = "fv_ai_says_error", "FV: foreign sentence, AI says error (must agree)"
        # FV with the offline labeler, whose judgments are its own: a sentence of the document with one name
        # exchanged for another of its names, an error the labeler does not see.
        FV_NAME_SWAPPED = "fv_name_swapped", "FV: a name exchanged, AI says correct (must disagree)"
        # KV: a key-fact of another document, which must be judged not useful.
        KV_IRRELEVANT = "kv_irrelevant", "KV: irrelevant key-fact (must be not useful)"
        # KA: a fake key-fact row, a paraphrase column, an unrelated sentence column.
        KA_FAKE_KEYFACT = "ka_fake_keyfact", "KA: fake key-fact (aligned with nothing)"
        KA_PARAPHRASE = "ka_paraphrase", "KA: paraphrase of a key-fact (aligned with it)"
        KA_UNRELATED_SENTENCE = "ka_unrelated_sentence", "KA: unrelated sentence (aligned with nothing)"

    unit = models.OneToOneField(Unit, on_delete=models.CASCADE, related_name="attention_check")
    kind = models.CharField(max_length=32, choices=Kind.choices)
    # The answers that pass, in Label field names, e.g. {"has_error": true, "ai_right": false}.
    expected = models.JSONField()
    origin_document = models.ForeignKey(Document, null=True, blank=True, on_delete=models.SET_NULL,
                                        related_name="+", help_text="Where the foreign text was taken from")
    # What makes the check's text wrong when it is not foreign, in words for the grade's reason.
    note = models.CharField(max_length=300, blank=True, default="")
    created = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.get_kind_display()} on unit {self.unit_id}"


class Grade(models.Model):
    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="grade")
    passed = models.BooleanField()
    checks_total = models.PositiveIntegerField(default=0)
    checks_failed = models.PositiveIntegerField(default=0)
    reason = models.TextField(blank=True, help_text="What was missed, in words a worker can read")
    graded_at = models.DateTimeField(auto_now_add=True)
    # A manager may overturn the automatic grade; the reason and who did it are kept (audit).
    override_passed = models.BooleanField(null=True, blank=True)
    override_reason = models.TextField(blank=True)
    overridden_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                      related_name="+")
    overridden_at = models.DateTimeField(null=True, blank=True)

    @property
    def counts(self) -> bool:
        """Whether the submission's labels count in aggregation, agreement and exports."""
        return self.passed if self.override_passed is None else self.override_passed


class Decision(models.Model):
    class Kind(models.TextChoices):
        APPROVE = "approve", "Approve"
        REJECT = "reject", "Reject"
        BONUS = "bonus", "Bonus"
        BLOCK = "block", "Block"
        UNBLOCK = "unblock", "Unblock"
        # A failed submission gives its place back (AssignmentQuerySet.holding_a_place); on MTurk and Prolific the
        # HIT was published with exactly N places, so one more place is opened there (annotation/crowd/outbox.py).
        ADD_PLACE = "extend", "Add a place"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        DONE = "done", "Done"
        FAILED = "failed", "Failed (needs a person)"
        CANCELLED = "cancelled", "Cancelled"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="decisions")
    annotator = models.ForeignKey(Annotator, on_delete=models.PROTECT, related_name="decisions")
    assignment = models.ForeignKey(Assignment, null=True, blank=True, on_delete=models.PROTECT,
                                   related_name="decisions")
    kind = models.CharField(max_length=12, choices=Kind.choices)
    amount_usd = models.DecimalField(max_digits=8, decimal_places=2, null=True, blank=True)
    reason = models.TextField(blank=True, help_text="Shown to the worker for rejections and bonuses")
    # Deterministic, e.g. "reject:<assignment>", "bonus:<annotator>:<streak>": writing it twice is impossible.
    idempotency_key = models.CharField(max_length=200, unique=True)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    last_error = models.TextField(blank=True)
    provider_response = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+", help_text="Empty: taken by the project's policy")
    # The confirmed submissions the decision rests on: the one graded (approve, reject, add a place), the run of
    # good ones (bonus), the failures counted (block). The outbox carries out a policy decision only while every one
    # of them is confirmed by the provider (annotation/crowd/outbox.py).
    rests_on = models.ManyToManyField(Assignment, blank=True, related_name="cited_by")
    created = models.DateTimeField(auto_now_add=True)
    executed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created", "pk"]
        indexes = [models.Index(fields=["status", "created"])]

    def __str__(self) -> str:
        return f"{self.kind} {self.annotator} ({self.status})"
