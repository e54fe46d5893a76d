"""Per-HIT assistance levels: the paper's assistance ablation (3.4) rerun on any dataset.

A HIT shows its project's level unless a manager sets its own. The level decides what an annotator sees and which
questions they are asked ("is the AI right?" only where the AI judgment is shown), so it may change only while
nobody has worked on the HIT: once somebody holds or submitted it, or gave an answer, its labels belong to the level
they saw.
"""

import logging
import random
from dataclasses import dataclass

from django.db import transaction

from corpus.models import Assistance, Project

from ..models import Hit
from ..selectors import started_hits

logger = logging.getLogger(__name__)

PROJECT_LEVEL = ""  # The HIT follows its project's level.


class AssistanceRefused(Exception):
    status_code = 400


@dataclass
class AblationResult:
    chosen: int  # HITs that now show the level.
    changed: int
    started: int  # HITs left as they were because somebody works or worked on them.
    eligible: int


def _check_level(level: str) -> str:
    if level != PROJECT_LEVEL and level not in Assistance.values:
        choices = ", ".join(Assistance.values)
        raise AssistanceRefused(f"Unknown assistance level “{level}”: use one of {choices}, or leave it empty for the "
                                "project's level.")
    return level


@transaction.atomic
def set_hit_assistance(*, hit: Hit, level: str, user=None) -> Hit:
    """Set one HIT's level ('' = the project's); refused once work on the HIT has begun."""
    _check_level(level)
    hit = Hit.objects.select_for_update().select_related("project").get(pk=hit.pk)
    if level == hit.assistance:
        return hit
    if started_hits(Hit.objects.filter(pk=hit.pk)).exists():
        raise AssistanceRefused("Somebody holds, answered or submitted this HIT, so its assistance can no longer "
                                "change: its labels belong to the level that person saw.")
    previous, hit.assistance = hit.assistance, level
    hit.save(update_fields=["assistance"])
    logger.info("hit assistance changed", extra={"hit": str(hit.public_id), "project": hit.project.slug,
                                                 "from": previous or "project", "to": level or "project",
                                                 "user": getattr(user, "username", None)})
    return hit


@transaction.atomic
def assign_ablation(*, project: Project, task: str, level: str, share: float, seed: int, user=None) -> AblationResult:
    """Give `level` to a random `share` (0-1) of the task's HITs that nobody has started, the rest the project's.

    The draw is reproducible: the same seed over the same HITs picks the same ones. HITs already started keep their
    level and are counted apart.
    """
    _check_level(level)
    if not 0 <= share <= 1:
        raise AssistanceRefused(f"The share must be between 0% and 100% (got {share * 100:g}%).")
    hits = Hit.objects.select_for_update().filter(project=project, task=task)
    started = set(started_hits(Hit.objects.filter(project=project, task=task)).values_list("pk", flat=True))
    eligible = [pk for pk in hits.order_by("position", "pk").values_list("pk", flat=True) if pk not in started]
    chosen = set(random.Random(seed).sample(eligible, int(share * len(eligible) + 0.5)))  # Half rounds up.
    changed = Hit.objects.filter(pk__in=chosen).exclude(assistance=level).update(assistance=level)
    changed += (Hit.objects.filter(pk__in=set(eligible) - chosen).exclude(assistance=PROJECT_LEVEL)
                .update(assistance=PROJECT_LEVEL))
    logger.info("assistance ablation assigned", extra={"project": project.slug, "task": task, "level": level,
                                                       "share": share, "seed": seed, "chosen": len(chosen),
                                                       "started": len(started),
                                                       "user": getattr(user, "username", None)})
    return AblationResult(chosen=len(chosen), changed=changed, started=len(started), eligible=len(eligible))
