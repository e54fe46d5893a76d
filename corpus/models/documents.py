"""The protocol's inputs: documents, summaries, key-facts and their stored sentences (paper 3.1-3.3, B.3).

Sentence indices are assigned once at import and never recomputed: highlights, labels and exports refer to them.
"""

from django.db import models
from django.urls import reverse

from .project import Project


class Document(models.Model):
    class InputType(models.TextChoices):
        DIALOGUE = "dialogue", "Dialogue"
        NON_DIALOGUE = "non-dialogue", "Non-dialogue"

    class Length(models.TextChoices):
        SHORT = "short", "Short"
        LONG = "long", "Long"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="documents")
    uid = models.CharField(max_length=200)
    doc_id = models.CharField(max_length=200)
    source = models.CharField(max_length=100, help_text="Source dataset, e.g. CNN/DM or MultiWOZ")
    domain = models.CharField(max_length=100)
    input_type = models.CharField(max_length=16, choices=InputType.choices)
    length = models.CharField(max_length=8, choices=Length.choices)
    redact_type = models.CharField(max_length=32, blank=True, help_text="As given by the dataset, e.g. redacted")
    text = models.TextField()
    reference = models.TextField(blank=True)
    word_count = models.PositiveIntegerField()
    text_sha256 = models.CharField(max_length=64)
    hallucinogenic = models.BooleanField(null=True, help_text="Set by hallucinogenic selection (paper B.2)")

    class Meta:
        db_table = "annotation_document"
        ordering = ["domain", "uid"]
        constraints = [models.UniqueConstraint(fields=["project", "uid"], name="document_uid_unique_in_project")]
        indexes = [models.Index(fields=["project", "domain"])]

    def __str__(self) -> str:
        return self.uid

    def get_absolute_url(self) -> str:
        return reverse("document_detail", args=[self.project.slug, self.pk])

    def turns(self) -> list[dict]:
        """The stored sentences grouped for display: one block per speaker turn for a dialogue, one block for any
        other document. Each block: {"turn", "speaker", "sentences"}."""
        turns: list[dict] = []
        for sentence in self.sentences.all():
            if not turns or sentence.turn != turns[-1]["turn"] or (
                    sentence.turn is None and turns[-1]["turn"] is not None):
                turns.append({"turn": sentence.turn, "speaker": sentence.speaker, "sentences": []})
            turns[-1]["sentences"].append(sentence)
        return turns

    @property
    def is_redacted(self) -> bool:
        return self.redact_type.lower() in ("redacted", "redaction", "yes", "true")


class DocumentSentence(models.Model):
    # No index of its own: the unique (document, index) constraint's index leads with it, and a second one only
    # slows the import's tens of thousands of inserts.
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="sentences", db_index=False)
    index = models.PositiveIntegerField()
    text = models.TextField()
    # Dialogues are split into speaker turns first; a turn may hold several sentences.
    turn = models.PositiveIntegerField(null=True)
    speaker = models.CharField(max_length=100, blank=True)

    class Meta:
        db_table = "annotation_documentsentence"
        ordering = ["document", "index"]
        constraints = [models.UniqueConstraint(fields=["document", "index"], name="document_sentence_index_unique")]

    def __str__(self) -> str:
        return f"{self.document_id}[{self.index}]"


class Summary(models.Model):
    # Indexed by the unique (document, model) constraint, as DocumentSentence.document is.
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="summaries", db_index=False)
    model = models.CharField(max_length=100, help_text="The summarizer that wrote it")
    text = models.TextField()
    text_sha256 = models.CharField(max_length=64)

    class Meta:
        db_table = "annotation_summary"
        ordering = ["document", "model"]
        verbose_name_plural = "summaries"
        constraints = [models.UniqueConstraint(fields=["document", "model"], name="one_summary_per_model")]

    def __str__(self) -> str:
        return f"{self.document.uid} / {self.model}"


class SummarySentence(models.Model):
    # Indexed by the unique (summary, index) constraint, as DocumentSentence.document is.
    summary = models.ForeignKey(Summary, on_delete=models.CASCADE, related_name="sentences", db_index=False)
    index = models.PositiveIntegerField()
    text = models.TextField()

    class Meta:
        db_table = "annotation_summarysentence"
        ordering = ["summary", "index"]
        constraints = [models.UniqueConstraint(fields=["summary", "index"], name="summary_sentence_index_unique")]

    def __str__(self) -> str:
        return f"{self.summary_id}[{self.index}]"


class KeyFact(models.Model):
    class Origin(models.TextChoices):
        IMPORTED = "imported", "Imported candidate"
        GENERATED = "generated", "Generated by an LLM"
        HUMAN = "human", "Imported human key-fact"

    class Status(models.TextChoices):
        CANDIDATE = "candidate", "Candidate"
        ACCEPTED = "accepted", "Accepted (human key-fact)"
        REJECTED = "rejected", "Rejected"

    # Indexed by the unique (document, index) constraint, as DocumentSentence.document is.
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="keyfacts", db_index=False)
    index = models.PositiveIntegerField()
    text = models.TextField()
    origin = models.CharField(max_length=16, choices=Origin.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.CANDIDATE)

    class Meta:
        db_table = "annotation_keyfact"
        ordering = ["document", "index"]
        constraints = [models.UniqueConstraint(fields=["document", "index"], name="keyfact_index_unique")]

    def __str__(self) -> str:
        return self.text
