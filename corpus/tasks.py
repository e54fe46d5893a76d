from celery import shared_task

from .jobs import JobKind, register_kinds
from .snapshots import numbers_run
from .time_limits import GRACE, HOUR, MINUTE
from .uploads import IMPORT, import_run


@shared_task(acks_late=True, reject_on_worker_lost=True, soft_time_limit=HOUR, time_limit=HOUR + GRACE)
def import_task(job_id: int) -> None:
    # Rerunnable: nothing is written until the whole file checked out, and stored rows are not written twice.
    import_run(job_id=job_id)


@shared_task(acks_late=True, reject_on_worker_lost=True, soft_time_limit=30 * MINUTE,
             time_limit=30 * MINUTE + GRACE)
def snapshot_task(job_id: int) -> None:
    # Every kind of stored numbers (corpus.snapshots). Rerunnable: a redelivered task computes the same numbers from
    # the same data (a finished job is not rerun).
    numbers_run(job_id=job_id)


register_kinds(JobKind(IMPORT, "Import", import_task, unit="documents"))
