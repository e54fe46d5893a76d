"""Publishing a task's HITs on a provider: the plan (what would be created, what it costs) and the run.

A run can crash anywhere and be started again: the batch and every CrowdHit with its request token are written
before the first remote call, each remote id is saved as soon as it is known, and the provider treats a repeated
token as "already created" (MTurk's UniqueRequestToken), so a re-run creates only what is missing.

The manager's page calls `publish_start`: a Job row the page follows, and the `publish_batch` task that a worker runs.
Two ways to run the publication itself. With a broker and crowd workers (production), the CrowdHit rows are an
outbox: `publish_queue` writes them and queues one `publish_hit` task per HIT on the `crowd` queue; each task claims
its row, creates the HIT and records the remote id; the task that records the last one finishes the batch and its
job; beat (`publishing_requeue`) queues again the rows a lost message left pending. Otherwise (the embedded broker's
single worker, the `publish` command on a laptop, the tests) `publish` does the same steps in one process.
"""

import logging
import secrets
import statistics
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import ROUND_CEILING, Decimal

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Exists, F, OuterRef, Q
from django.dispatch import Signal
from django.urls import reverse
from django.utils import timezone

from corpus.jobs import queue_task
from corpus.models import Job, Project, job_start

from ..job_kinds import PUBLISH
from ..models import CrowdBatch, CrowdHit, Hit, Provider, Unit
from ..redundancy import Verdict, redundancy_of
from .base import CostEstimate, ProviderError, ProviderTransientError, PublishItem
from .outbox import RetryLater
from .registry import get_provider

logger = logging.getLogger(__name__)
# The key of a top-up batch's `estimate` naming the live batch it adds HITs to (annotation/crowd/topups.py): such a
# batch is never resumed by a manager's publication.
TOPUPS_OF = "topups_of"
PUBLISH_HIT = "annotation.crowd.publish_hit"  # the task creating one HIT on its provider
# Sent once a publication (not a top-up batch) is out: the top-up HITs built before it go to its workers, each paid
# for its own units (annotation/crowd/topups.py), never in the publication itself at its average reward.
batch_published = Signal()


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
    places_note: str = ""


def places_note(project: Project) -> str:
    """What the places of a publication are, in the words of the project's redundancy policy."""
    redundancy = redundancy_of(project)
    if redundancy.policy == "fixed":
        return f"Each HIT asks for {redundancy.first_round} annotators (the fixed design)."
    return (f"Each HIT asks for the first round's {redundancy.first_round} annotators, not "
            f"{redundancy.most}: items they leave undecided get top-up HITs, released to this publication as "
            "they are built (each paid for its size), and counted in the cost page's projection, not here.")


def expected_hours(units_per_hit: list[int]) -> Decimal:
    """The expected time of an average HIT, in hours (FINEGRAIN_SECONDS_PER_UNIT per unit)."""
    if not units_per_hit:
        return Decimal("0")
    return Decimal(statistics.mean(units_per_hit) * settings.FINEGRAIN_SECONDS_PER_UNIT) / Decimal(3600)


def reward_for(project: Project, units_per_hit: list[int]) -> Decimal:
    """Project wage x expected time of an average HIT, rounded up to the cent (paper G.2: 50% above the minimum).
    Never raised to a cent when the wage is too low: `pay_problems` says so instead."""
    amount = project.hourly_wage_usd * expected_hours(units_per_hit)
    return amount.quantize(Decimal("0.01"), rounding=ROUND_CEILING)


def pay_problems(project: Project, reward: Decimal, units_per_hit: list[int]) -> list[str]:
    """Why a publication on a paying provider would underpay: a wage under the operator's floor
    (FINEGRAIN_MIN_HOURLY_WAGE_USD), a reward of nothing or one that pays less than the floor per hour of expected
    work, a negative bonus. Private links are not checked: in-house work is paid nothing through a provider."""
    problems = []
    floor, hours = settings.FINEGRAIN_MIN_HOURLY_WAGE_USD, expected_hours(units_per_hit)
    if project.hourly_wage_usd < floor or reward <= 0 or reward < floor * hours:
        problems.append(
            f"Pay below this site's floor of {floor} USD an hour: the project's hourly wage "
            f"(USD) is {project.hourly_wage_usd}, and a HIT of about {hours * 60:.1f} minutes would pay {reward} USD. "
            "Raise the hourly wage in the project's settings.")
    if project.bonus_usd < 0:
        problems.append(f"The project's bonus (USD) is {project.bonus_usd}: a bonus is 0 (none) or more; change it "
                        "in its settings.")
    return problems


def entry_url(provider: str, batch_id) -> str:
    names = {"mturk": "crowd_mturk_entry", "prolific": "crowd_prolific_entry", "link": "crowd_manage"}
    if provider == "link":
        return ""
    return settings.SITE_URL.rstrip("/") + reverse(names[provider], args=[batch_id])


def plan_publish(*, project: Project, task: str, provider: str, sandbox: bool = False) -> PublishPlan:
    impl = get_provider(provider, sandbox=sandbox)
    redundancy = redundancy_of(project)
    # HITs already on this provider; the still unpublished HITs of an interrupted publication are planned again.
    already = (CrowdHit.objects.filter(batch__provider=provider, batch__sandbox=sandbox)
               .exclude(batch__status=CrowdBatch.Status.PUBLISHING, published_at__isnull=True).values("hit_id"))
    # The first round only: a top-up HIT goes out after the publication, at a reward for its own size.
    hits = list(Hit.objects.filter(project=project, task=task, round=0).exclude(pk__in=already)
                .annotate(units_counted=Count("units")).order_by("position", "pk"))
    wanting = Unit.objects.filter(hit=OuterRef("pk"), origin__state__verdict=Verdict.NEEDS_MORE)
    waiting = (Hit.objects.filter(project=project, task=task, round__gte=1).exclude(pk__in=already)
               .filter(Exists(wanting)).count())
    sizes = [hit.units_counted for hit in hits]
    paying = provider != "link"  # a private link pays nothing through a provider: no reward, no floor
    reward = reward_for(project, sizes) if paying else Decimal("0.00")
    resuming = (CrowdBatch.objects.filter(project=project, task=task, provider=provider, sandbox=sandbox,
                                          status=CrowdBatch.Status.PUBLISHING)
                .exclude(estimate__has_key=TOPUPS_OF).first())
    batch_id = resuming.public_id if resuming else uuid.uuid4()
    plan = PublishPlan(project=project, task=task, provider=provider, sandbox=sandbox, reward_usd=reward,
                       assignments_per_hit=redundancy.first_round, entry_url=entry_url(provider, batch_id))
    # Each HIT asks for the places of its own round (the first round's, not N): the labels that cannot settle a unit
    # yet are asked for later, in top-up HITs released to the live batch (annotation/crowd/topups.py).
    plan.items = [PublishItem(hit_id=hit.pk, url=plan.entry_url, units=hit.units_counted,
                              places=redundancy.places(hit.round) + hit.extra_places) for hit in hits]
    total = sum(item.places for item in plan.items)
    plan.estimate = impl.estimate(hits=len(hits), assignments_per_hit=redundancy.first_round,
                                  reward_usd=reward, bonus_usd=project.bonus_usd,
                                  places=total if total != len(hits) * redundancy.first_round else None,
                                  expected_bonuses=total // project.bonus_every_hits
                                  if paying and project.bonus_every_hits else 0)
    plan.places_note = places_note(project)
    if waiting:
        plan.places_note += (" 1 top-up HIT already built goes out right after this publication, paid for its own "
                             "items." if waiting == 1 else f" {waiting} top-up HITs already built go out right after "
                             "this publication, each paid for its own items.")
    if paying and hits:
        plan.problems.extend(pay_problems(project, reward, sizes))
    if sandbox and not impl.has_sandbox:
        plan.problems.append(f"{Provider(provider).label} has no sandbox (only MTurk has one): what is published "
                             "there is real. Leave the sandbox option out; the dry run sends nothing.")
    if provider == "mturk" and not plan.entry_url.startswith("https://"):
        plan.problems.append(f"MTurk shows HITs only from HTTPS addresses, and this site's address is "
                             f"{settings.SITE_URL}: the site's operators set its public address (operations guide).")
    if provider == "prolific" and not settings.FINEGRAIN_PROLIFIC_TOKEN:
        plan.problems.append("This site has no Prolific account yet: the site's operators give it the account's API "
                             "token (operations guide).")
    if provider == "prolific" and not settings.FINEGRAIN_PROLIFIC_WORKSPACE_ID:
        plan.problems.append("This site has no Prolific workspace yet (the blocklist of the study's workers lives in "
                             "one): the site's operators name it (operations guide).")
    return plan


def publishing_is_queued() -> bool:
    """True when a server broker takes the tasks: publishing then runs on the crowd workers, one task per HIT, not
    in this process. The embedded broker (no CELERY_BROKER_URL) has one worker, which publishes in one go."""
    from celery import current_app

    return not current_app.conf.task_always_eager and not settings.FINEGRAIN_EMBEDDED_BROKER


@transaction.atomic
def _batch_for(plan: PublishPlan, created_by, job: Job | None = None) -> CrowdBatch:
    batch = (CrowdBatch.objects.select_for_update()
             .filter(project=plan.project, task=plan.task, provider=plan.provider, sandbox=plan.sandbox,
                     status=CrowdBatch.Status.PUBLISHING).exclude(estimate__has_key=TOPUPS_OF).first())
    if batch is None:
        batch = CrowdBatch.objects.create(
            project=plan.project, task=plan.task, provider=plan.provider, sandbox=plan.sandbox,
            reward_usd=plan.reward_usd, assignments_per_hit=plan.assignments_per_hit, created_by=created_by,
            completion_code=secrets.token_hex(4).upper(), estimate=plan.estimate.as_dict())
    existing = set(batch.crowd_hits.values_list("hit_id", flat=True))
    CrowdHit.objects.bulk_create([CrowdHit(batch=batch, hit_id=item.hit_id, request_token=uuid.uuid4().hex)
                                  for item in plan.items if item.hit_id not in existing])
    # Running publish again is a person's answer to a refusal: the refused HITs are tried again.
    batch.crowd_hits.filter(published_at__isnull=True).exclude(failed_at=None).update(failed_at=None, last_error="")
    if job is not None:
        batch.job = job
        batch.save(update_fields=["job"])
    return batch


def batch_prepare(batch: CrowdBatch, impl) -> CrowdBatch:
    """Create what the batch needs on the provider once (qualification types, HIT type, study). The batch row stays
    locked meanwhile, so HIT tasks running side by side wait for one preparation instead of each making a study."""
    if batch.prepared_at is not None:
        return batch
    with transaction.atomic():
        locked = CrowdBatch.objects.select_for_update().select_related("project").get(pk=batch.pk)
        if locked.prepared_at is None:
            impl.prepare(locked, entry_url=entry_url(locked.provider, locked.public_id))
            locked.prepared_at = timezone.now()
            locked.save(update_fields=["prepared_at"])
    return locked


def crowd_hit_publish(crowd_hit: CrowdHit, *, batch: CrowdBatch, impl) -> bool:
    """Create one HIT on the provider and record its remote id; False if another attempt holds or recorded it.

    The conditional UPDATE lets one of two simultaneous attempts through; an attempt that repeats one that died after
    the provider created the HIT sends the same request token, which the provider answers with the existing HIT.
    Raises the provider's ProviderTransientError / ProviderError.
    """
    claimed = (CrowdHit.objects.filter(pk=crowd_hit.pk, published_at__isnull=True, attempts=crowd_hit.attempts)
               .update(attempts=F("attempts") + 1))
    if not claimed:
        return False
    external_id = impl.publish_hit(batch, crowd_hit, entry_url(batch.provider, batch.public_id))
    recorded = (CrowdHit.objects.filter(pk=crowd_hit.pk, published_at__isnull=True)
                .update(external_id=external_id, published_at=timezone.now(), last_error=""))
    if recorded and batch.job_id:
        Job.objects.filter(pk=batch.job_id).update(progress=F("progress") + 1)
    return bool(recorded)


def batch_finish_if_complete(batch_id: int, impl=None) -> CrowdBatch:
    """Once every HIT of a batch is on the provider: the provider's last step (Prolific publishes the study), the
    batch's status and its Job. Exactly once: under the batch row's lock, and only while it is still publishing."""
    batch = CrowdBatch.objects.get(pk=batch_id)
    if batch.status != CrowdBatch.Status.PUBLISHING or batch.crowd_hits.filter(published_at__isnull=True).exists():
        return batch
    with transaction.atomic():
        batch = CrowdBatch.objects.select_for_update().get(pk=batch_id)
        if batch.status != CrowdBatch.Status.PUBLISHING:
            return batch
        (impl or get_provider(batch.provider, sandbox=batch.sandbox)).finish_publish(batch)
        batch.status = CrowdBatch.Status.PUBLISHED
        batch.expires_at = timezone.now() + timedelta(hours=settings.FINEGRAIN_HIT_LIFETIME_HOURS)
        batch.save(update_fields=["status", "expires_at"])
    job = _open_job(batch)
    if job is not None:
        job.finish({"batch": str(batch.public_id), "estimate": batch.estimate})
    if TOPUPS_OF not in (batch.estimate or {}):
        batch_published.send(sender=CrowdBatch, batch=batch)
    return batch


def _open_job(batch: CrowdBatch) -> Job | None:
    """The manager page's Job that follows this batch, while it is still open."""
    if not batch.job_id:
        return None
    return Job.objects.open().filter(pk=batch.job_id).first()


def publish(*, plan: PublishPlan, created_by=None, provider=None, progress=None) -> CrowdBatch:
    """Create the batch's HITs on the provider in this process (or finish an interrupted run): the path without a
    broker. `progress(n)` after each HIT. Raises the provider's errors; running it again resumes."""
    if plan.problems:
        raise ValueError("Cannot publish: " + " ".join(plan.problems))
    impl = provider or get_provider(plan.provider, sandbox=plan.sandbox)
    batch = batch_prepare(_batch_for(plan, created_by), impl)
    for crowd_hit in batch.crowd_hits.filter(published_at__isnull=True).order_by("hit__position", "pk"):
        crowd_hit_publish(crowd_hit, batch=batch, impl=impl)
        if progress:
            progress(1)
    return batch_finish_if_complete(batch.pk, impl)


def publish_start(*, project: Project, task: str, provider: str, sandbox: bool, user=None) -> Job:
    """Publish a task's HITs in the background: a Job row the crowd page follows, and its `publish_batch` task."""
    return job_start(kind=PUBLISH, project=project, user=user,
                     params={"task": task, "provider": provider, "sandbox": sandbox})


def publish_run(*, job_id: int) -> None:
    # A refusal or a configuration problem fails the row (the batch resumes on the next run); a bug is raised too.
    Job.objects.select_related("project", "created_by").get(pk=job_id).run(_publish, expected=(ProviderError,
                                                                                               ValueError))


def _publish(job: Job) -> None:
    params = job.params
    plan = plan_publish(project=job.project, task=params["task"], provider=params["provider"],
                        sandbox=params["sandbox"])
    if not plan.items:
        job.finish({"batch": None, "note": "Every HIT of this task was already published there."})
    elif publishing_is_queued():
        publish_queue(plan=plan, created_by=job.created_by, job=job)  # the last HIT's task finishes the job
    else:
        job.begin(total=len(plan.items))
        batch = publish(plan=plan, created_by=job.created_by, progress=lambda n: job.advance(n))
        job.finish({"batch": str(batch.public_id), "estimate": plan.estimate.as_dict()})


def publish_queue(*, plan: PublishPlan, created_by=None, job: Job | None = None) -> CrowdBatch:
    """The path with crowd workers: write the batch and its CrowdHit rows, then, once they are committed, queue one
    `publish_hit` task per pending HIT on the `crowd` queue. A lost message is re-queued by beat."""
    if plan.problems:
        raise ValueError("Cannot publish: " + " ".join(plan.problems))
    with transaction.atomic():
        batch = _batch_for(plan, created_by, job=job)
        pending = batch.crowd_hits.filter(published_at__isnull=True)
        ids = list(pending.order_by("hit__position", "pk").values_list("pk", flat=True))
        pending.update(queued_at=timezone.now())
        if job is not None:
            job.begin(total=len(ids))
        transaction.on_commit(lambda: [queue_task(PUBLISH_HIT, pk) for pk in ids])
    return batch


def publish_queued_hit(crowd_hit_id: int) -> str:
    """The body of the `publish_hit` task: prepare the batch if nobody has, create the HIT, finish the batch if it
    was the last. Returns the row's state; raises RetryLater on a transient provider failure (the task retries)."""
    crowd_hit = CrowdHit.objects.select_related("batch__project").filter(pk=crowd_hit_id).first()
    if crowd_hit is None:
        return "missing"
    batch = crowd_hit.batch
    if crowd_hit.failed_at is not None:
        return "failed"
    if crowd_hit.published_at is None and batch.status == CrowdBatch.Status.PUBLISHING:
        impl = get_provider(batch.provider, sandbox=batch.sandbox)
        try:
            batch = batch_prepare(batch, impl)
            crowd_hit_publish(crowd_hit, batch=batch, impl=impl)
        except ProviderTransientError as error:
            CrowdHit.objects.filter(pk=crowd_hit.pk).update(last_error=str(error)[:2000])
            raise RetryLater(str(error)) from error
        except (ProviderError, ValueError) as error:  # refused, or a request our own checks refuse: a person looks
            _refuse(crowd_hit, batch, error)
            return "failed"
        batch_finish_if_complete(batch.pk, impl)
    return "published" if CrowdHit.objects.filter(pk=crowd_hit.pk, published_at__isnull=False).exists() else "pending"


def _refuse(crowd_hit: CrowdHit, batch: CrowdBatch, error: Exception) -> None:
    CrowdHit.objects.filter(pk=crowd_hit.pk, published_at__isnull=True).update(failed_at=timezone.now(),
                                                                              last_error=str(error)[:2000])
    logger.warning("Publishing HIT %s of batch %s was refused: %s", crowd_hit.hit_id, batch.public_id, error)
    job = _open_job(batch)
    if job is not None:
        job.fail(f"HIT {crowd_hit.hit_id}: {error}; run publish again to retry it")


def publishing_requeue(*, older_than: timedelta | None = None) -> dict[str, int]:
    """What beat runs: queue again every pending HIT whose task was queued longer ago than `older_than` (its message
    was lost: Redis restarted, a worker died without giving it back) and finish batches whose last HIT was recorded
    but not the batch's end. A message that is merely slow only costs a task that finds its row published."""
    now = timezone.now()
    cutoff = now - (older_than if older_than is not None
                    else timedelta(seconds=settings.FINEGRAIN_PUBLISH_REQUEUE_SECONDS))
    stale = (CrowdHit.objects.filter(batch__status=CrowdBatch.Status.PUBLISHING, published_at__isnull=True,
                                     failed_at__isnull=True)
             .filter(Q(queued_at__lt=cutoff) | Q(queued_at__isnull=True, batch__created__lt=cutoff)))
    ids = list(stale.values_list("pk", flat=True))
    CrowdHit.objects.filter(pk__in=ids).update(queued_at=now)
    for pk in ids:
        queue_task(PUBLISH_HIT, pk)
    finished = 0
    complete = (CrowdBatch.objects.filter(status=CrowdBatch.Status.PUBLISHING, crowd_hits__isnull=False)
                .exclude(crowd_hits__published_at__isnull=True).distinct().values_list("pk", flat=True))
    for batch_id in complete:
        try:
            finished += batch_finish_if_complete(batch_id).status == CrowdBatch.Status.PUBLISHED
        except ProviderError as error:
            logger.warning("Finishing batch %s failed: %s", batch_id, error)
    return {"requeued": len(ids), "finished": finished}
