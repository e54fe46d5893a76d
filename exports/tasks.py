from celery import shared_task

from .runs import export_run


@shared_task(acks_late=True, reject_on_worker_lost=True)
def export_task(job_id: int) -> None:
    # Rerunnable: a redelivered task rewrites the same files from the same labels.
    export_run(job_id=job_id)
