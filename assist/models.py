"""What the AI assistance computed, stored with everything needed to reproduce or audit it (paper 3.4, B)."""

import numpy as np
from django.db import models

from annotation.models import Document, KeyFact, SummarySentence


class Category(models.TextChoices):
    """The pre-label categories (paper appendix C, table 11)."""

    NO_ERROR = "no_error", "No error"
    OUT_OF_ARTICLE = "out_of_article", "Out-of-article error"
    ENTITY = "entity", "Entity error"
    RELATION = "relation", "Relation error"
    SENTENCE = "sentence", "Sentence error"


class DocumentEmbedding(models.Model):
    """A document's sentence embeddings, computed once per model whatever the number of summaries (BRIEF step 5)."""

    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="embeddings")
    model_name = models.CharField(max_length=200)
    model_version = models.CharField(max_length=100)
    sentences_sha256 = models.CharField(max_length=64, help_text="Hash of the sentences that were embedded")
    dim = models.PositiveIntegerField()
    vectors = models.BinaryField(help_text="float32, one row per document sentence, L2-normalised")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["document", "model_name", "model_version"], name="one_embedding_per_model")
        ]

    def matrix(self) -> np.ndarray:
        return np.frombuffer(bytes(self.vectors), dtype=np.float32).reshape(-1, self.dim)


class ContextualMapping(models.Model):
    """Source sentences ranked by similarity to one target; the top fraction is highlighted (paper 3.4)."""

    summary_sentence = models.ForeignKey(
        SummarySentence, null=True, blank=True, on_delete=models.CASCADE, related_name="mappings"
    )
    keyfact = models.ForeignKey(KeyFact, null=True, blank=True, on_delete=models.CASCADE, related_name="mappings")
    ranked = models.JSONField(help_text="Source sentence indices, most similar first")
    scores = models.JSONField(help_text="Cosine similarity of each index in `ranked`")
    highlighted = models.JSONField(help_text="The highlighted indices, in document order")
    fraction = models.FloatField()
    model_name = models.CharField(max_length=200)
    model_version = models.CharField(max_length=100)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(summary_sentence__isnull=False, keyfact__isnull=True)
                | models.Q(summary_sentence__isnull=True, keyfact__isnull=False),
                name="mapping_has_one_target",
            ),
            models.UniqueConstraint(fields=["summary_sentence"], condition=models.Q(summary_sentence__isnull=False),
                                    name="one_mapping_per_summary_sentence"),
            models.UniqueConstraint(fields=["keyfact"], condition=models.Q(keyfact__isnull=False),
                                    name="one_mapping_per_keyfact"),
        ]


class PreLabel(models.Model):
    """An automatic evaluator's judgment of one summary sentence, with its reason (paper B.2)."""

    class Status(models.TextChoices):
        OK = "ok", "OK"
        FAILED = "failed", "Failed"

    summary_sentence = models.ForeignKey(SummarySentence, on_delete=models.CASCADE, related_name="prelabels")
    category = models.CharField(max_length=20, choices=Category.choices, blank=True)
    reason = models.TextField(blank=True)
    status = models.CharField(max_length=8, choices=Status.choices)
    error = models.TextField(blank=True)
    backend = models.CharField(max_length=50)
    model = models.CharField(max_length=200)
    prompt_version = models.CharField(max_length=50)
    raw_response = models.TextField(blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    attempts = models.PositiveSmallIntegerField(default=1)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created"]
        constraints = [
            models.UniqueConstraint(fields=["summary_sentence", "backend", "model", "prompt_version"],
                                    name="one_prelabel_per_backend_version"),
        ]

    @property
    def flagged(self) -> bool:
        return self.status == self.Status.OK and self.category != Category.NO_ERROR


class KeyFactVote(models.Model):
    """One LLM's vote on a candidate key-fact (paper B.3); the majority keeps or drops the candidate."""

    keyfact = models.ForeignKey(KeyFact, on_delete=models.CASCADE, related_name="votes")
    backend = models.CharField(max_length=50)
    model = models.CharField(max_length=200)
    accept = models.BooleanField(null=True, help_text="None: the voter failed to answer")
    reason = models.TextField(blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["keyfact", "backend", "model"], name="one_vote_per_voter")]


class LLMCacheEntry(models.Model):
    """Identical requests (backend, model, prompt version, input) are answered from here, never sent twice."""

    key = models.CharField(max_length=64, unique=True)
    response = models.JSONField()
    created = models.DateTimeField(auto_now_add=True)
