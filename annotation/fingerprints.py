"""The parts stored numbers' fingerprints are built from (corpus.snapshots): one aggregate per table over indexed
foreign keys, each moving whenever what it stands for changes.

Labels are read through their assignments, not one by one (1.7M labels at 10x UniSumEval would cost a page
seconds): a label is written only while its assignment is open (annotation.services.answers locks an open one) and
counts only once the assignment enters the counted submissions (submitted, confirmed, discarded, graded, overridden,
deleted), which moves their aggregates. Bulk writers (simulation, restore) create counted assignments with their
labels. A flag stands once its annotator leaves the HIT (annotation.selectors.standing_flag_q), read the same way.
"""

from django.db.models import Count, Max, Sum

from corpus.models import Project

from .models import Adjudication, Assignment, Grade, Hit, ItemFlag
from .models.assignment import counted_submission_q
from .selectors import standing_flag_q


def counted_submissions(project: Project) -> dict:
    """The set of counted submissions (its size, the sum and largest of its ids, its latest submission and
    confirmation, its missed checks): a reservation or an answer saved on one changes nothing until it is submitted,
    and a grade or an override matters only by moving a submission in or out of the set."""
    return Assignment.objects.filter(counted_submission_q(), hit__project=project).aggregate(
        n=Count("pk"), ids=Sum("pk"), last=Max("pk"), submitted=Max("submitted_at"), confirmed=Max("confirmed_at"),
        missed=Sum("grade__checks_failed"))


def grades(project: Project) -> dict:
    """Every grade, failed ones too (the attention-check pass rates count the checks of submissions that do not)."""
    return Grade.objects.filter(assignment__hit__project=project).aggregate(
        n=Count("pk"), last=Max("pk"), checks=Sum("checks_total"), failed=Sum("checks_failed"),
        overridden=Max("overridden_at"))


def adjudications(project: Project) -> dict:
    return Adjudication.objects.filter(unit__hit__project=project).aggregate(
        n=Count("pk"), last=Max("pk"), changed=Max("updated_at"))


def standing_flags(project: Project) -> dict:
    return ItemFlag.objects.filter(standing_flag_q(), unit__hit__project=project).aggregate(
        n=Count("pk"), ids=Sum("pk"), last=Max("pk"))


def hits(project: Project) -> dict:
    return Hit.objects.filter(project=project).aggregate(n=Count("pk"), last=Max("pk"))
