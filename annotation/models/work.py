"""The annotation work: the three tasks, HITs and the units inside them (paper 3.3, 3.5; README, "Annotation").

A unit carries a *display snapshot*: everything an annotator is shown about it (the target text, the KA sentence,
the highlighted source sentences, the AI judgment) is copied onto the unit when it is built. Pages and serializers
read only these fields, never the corpus rows behind them, so that a unit whose text does not come from the
document (an attention check) renders exactly like a real one. The foreign keys to the corpus are for aggregation
and export only.
"""

import uuid

from django.db import models

from assist.models import Category
from corpus.models import Assistance, Document, KeyFact, Project, Summary, SummarySentence

from ..redundancy import Verdict, redundancy_of


class Task(models.TextChoices):
    FACT_VERIFICATION = "fv", "Fact verification"
    KEYFACT_VALIDATION = "kv", "Key-fact validation"
    KEYFACT_ALIGNMENT = "ka", "Key-fact alignment"


class ErrorType(models.TextChoices):
    """The four factual error types an annotator may pick (paper appendix C), in the order of the 1-4 shortcuts."""

    ENTITY = "entity", "Entity error"
    RELATION = "relation", "Relation error"
    SENTENCE = "sentence", "Sentence error"
    OUT_OF_ARTICLE = "out_of_article", "Out-of-article error"


class Hit(models.Model):
    """One unit of crowd work: FV = one summary, KV = one document, KA = one summary against the human key-facts."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="hits")
    task = models.CharField(max_length=2, choices=Task.choices)
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="hits")
    summary = models.ForeignKey(Summary, null=True, blank=True, on_delete=models.CASCADE, related_name="hits")
    # The order in which HITs of one task are handed out.
    position = models.PositiveIntegerField()
    # Blank: the project's level. Set for an ablation that shows less assistance on some HITs (paper 3.4).
    assistance = models.CharField(max_length=16, choices=Assistance.choices, blank=True)
    # Places beyond the project's annotators per unit: a manager sent the HIT back for more labels (review).
    extra_places = models.PositiveSmallIntegerField(default=0)
    # 0: the HIT every unit starts in; 1, 2, ...: a top-up HIT, one more label for units its project's redundancy
    # policy found undecided (annotation.redundancy), numbered per document (KV) or summary (FV, KA).
    round = models.PositiveSmallIntegerField(default=0)
    # How many units it has, checks included, written by the builds (annotation.services.hits.recount_units): the
    # progress page adds these up instead of counting every unit of the project each time it is polled.
    unit_count = models.PositiveIntegerField(default=0)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project_id", "task", "position", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["task", "summary", "round"], condition=models.Q(summary__isnull=False),
                                    name="one_hit_per_task_summary_and_round"),
            models.UniqueConstraint(fields=["task", "document", "round"], condition=models.Q(summary__isnull=True),
                                    name="one_summaryless_hit_per_task_document_and_round"),
            models.CheckConstraint(
                condition=models.Q(task="kv", summary__isnull=True) | models.Q(task__in=["fv", "ka"],
                                                                                summary__isnull=False),
                name="hit_summary_matches_task",
            ),
        ]
        indexes = [models.Index(fields=["project", "task", "position"])]

    def __str__(self) -> str:
        return f"{self.get_task_display()} HIT {self.position} ({self.document_id})"

    @property
    def places(self) -> int:
        """How many submissions of this HIT count: the labels its round asks of each unit (the first round's, or one
        in a top-up), plus places added in review."""
        return redundancy_of(self.project).places(self.round) + self.extra_places

    @classmethod
    def lock(cls, pk: int) -> None:
        """Lock the HIT's row for the transaction: the one lock order every writer of its work follows."""
        list(cls.objects.select_for_update().filter(pk=pk).values_list("pk", flat=True))

    @property
    def effective_assistance(self) -> str:
        return self.assistance or self.project.assistance

    @property
    def shows_highlights(self) -> bool:
        return self.effective_assistance != Assistance.NONE

    @property
    def shows_ai_label(self) -> bool:
        return self.task == Task.FACT_VERIFICATION and self.effective_assistance in (Assistance.LABEL,
                                                                                     Assistance.REASON)

    @property
    def shows_ai_reason(self) -> bool:
        return self.task == Task.FACT_VERIFICATION and self.effective_assistance == Assistance.REASON


class Unit(models.Model):
    """One item an annotator labels: a summary sentence (FV), a key-fact (KV), a key-fact/sentence pair (KA)."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    hit = models.ForeignKey(Hit, on_delete=models.CASCADE, related_name="units")
    task = models.CharField(max_length=2, choices=Task.choices)
    # Order inside the HIT; also the number pages use in element ids and field names.
    position = models.PositiveIntegerField()
    summary_sentence = models.ForeignKey(SummarySentence, null=True, blank=True, on_delete=models.CASCADE,
                                         related_name="units")
    keyfact = models.ForeignKey(KeyFact, null=True, blank=True, on_delete=models.CASCADE, related_name="units")
    # In a top-up HIT: the unit of the first round it adds a label to (the same item, shown the same way). Its
    # labels are that unit's labels for aggregation, agreement and the redundancy policy.
    origin = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="topups")

    # --- The display snapshot. FV: `text` is the summary sentence. KV: `text` is the key-fact. KA: `text` is the
    # key-fact and `sentence_text` the summary sentence; `row` numbers the key-fact, `column` the sentence.
    text = models.TextField()
    sentence_text = models.TextField(blank=True)
    row = models.PositiveIntegerField(null=True, blank=True)
    column = models.PositiveIntegerField(null=True, blank=True)
    # Source sentence indices to highlight (contextual mapping, paper 3.4), in document order; null until mapped.
    highlighted = models.JSONField(null=True, blank=True)
    # FV only: the AI judgment shown (paper B.2), its reason, and who made it.
    ai_category = models.CharField(max_length=20, blank=True)
    ai_reason = models.TextField(blank=True)
    ai_source = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["hit", "position"]
        constraints = [models.UniqueConstraint(fields=["hit", "position"], name="unit_position_unique_in_hit")]

    def __str__(self) -> str:
        return f"{self.hit_id}#{self.position}"

    @property
    def ai_category_label(self) -> str:
        """The AI judgment in words ("Out-of-article error"), as the HIT page names it to people."""
        return Category(self.ai_category).label if self.ai_category in Category.values else self.ai_category

    def question_fields(self, hit: Hit) -> list[str]:
        """The answers this unit needs before its HIT can be submitted (error types are checked separately)."""
        if self.task == Task.KEYFACT_VALIDATION:
            return ["useful"]
        if self.task == Task.KEYFACT_ALIGNMENT:
            return ["aligned"]
        fields = ["has_error"]
        if hit.shows_ai_label and self.ai_category:
            fields.insert(0, "ai_right")
        return fields


class UnitState(models.Model):
    """Where a real unit of the first round stands under its project's redundancy policy (annotation.redundancy):
    its counted labels (its own and its top-ups'), the labels it should have, and the verdict. Derived from the
    counted labels, and written again whenever one of them starts or stops counting (a submission, a confirmation,
    a discard, a grade overridden), under this row's lock: two submissions settling the same unit at once are
    written one after the other, the second from both labels. Attention checks have none: they never get top-ups.
    """

    unit = models.OneToOneField(Unit, on_delete=models.CASCADE, primary_key=True, related_name="state")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    task = models.CharField(max_length=2, choices=Task.choices)
    counted = models.PositiveSmallIntegerField(default=0)
    yes = models.PositiveSmallIntegerField(default=0)
    target = models.PositiveSmallIntegerField(default=0)
    verdict = models.CharField(max_length=12, choices=Verdict.choices, default=Verdict.COLLECTING)
    # The policy the verdict was reached under, and the round of the HIT whose label settled the unit.
    policy = models.CharField(max_length=10, blank=True)
    settled_round = models.PositiveSmallIntegerField(null=True, blank=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["project", "task", "verdict"])]

    def __str__(self) -> str:
        return f"{self.unit_id}: {self.verdict} ({self.counted}/{self.target})"
