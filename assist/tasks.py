from celery import shared_task

from .runs import job_run_document


@shared_task(acks_late=True, reject_on_worker_lost=True)
def assist_document_task(job_id: int, document_id: int) -> None:
    # Idempotent: a task redelivered after a worker died only does the work that is still missing.
    job_run_document(job_id, document_id)
