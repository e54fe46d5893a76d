"""Celery tasks of the crowd outbox and of publishing (routed to the `crowd` queue: CELERY_TASK_ROUTES
"annotation.crowd.*").

A task takes an id, loads the row and calls the service; the retries with backoff live here.
"""

from celery import shared_task

from .outbox import RetryLater, execute_decision as execute


@shared_task(name="annotation.crowd.execute_decision", bind=True, max_retries=7, acks_late=True)
def execute_decision(self, decision_id: int) -> str:
    try:
        return execute(decision_id)
    except RetryLater as error:
        raise self.retry(exc=error, countdown=min(600, 15 * 2 ** self.request.retries)) from error


@shared_task(name="annotation.crowd.drain_outbox")
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


@shared_task(name="annotation.crowd.publish_hit", bind=True, max_retries=7, acks_late=True)
def publish_hit(self, crowd_hit_id: int) -> str:
    """Create one HIT of a batch on its provider (publishing.publish_queued_hit); safe to run twice."""
    from .publishing import publish_queued_hit

    try:
        return publish_queued_hit(crowd_hit_id)
    except RetryLater as error:
        raise self.retry(exc=error, countdown=min(600, 15 * 2 ** self.request.retries)) from error


@shared_task(name="annotation.crowd.drain_publishing")
def drain_publishing() -> dict:
    """Queue again the HITs still pending long after their task was queued (beat runs this, as drain_outbox)."""
    from .publishing import publishing_requeue

    return publishing_requeue()


@shared_task(name="annotation.crowd.publish_batch")
def publish_batch(job_id: int, task: str, provider: str, sandbox: bool) -> None:
    """Publish a task's HITs (a Job row records progress and the outcome for the manager's page). With a broker
    this only writes the rows and queues one `publish_hit` task per HIT; the last one finishes the Job."""
    from ..models import Job
    from .publishing import plan_publish, publish, publish_start, publishing_is_queued

    job = Job.objects.select_related("project").get(pk=job_id)
    plan = plan_publish(project=job.project, task=task, provider=provider, sandbox=sandbox)
    if publishing_is_queued() and plan.items:
        try:
            publish_start(plan=plan, created_by=job.created_by, job=job)
        except Exception as error:
            job.fail(str(error))
            raise
        return
    job.start(total=len(plan.items))
    try:
        batch = publish(plan=plan, created_by=job.created_by, progress=lambda n: job.advance(n))
    except Exception as error:  # the row must say what went wrong; the batch resumes on the next run
        job.fail(str(error))
        raise
    job.finish({"batch": str(batch.public_id), "estimate": plan.estimate.as_dict()})
