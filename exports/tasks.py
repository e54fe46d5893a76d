"""The exports app's Celery tasks and its kinds of long work. A task imports its service when it runs: registering the
kinds at start-up (exports.apps) loads none of the analytics' libraries in a process that never runs them."""

from celery import shared_task

from corpus.jobs import JobKind, register_kinds
from corpus.time_limits import GRACE, HOUR, MINUTE

from .job_kinds import ANALYTICS, EXPORT


@shared_task(acks_late=True, reject_on_worker_lost=True, soft_time_limit=HOUR, time_limit=HOUR + GRACE)
def export_task(job_id: int) -> None:
    # Rerunnable: a redelivered task rewrites the same files from the same labels.
    from .runs import export_run

    export_run(job_id=job_id)


@shared_task(acks_late=True, reject_on_worker_lost=True, soft_time_limit=30 * MINUTE,
             time_limit=30 * MINUTE + GRACE)
def analytics_task(job_id: int) -> None:
    # Rerunnable: a redelivered task computes the same figures from the same labels (a finished job is not rerun).
    from .figures import figures_run

    figures_run(job_id=job_id)


register_kinds(
    JobKind(EXPORT, "Export", export_task, unit="summaries"),
    JobKind(ANALYTICS, "Analytics figures", analytics_task),
)
