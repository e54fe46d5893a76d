"""The exports app's Celery tasks and its kinds of long work. A task imports its service when it runs: registering the
kinds at start-up (exports.apps) loads none of the analytics' libraries in a process that never runs them."""

from celery import shared_task

from corpus.jobs import JobKind, StoredNumbers, register_kinds
from corpus.tasks import snapshot_task
from corpus.time_limits import GRACE, HOUR

from .job_kinds import ANALYTICS, EXPORT


@shared_task(acks_late=True, reject_on_worker_lost=True, soft_time_limit=HOUR, time_limit=HOUR + GRACE)
def export_task(job_id: int) -> None:
    # Rerunnable: a redelivered task rewrites the same files from the same labels.
    from .runs import export_run

    export_run(job_id=job_id)


register_kinds(
    JobKind(EXPORT, "Export", export_task, unit="summaries", reads_only=True),
    JobKind(ANALYTICS, "Analytics figures", snapshot_task, numbers=StoredNumbers(
        what="the analytics figures", page="exports_analytics",
        basis="exports.figures.figures_basis", compute="exports.figures.figures_job_compute",
        access="corpus.access.get_managed_project", variants=("", "simulated"),
        # The paper's tables are never shown from labels that changed since; the CSVs refuse them too.
        show_stale=False)),
)
