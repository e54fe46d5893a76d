"""The assist app's Celery tasks and its kinds of long work. A task imports its service when it runs: registering the
kinds at start-up (assist.apps) loads no model library in a process that never runs them."""

from celery import shared_task

from corpus.jobs import JobKind, register_kinds
from corpus.time_limits import DOCUMENT, GRACE, MINUTE

from .job_kinds import ASSIST, EVALUATOR


@shared_task(acks_late=True, reject_on_worker_lost=True, soft_time_limit=10 * MINUTE,
             time_limit=10 * MINUTE + GRACE)
def assist_task(job_id: int) -> None:
    """Start an assist run: queue one task per document."""
    from .runs import assist_run

    assist_run(job_id=job_id)


@shared_task(acks_late=True, reject_on_worker_lost=True, soft_time_limit=DOCUMENT, time_limit=DOCUMENT + GRACE)
def assist_document_task(job_id: int, document_id: int) -> None:
    # Idempotent: a task redelivered after a worker died only does the work that is still missing.
    from .runs import job_run_document

    job_run_document(job_id, document_id)


@shared_task(acks_late=True, reject_on_worker_lost=True, soft_time_limit=10 * MINUTE,
             time_limit=10 * MINUTE + GRACE)
def evaluator_task(job_id: int) -> None:
    """Start an evaluator run: queue one task per document."""
    from .evaluators.runs import evaluator_run

    evaluator_run(job_id=job_id)


@shared_task(acks_late=True, reject_on_worker_lost=True, soft_time_limit=DOCUMENT, time_limit=DOCUMENT + GRACE)
def evaluator_document_task(job_id: int, document_id: int) -> None:
    # Idempotent: a summary already scored with the same evaluator, model and inputs is skipped.
    from .evaluators.runs import evaluator_run_document

    evaluator_run_document(job_id, document_id)


register_kinds(
    JobKind(ASSIST, "AI assistance", assist_task, unit="documents", part=assist_document_task),
    JobKind(EVALUATOR, "Automatic evaluator", evaluator_task, unit="documents", part=evaluator_document_task),
)
