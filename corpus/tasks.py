from celery import shared_task

from .uploads import import_run


@shared_task(acks_late=True, reject_on_worker_lost=True)
def import_task(job_id: int) -> None:
    # Rerunnable: nothing is written until the whole file checked out, and stored rows are not written twice.
    import_run(job_id=job_id)
