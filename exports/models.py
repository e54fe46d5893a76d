"""What the analytics store: an automatic evaluator's scores per summary (paper section 6, appendix D.2)."""

from django.db import models

from annotation.models import Project, Summary


class EvaluatorScore(models.Model):
    """One automatic evaluator's scores for one summary, in [0, 1] like the human scores; None = not given."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="evaluator_scores")
    summary = models.ForeignKey(Summary, on_delete=models.CASCADE, related_name="evaluator_scores")
    evaluator = models.CharField(max_length=100)
    faithfulness = models.FloatField(null=True, blank=True)
    completeness = models.FloatField(null=True, blank=True)
    conciseness = models.FloatField(null=True, blank=True)
    composite = models.FloatField(null=True, blank=True)
    imported = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["evaluator", "summary_id"]
        constraints = [models.UniqueConstraint(fields=["evaluator", "summary"], name="one_score_per_evaluator")]
        indexes = [models.Index(fields=["project", "evaluator"])]

    def __str__(self) -> str:
        return f"{self.evaluator} on {self.summary_id}"
