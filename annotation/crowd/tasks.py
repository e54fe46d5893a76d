"""Celery tasks of the crowd outbox (routed to the `crowd` queue: CELERY_TASK_ROUTES "annotation.crowd.*").

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


@shared_task(name="annotation.crowd.publish_batch")
def publish_batch(job_id: int, task: str, provider: str, sandbox: bool) -> None:
    """Publish a task's HITs (a Job row records progress and the outcome for the manager's page)."""
    from ..models import Job
    from .publishing import plan_publish, publish

    job = Job.objects.select_related("project").get(pk=job_id)
    plan = plan_publish(project=job.project, task=task, provider=provider, sandbox=sandbox)
    job.start(total=len(plan.items))
    try:
        batch = publish(plan=plan, created_by=job.created_by, progress=lambda n: job.advance(n))
    except Exception as error:  # the row must say what went wrong; the batch resumes on the next run
        job.fail(str(error))
        raise
    job.finish({"batch": str(batch.public_id), "estimate": plan.estimate.as_dict()})
