"""Publishing a task's HITs on a provider: the plan (what would be created, what it costs) and the run.

A run can crash anywhere and be started again: the batch and every CrowdHit with its request token are written
before the first remote call, each remote id is saved as soon as it is known, and the provider treats a repeated
token as "already created" (MTurk's UniqueRequestToken), so a re-run creates only what is missing.
"""

import secrets
import statistics
import uuid
from datetime import timedelta
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, Decimal

from django.conf import settings
from django.db import transaction
from django.db.models import Count
from django.urls import reverse
from django.utils import timezone

from ..models import CrowdBatch, CrowdHit, Hit, Project
from .base import CostEstimate, PublishItem, get_provider


@dataclass
class PublishPlan:
    project: Project
    task: str
    provider: str
    sandbox: bool
    reward_usd: Decimal
    assignments_per_hit: int
    items: list[PublishItem] = field(default_factory=list)
    estimate: CostEstimate | None = None
    entry_url: str = ""
    problems: list[str] = field(default_factory=list)


def reward_for(project: Project, units_per_hit: list[int]) -> Decimal:
    """Project wage x expected time of an average HIT, rounded up to the cent (paper G.2: 50% above the minimum)."""
    if not units_per_hit:
        return Decimal("0.00")
    seconds = statistics.mean(units_per_hit) * settings.FINEGRAIN_SECONDS_PER_UNIT
    amount = project.hourly_wage_usd * Decimal(seconds) / Decimal(3600)
    return max(amount.quantize(Decimal("0.01"), rounding=ROUND_CEILING), Decimal("0.01"))


def entry_url(provider: str, batch_id) -> str:
    names = {"mturk": "crowd_mturk_entry", "prolific": "crowd_prolific_entry", "link": "crowd_manage"}
    if provider == "link":
        return ""
    return settings.SITE_URL.rstrip("/") + reverse(names[provider], args=[batch_id])


def plan_publish(*, project: Project, task: str, provider: str, sandbox: bool = False) -> PublishPlan:
    impl = get_provider(provider, sandbox=sandbox)
    already = CrowdHit.objects.filter(batch__provider=provider, batch__sandbox=sandbox).values("hit_id")
    hits = list(Hit.objects.filter(project=project, task=task).exclude(pk__in=already)
                .annotate(unit_count=Count("units")).order_by("position", "pk"))
    reward = reward_for(project, [hit.unit_count for hit in hits]) if provider != "link" else Decimal("0.00")
    resuming = CrowdBatch.objects.filter(project=project, task=task, provider=provider, sandbox=sandbox,
                                         status=CrowdBatch.Status.PUBLISHING).first()
    batch_id = resuming.public_id if resuming else uuid.uuid4()
    plan = PublishPlan(project=project, task=task, provider=provider, sandbox=sandbox, reward_usd=reward,
                       assignments_per_hit=project.annotators_per_unit, entry_url=entry_url(provider, batch_id))
    plan.items = [PublishItem(hit_id=hit.pk, url=plan.entry_url, units=hit.unit_count)
                  for hit in hits]
    total = len(hits) * project.annotators_per_unit
    plan.estimate = impl.estimate(hits=len(hits), assignments_per_hit=project.annotators_per_unit,
                                  reward_usd=reward, bonus_usd=project.bonus_usd,
                                  expected_bonuses=total // project.bonus_every_hits if provider != "link" else 0)
    if provider == "mturk" and not plan.entry_url.startswith("https://"):
        plan.problems.append(f"MTurk shows HITs only from HTTPS URLs; SITE_URL is {settings.SITE_URL!r}.")
    if provider == "prolific" and not settings.FINEGRAIN_PROLIFIC_TOKEN:
        plan.problems.append("FINEGRAIN_PROLIFIC_TOKEN is not set.")
    return plan


@transaction.atomic
def _batch_for(plan: PublishPlan, created_by) -> CrowdBatch:
    batch = (CrowdBatch.objects.select_for_update()
             .filter(project=plan.project, task=plan.task, provider=plan.provider, sandbox=plan.sandbox,
                     status=CrowdBatch.Status.PUBLISHING).first())
    if batch is None:
        batch = CrowdBatch.objects.create(
            project=plan.project, task=plan.task, provider=plan.provider, sandbox=plan.sandbox,
            reward_usd=plan.reward_usd, assignments_per_hit=plan.assignments_per_hit, created_by=created_by,
            completion_code=secrets.token_hex(4).upper(), estimate=plan.estimate.as_dict())
    existing = set(batch.crowd_hits.values_list("hit_id", flat=True))
    CrowdHit.objects.bulk_create([CrowdHit(batch=batch, hit_id=item.hit_id, request_token=uuid.uuid4().hex)
                                  for item in plan.items if item.hit_id not in existing])
    return batch


def publish(*, plan: PublishPlan, created_by=None, provider=None, progress=None) -> CrowdBatch:
    """Create the batch's HITs on the provider (or finish an interrupted run). `progress(n)` after each HIT."""
    if plan.problems:
        raise ValueError("Cannot publish: " + " ".join(plan.problems))
    impl = provider or get_provider(plan.provider, sandbox=plan.sandbox)
    batch = _batch_for(plan, created_by)
    url = entry_url(plan.provider, batch.public_id)
    impl.prepare(batch, entry_url=url)
    for crowd_hit in batch.crowd_hits.filter(published_at__isnull=True).order_by("hit__position", "pk"):
        crowd_hit.external_id = impl.publish_hit(batch, crowd_hit, url)
        crowd_hit.published_at = timezone.now()
        crowd_hit.save(update_fields=["external_id", "published_at"])
        if progress:
            progress(1)
    impl.finish_publish(batch)
    batch.status = CrowdBatch.Status.PUBLISHED
    batch.expires_at = timezone.now() + timedelta(hours=settings.FINEGRAIN_HIT_LIFETIME_HOURS)
    batch.save(update_fields=["status", "expires_at"])
    return batch
