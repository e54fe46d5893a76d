"""What the analytics store of their own: the majority labels of a published benchmark release.

Evaluator scores, computed or imported, are in assist.models. Annotators' labels are in annotation.models; a
release's labels are not annotators' labels (it publishes only the majority of each item), so they live here,
apart, and the analytics read them only for a project that has no counted annotator label (exports.selectors).
"""

from django.db import models

from corpus.models import Project, Summary


class ReleaseLabels(models.Model):
    """One summary's majority labels and human scores as a release published them (exports.release).

    Lists follow the release: `fact_verification_label` and `sentence_label` one item per summary sentence,
    `keyfact_validation_label` one per candidate key-fact of the document, `keyfact_label` one per entry of
    `keyfact` (the human key-facts, in the release's order).
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="release_labels")
    summary = models.OneToOneField(Summary, on_delete=models.CASCADE, related_name="release_labels")
    release = models.CharField(max_length=100, help_text="Which release the labels come from, e.g. UniSumEval-v1.0")
    fact_verification_label = models.JSONField(help_text="Per sentence: 1 = factual error, 0 = none")
    fact_verification_error_type = models.JSONField(default=list, help_text="Per sentence: the error types")
    faithfulness_score = models.FloatField(null=True)
    keyfact_validation_label = models.JSONField(default=list, help_text="Per candidate key-fact, as published")
    keyfact = models.JSONField(default=list, help_text="The human key-facts, in the release's order")
    keyfact_label = models.JSONField(default=list, help_text="Per human key-fact: 1 = conveyed by the summary")
    sentence_label = models.JSONField(default=list, help_text="Per sentence: 1 = carries a human key-fact")
    completeness = models.FloatField(null=True)
    conciseness = models.FloatField(null=True)
    imported = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "release labels"

    def __str__(self) -> str:
        return f"{self.release} labels of summary {self.summary_id}"
