"""What the AI assistance computed, stored with everything needed to reproduce or audit it (paper 3.4, B)."""

import numpy as np
from django.db import models

from corpus.models import Document, Job, KeyFact, Project, Summary, SummarySentence


class Category(models.TextChoices):
    """The pre-label categories (paper appendix C, table 11)."""

    NO_ERROR = "no_error", "No error"
    OUT_OF_ARTICLE = "out_of_article", "Out-of-article error"
    ENTITY = "entity", "Entity error"
    RELATION = "relation", "Relation error"
    SENTENCE = "sentence", "Sentence error"


class DocumentEmbedding(models.Model):
    """A document's sentence embeddings, computed once per model whatever the number of summaries (paper 3.4)."""

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


class TextEmbedding(models.Model):
    """A summary sentence's or key-fact's embedding, kept per project and model (assist.text_vectors): the
    contextual mapping embeds every one, and the HIT builds read them back to disguise attention checks (their
    highlights, the offline labeler's judgment) instead of calling the model again for each check."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="text_embeddings")
    model_name = models.CharField(max_length=200)
    model_version = models.CharField(max_length=100)
    text_sha256 = models.CharField(max_length=64)
    vector = models.BinaryField(help_text="float32, L2-normalised")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "model_name", "model_version", "text_sha256"],
                                    name="one_text_embedding_per_model")
        ]


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


class EvaluatorScore(models.Model):
    """One automatic evaluator's scores for one summary, computed by a run here or imported from elsewhere.

    The four dimension columns hold the evaluator's score for the human score of the same name, in [0, 1] (an
    imported evaluator may use any scale; correlations do not depend on it); None = the evaluator gives none.
    Each evaluator documents which of its own scores fills which column (assist.evaluators); its own scores
    under their own names are in `scores`. Everything needed to audit a score is kept beside it: the evaluator's
    version, the model, the prompt version and, for LLM evaluators, every call with its raw answer and cost.
    """

    class Origin(models.TextChoices):
        RUN = "run", "Computed by a run"
        IMPORTED = "imported", "Imported"

    class Status(models.TextChoices):
        OK = "ok", "OK"
        FAILED = "failed", "Failed"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="evaluator_scores")
    summary = models.ForeignKey(Summary, on_delete=models.CASCADE, related_name="evaluator_scores")
    evaluator = models.CharField(max_length=100, help_text="sbertscore, finesure, factsim or an imported name")
    origin = models.CharField(max_length=10, choices=Origin.choices, default=Origin.IMPORTED)
    job = models.ForeignKey(Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="evaluator_scores")
    evaluator_version = models.CharField(max_length=50, blank=True)
    backend = models.CharField(max_length=50, blank=True, help_text="The LLM backend; empty for offline work")
    model = models.CharField(max_length=200, blank=True, help_text="The LLM, or the embedding model name@version")
    embedding_model = models.CharField(max_length=200, blank=True, help_text="name@version, when one is used")
    prompt_version = models.CharField(max_length=100, blank=True)
    inputs_sha256 = models.CharField(max_length=64, blank=True,
                                     help_text="Hash of the sentences (and key-facts) the scores were computed from")
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.OK)
    error = models.TextField(blank=True)
    faithfulness = models.FloatField(null=True, blank=True)
    completeness = models.FloatField(null=True, blank=True)
    conciseness = models.FloatField(null=True, blank=True)
    composite = models.FloatField(null=True, blank=True)
    scores = models.JSONField(default=dict, blank=True, help_text="The evaluator's own scores, by their names")
    details = models.JSONField(default=dict, blank=True, help_text="What the scores were computed from")
    calls = models.JSONField(default=list, blank=True,
                             help_text="LLM calls: step, model, raw_response, latency_ms, tokens, attempts, cached")
    latency_ms = models.PositiveIntegerField(default=0, help_text="Summed over the calls")
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    DIMENSIONS = ("faithfulness", "completeness", "conciseness", "composite")

    class Meta:
        ordering = ["evaluator", "summary_id"]
        constraints = [models.UniqueConstraint(fields=["evaluator", "summary"], name="one_evaluator_score_per_summary")]
        indexes = [models.Index(fields=["project", "evaluator"])]

    def __str__(self) -> str:
        return f"{self.evaluator} on {self.summary_id}"

    def identity(self) -> tuple[str, str, str, str, str]:
        """What decides the scores: a run skips a summary whose OK score has the identity it would produce."""
        return (self.evaluator_version, self.backend, self.model, self.embedding_model, self.prompt_version)


class EvaluatorSentenceScore(models.Model):
    """An evaluator's judgment of one summary sentence (sentence-level error detection, SBERTScore paper 4.2).

    `score` is higher when the sentence is more likely faithful (SBERTScore: cosine to the best source sentence;
    FactSim: the sentence's claim consistency; FineSurE: 1 for "no error", else 0). `error` is the evaluator's
    own verdict when it gives one (FineSurE); thresholds for the others are chosen by the benchmark.
    """

    evaluator_score = models.ForeignKey(EvaluatorScore, on_delete=models.CASCADE, related_name="sentences")
    summary_sentence = models.ForeignKey(SummarySentence, on_delete=models.CASCADE, related_name="evaluator_scores")
    score = models.FloatField(null=True, blank=True)
    error = models.BooleanField(null=True, blank=True)
    category = models.CharField(max_length=40, blank=True)
    reason = models.TextField(blank=True)
    details = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["evaluator_score_id", "summary_sentence_id"]
        constraints = [models.UniqueConstraint(fields=["evaluator_score", "summary_sentence"],
                                               name="one_sentence_score_per_score")]


class EvaluatorDocumentResult(models.Model):
    """What an evaluator computes once per document and shares between its summaries (FactSim's source claims),
    with the LLM calls that produced it."""

    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="evaluator_results")
    evaluator = models.CharField(max_length=100)
    evaluator_version = models.CharField(max_length=50, blank=True)
    backend = models.CharField(max_length=50, blank=True)
    model = models.CharField(max_length=200, blank=True)
    prompt_version = models.CharField(max_length=100, blank=True)
    sentences_sha256 = models.CharField(max_length=64, help_text="Hash of the document sentences it was made from")
    details = models.JSONField(default=dict, blank=True)
    calls = models.JSONField(default=list, blank=True)
    created = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["document", "evaluator"], name="one_document_result_per_evaluator"),
        ]


class OfflineCalibration(models.Model):
    """A threshold for the offline labeler chosen on a project's human fact-verification labels (assist.calibration),
    with the balanced accuracy it reached on them; the latest one set Project.offline_threshold."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="offline_calibrations")
    threshold = models.FloatField()
    balanced_accuracy = models.FloatField(help_text="On the labeled sentences the threshold was chosen on")
    sentences = models.PositiveIntegerField(help_text="Summary sentences with a human majority label")
    errors = models.PositiveIntegerField(help_text="Of which the majority says they have a factual error")
    default_threshold = models.FloatField(help_text="FINEGRAIN_OFFLINE_THRESHOLD at the time")
    default_balanced_accuracy = models.FloatField(null=True, blank=True)
    label_source = models.CharField(max_length=20, help_text="Which labels were read (exports.selectors)")
    model = models.CharField(max_length=200, help_text="Embedding model name@version")
    prompt_version = models.CharField(max_length=50, help_text="The offline labeler's checks, as pre-labels record")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created", "-pk"]
        get_latest_by = ["created", "pk"]

    def __str__(self) -> str:
        return f"{self.threshold:.2f} on {self.sentences} sentences of {self.project_id}"
