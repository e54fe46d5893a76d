"""Celery tasks of the crowd outbox and of publishing (routed to the `crowd` queue: CELERY_TASK_ROUTES
"annotation.crowd.*").

A task takes an id, loads the row and calls the service; the retries with backoff live here.
"""

from celery import shared_task

from corpus.jobs import JobKind, register_kinds
from corpus.time_limits import CALL, GRACE, HOUR

from ..job_kinds import PUBLISH
from .outbox import RetryLater
from .outbox import execute_decision as execute


@shared_task(name="annotation.crowd.execute_decision", bind=True, max_retries=7, acks_late=True,
             soft_time_limit=CALL, time_limit=CALL + GRACE)
def execute_decision(self, decision_id: int) -> str:
    try:
        return execute(decision_id)
    except RetryLater as error:
        raise self.retry(exc=error, countdown=min(600, 15 * 2 ** self.request.retries)) from error


@shared_task(name="annotation.crowd.drain_outbox", soft_time_limit=CALL, time_limit=CALL + GRACE)
def drain_outbox() -> int:
    """Queue every pending decision (beat runs this, so a lost message never leaves a decision behind)."""
    from ..models import Decision

    ids = list(Decision.objects.filter(status=Decision.Status.PENDING).values_list("pk", flat=True))
    for pk in ids:
        execute_decision.delay(pk)
    return len(ids)


def enqueue(decision) -> None:
    """Queue a decision's execution once the transaction that wrote it commits."""
    from django.db import transaction

    transaction.on_commit(lambda: execute_decision.delay(decision.pk))


@shared_task(name="annotation.crowd.publish_hit", bind=True, max_retries=7, acks_late=True,
             soft_time_limit=CALL, time_limit=CALL + GRACE)
def publish_hit(self, crowd_hit_id: int) -> str:
    """Create one HIT of a batch on its provider (publishing.publish_queued_hit); safe to run twice."""
    from .publishing import publish_queued_hit

    try:
        return publish_queued_hit(crowd_hit_id)
    except RetryLater as error:
        raise self.retry(exc=error, countdown=min(600, 15 * 2 ** self.request.retries)) from error


@shared_task(name="annotation.crowd.drain_publishing", soft_time_limit=CALL, time_limit=CALL + GRACE)
def drain_publishing() -> dict:
    """Queue again the HITs and top-up places still pending long after their task was queued (beat runs this, as
    drain_outbox)."""
    from .publishing import publishing_requeue
    from .topups import topups_requeue

    return {**publishing_requeue(), "topups": topups_requeue()}


@shared_task(name="annotation.crowd.release_topup", bind=True, max_retries=7, acks_late=True,
             soft_time_limit=CALL, time_limit=CALL + GRACE)
def release_topup(self, crowd_hit_id: int) -> str:
    """Put one top-up HIT out on its live batch's provider (topups.crowd_hit_release); safe to run twice."""
    from .topups import crowd_hit_release

    try:
        return crowd_hit_release(crowd_hit_id)
    except RetryLater as error:
        raise self.retry(exc=error, countdown=min(600, 15 * 2 ** self.request.retries)) from error


@shared_task(name="annotation.crowd.publish_batch", acks_late=True, reject_on_worker_lost=True,
             soft_time_limit=HOUR, time_limit=HOUR + GRACE)
def publish_batch(job_id: int) -> None:
    """Publish a task's HITs for the manager's page (publishing.publish_run); with crowd workers this only writes the
    rows and queues one `publish_hit` task per HIT, and the last one finishes the Job. Rerunnable: a HIT is never
    created twice (request tokens)."""
    from .publishing import publish_run

    publish_run(job_id=job_id)


register_kinds(JobKind(PUBLISH, "Crowd publishing", publish_batch, unit="HITs"))
