"""Top-up HITs go out to the crowd round by round (README, "How many labels per item").

A publication asks each provider for the first round's places only (annotation/crowd/publishing.py). Once the top-up
job has built HITs for the units that round left undecided (annotation/services/topups.py), `release_topups` offers
them to the workers of the project's live batch of their task (published, not expired), on that batch's provider
(`CrowdProvider.topups`):

- MTurk: a reward belongs to a HIT type, so top-up HITs go out in batches of their own, one per reward and places:
  each a new MTurk HIT whose MaxAssignments are its own places (never 10 or more, where MTurk's fee rises) and whose
  reward is for its own units (`reward_for`, under the pay floor of `pay_problems`), created through the publishing
  outbox: request tokens, so that a re-run creates only what is missing.
- Prolific: the HIT's places are added to the study, which serves any HIT of its task; the study's reward must pay
  the HIT's units at the floor.
- Private links: nothing to call; a link serves the platform's own pool, top-ups first.

Exactly once: under the project's row lock, the release writes one CrowdHit per top-up HIT not yet on that provider,
then carries them out once they are committed, as publishing does. Places are added one HIT at a time per study,
never beside a failed submission's place (annotation/crowd/outbox.py), since Prolific takes a new total; the total
aimed at is recorded before it is sent. Beat carries out what a lost message or a crash left pending
(`topups_requeue`).

Nothing is released for a HIT whose units no longer want a label (the budget escalated them, or they settled), nor
while the project's expected cost is past its budget (annotation/services/costs.py).
"""

import logging
import secrets
import uuid
from collections import defaultdict
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Exists, F, OuterRef, Q
from django.dispatch import receiver
from django.utils import timezone

from corpus.jobs import queue_task
from corpus.models import Project

from ..models import CrowdBatch, CrowdHit, Decision, Hit, Task, Unit
from ..redundancy import Verdict
from ..services.topups import topups_built
from .base import AlreadyDone, ProviderError, ProviderTransientError
from .outbox import RetryLater, places_in_flight
from .publishing import TOPUPS_OF, batch_published, pay_problems, publish_queued_hit, publishing_is_queued, reward_for
from .registry import get_provider

logger = logging.getLogger(__name__)
# The task putting one top-up HIT out on its provider (annotation/crowd/tasks.py).
RELEASE_TOPUP = "annotation.crowd.release_topup"
# MTurk charges a higher fee from 10 assignments on a HIT (MTurkProvider.fee_rate).
MTURK_FEE_LINE = 10


def live_batch(project: Project, task: str) -> CrowdBatch | None:
    """The batch of `task` whose workers top-ups go to: the latest published one that has not expired."""
    return (CrowdBatch.objects.filter(project=project, task=task, status=CrowdBatch.Status.PUBLISHED)
            .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now()))
            .order_by("-created", "-pk").first())


def unreleased(project: Project, task: str, batch: CrowdBatch):
    """The top-up HITs of `task` not yet on the batch's provider whose units still want a label."""
    on_provider = CrowdHit.objects.filter(batch__provider=batch.provider, batch__sandbox=batch.sandbox)
    wanting = Unit.objects.filter(hit=OuterRef("pk"), origin__state__verdict=Verdict.NEEDS_MORE)
    return (Hit.objects.filter(project=project, task=task, round__gte=1)
            .exclude(pk__in=on_provider.values("hit_id")).filter(Exists(wanting))
            .annotate(units_counted=Count("units")).order_by("position", "pk"))


@receiver(topups_built, dispatch_uid="annotation.crowd.topups.release")
def release_built(sender, *, project: Project, **kwargs) -> None:
    """The top-up job has built HITs: the crowd of a live batch gets them, round by round."""
    release_topups(project=project)


@receiver(batch_published, dispatch_uid="annotation.crowd.topups.after_publication")
def release_after_publication(sender, *, batch: CrowdBatch, **kwargs) -> None:
    """Top-up HITs built before the task was published wait for its batch, then go out as any round does."""
    release_topups(project=batch.project)


def release_topups(*, project: Project, hits=None) -> list[int]:
    """Release the project's top-up HITs (all that are not out yet, or only `hits`) to its live batches; returns the
    CrowdHit rows written. The providers are called once the rows are committed."""
    written = _write(project, hits)
    pending = list(CrowdHit.objects.filter(pk__in=written, published_at__isnull=True, failed_at__isnull=True)
                   .values_list("pk", flat=True))
    if pending:
        transaction.on_commit(lambda: _dispatch(pending))
    return written


@transaction.atomic
def _write(project: Project, hits) -> list[int]:
    # One release per project at a time, after the top-up build that takes the same lock: a HIT is written once.
    Project.objects.select_for_update(no_key=True).filter(pk=project.pk).values_list("pk", flat=True).first()
    if _over_budget(project):
        logger.info("Project %s is past its budget: no top-up HIT is released.", project.slug)
        return []
    written: list[int] = []
    for task in Task.values:
        batch = live_batch(project, task)
        if batch is None:
            continue
        pending = unreleased(project, task, batch)
        if hits is not None:
            pending = pending.filter(pk__in=[getattr(hit, "pk", hit) for hit in hits])
        pending = list(pending)
        if not pending:
            continue
        mode = get_provider(batch.provider, sandbox=batch.sandbox).topups
        if mode == "hits":
            written += _in_new_batches(batch, pending)
        else:
            written += _in_batch(batch, pending, call=mode == "places")
    return written


def _over_budget(project: Project) -> bool:
    if project.budget_usd is None:
        return False
    from ..services.costs import project_costs

    return project_costs(project).over_budget


def _in_batch(batch: CrowdBatch, hits: list[Hit], *, call: bool) -> list[int]:
    """Rows in the live batch itself: pending until the provider gave their places (`call`), else out at once."""
    now = timezone.now()
    rows = []
    for hit in hits:
        problem = " ".join(pay_problems(batch.project, batch.reward_usd, [hit.units_counted])) if call else ""
        rows.append(CrowdHit(batch=batch, hit=hit, request_token=uuid.uuid4().hex,
                             published_at=None if call else now, external_id="" if call else batch.external_id,
                             failed_at=now if problem else None, last_error=problem))
    return [row.pk for row in CrowdHit.objects.bulk_create(rows)]


def _in_new_batches(live: CrowdBatch, hits: list[Hit]) -> list[int]:
    """A batch per reward and places, each HIT paid for its own units; what MTurk must not take is refused here,
    with the reason, for a person."""
    project, impl = live.project, get_provider(live.provider, sandbox=live.sandbox)
    groups: dict[tuple, list[Hit]] = defaultdict(list)
    for hit in hits:
        groups[reward_for(project, [hit.units_counted]), hit.places].append(hit)
    written = []
    now = timezone.now()
    for (reward, places), members in sorted(groups.items()):
        estimate = impl.estimate(hits=len(members), assignments_per_hit=places, reward_usd=reward,
                                 expected_bonuses=0, bonus_usd=project.bonus_usd)
        batch = CrowdBatch.objects.create(
            project=project, task=live.task, provider=live.provider, sandbox=live.sandbox, reward_usd=reward,
            assignments_per_hit=places, completion_code=secrets.token_hex(4).upper(),
            estimate={**estimate.as_dict(), TOPUPS_OF: str(live.public_id)})
        rows = []
        for hit in members:
            problem = " ".join(pay_problems(project, reward, [hit.units_counted]))
            if places >= MTURK_FEE_LINE:
                problem = (f"This top-up HIT asks for {places} assignments: MTurk's fee rises from "
                           f"{MTURK_FEE_LINE} assignments on a HIT, which its cost was not reckoned at. Offer it "
                           "through Prolific or a private link.")
            rows.append(CrowdHit(batch=batch, hit=hit, request_token=uuid.uuid4().hex,
                                 failed_at=now if problem else None, last_error=problem))
        written += [row.pk for row in CrowdHit.objects.bulk_create(rows)]
    return written


def _dispatch(ids: list[int]) -> None:
    """With crowd workers, one task per row; otherwise here, one after the other (beat takes up what is left)."""
    CrowdHit.objects.filter(pk__in=ids).update(queued_at=timezone.now())
    if publishing_is_queued():
        for pk in ids:
            queue_task(RELEASE_TOPUP, pk)
        return
    for pk in ids:
        try:
            crowd_hit_release(pk)
        except RetryLater as error:
            logger.warning("Releasing top-up row %s waits for a retry: %s", pk, error)


def crowd_hit_release(crowd_hit_id: int) -> str:
    """The body of the `release_topup` task: put one top-up HIT out on its provider. Returns the row's state; raises
    RetryLater when a retry may succeed."""
    crowd_hit = CrowdHit.objects.select_related("batch__project", "hit").filter(pk=crowd_hit_id).first()
    if crowd_hit is None:
        return "missing"
    batch = crowd_hit.batch
    if batch.status == CrowdBatch.Status.PUBLISHING:
        return publish_queued_hit(crowd_hit.pk)  # a top-up batch of its own: published as any batch
    if crowd_hit.failed_at is not None:
        return "failed"
    if crowd_hit.published_at is not None:
        return "published"
    impl = get_provider(batch.provider, sandbox=batch.sandbox)
    try:
        _add_places(crowd_hit, batch, impl)
    except ProviderTransientError as error:
        CrowdHit.objects.filter(pk=crowd_hit.pk).update(last_error=str(error)[:2000])
        raise RetryLater(str(error)) from error
    except ProviderError as error:
        CrowdHit.objects.filter(pk=crowd_hit.pk, published_at__isnull=True).update(
            failed_at=timezone.now(), last_error=str(error)[:2000])
        logger.warning("Adding the places of top-up HIT %s to batch %s was refused: %s", crowd_hit.hit_id,
                       batch.public_id, error)
        return "failed"
    return "published" if CrowdHit.objects.filter(pk=crowd_hit.pk, published_at__isnull=False).exists() else "pending"


def _add_places(crowd_hit: CrowdHit, batch: CrowdBatch, impl) -> None:
    with transaction.atomic():
        CrowdBatch.objects.select_for_update().filter(pk=batch.pk).first()
        busy = places_in_flight(batch.pk, besides=crowd_hit.pk) or Decision.objects.filter(
            kind=Decision.Kind.ADD_PLACE, status=Decision.Status.PENDING, attempts__gt=0,
            assignment__crowd_claim__batch_id=batch.pk).exists()
        if busy:
            raise RetryLater("Another change of this study's places is under way.")
        claimed = (CrowdHit.objects.filter(pk=crowd_hit.pk, published_at__isnull=True, attempts=crowd_hit.attempts)
                   .update(attempts=F("attempts") + 1))
    if not claimed:
        return  # another attempt holds it
    try:
        impl.add_places(batch, places=crowd_hit.hit.places, token=crowd_hit.request_token)
    except AlreadyDone:
        pass  # an attempt that died after Prolific took the new total
    CrowdHit.objects.filter(pk=crowd_hit.pk, published_at__isnull=True).update(
        published_at=timezone.now(), external_id=batch.external_id, last_error="")


def topups_requeue(*, older_than: timedelta | None = None) -> int:
    """What beat runs: queue again the top-up places still pending in live batches long after they were queued (a
    lost message, a crash, a retry given up). Top-up batches of their own are publishing's (publishing_requeue)."""
    now = timezone.now()
    cutoff = now - (older_than if older_than is not None
                    else timedelta(seconds=settings.FINEGRAIN_PUBLISH_REQUEUE_SECONDS))
    stale = (CrowdHit.objects.filter(batch__status=CrowdBatch.Status.PUBLISHED, published_at__isnull=True,
                                     failed_at__isnull=True)
             .filter(Q(queued_at__lt=cutoff) | Q(queued_at__isnull=True)))
    ids = list(stale.values_list("pk", flat=True))
    CrowdHit.objects.filter(pk__in=ids).update(queued_at=now)
    for pk in ids:
        queue_task(RELEASE_TOPUP, pk)
    return len(ids)
