"""An assist run over a project: one Job row (status, progress, notes) and one unit of work per document.

`assist_start` queues the run's task, which queues one task per document (documents run side by side on the assist
workers); the document task that brings the progress to the total finishes the job.
"""

from django.db import transaction
from django.utils import timezone

from corpus.models import Document, Job, Project, job_start

from .job_kinds import ASSIST
from .pipeline import STEPS, StepReport, assist_document


def empty_result() -> dict:
    return {"mapped": 0, "prelabeled": 0, "prelabel_failures": 0, "keyfacts_generated": 0, "embedded_documents": 0,
            "notes": [], "errors": []}


def check_steps(steps: tuple[str, ...]) -> None:
    unknown = set(steps) - set(STEPS)
    if unknown:
        raise ValueError(f"unknown assist step(s): {', '.join(sorted(unknown))}; choose from {', '.join(STEPS)}")


def job_create(*, project: Project, steps: tuple[str, ...] = STEPS, user=None) -> Job:
    """A running job for a run in this process (the run_assist command), without a task."""
    check_steps(steps)
    return Job.objects.create(
        project=project, kind=ASSIST, status=Job.Status.RUNNING, total=project.documents.count(),
        started=timezone.now(), params={"steps": list(steps)}, result=empty_result(),
        created_by=user if user is not None and user.is_authenticated else None,
    )


def assist_start(*, project: Project, steps: tuple[str, ...] = STEPS, user=None) -> Job:
    """Queue an assist run; raises JobAlreadyOpen while another one is queued or running for the project."""
    check_steps(steps)
    return job_start(kind=ASSIST, project=project, user=user, total=project.documents.count(),
                     params={"steps": list(steps)}, exclusive=True)


def assist_run(*, job_id: int) -> None:
    Job.objects.select_related("project").get(pk=job_id).run(_queue_documents)


def _queue_documents(job: Job) -> None:
    job.result = empty_result()
    job.save(update_fields=["result"])
    job.fan_out(list(job.project.documents.values_list("pk", flat=True)))


def job_run_document(job_id: int, document_id: int) -> None:
    """The body of one task: idempotent (steps skip current work), records its outcome on the Job row."""
    job = Job.objects.get(pk=job_id)
    if job.is_finished:
        return
    document = Document.objects.select_related("project").get(pk=document_id)
    try:
        report = assist_document(document, tuple(job.params.get("steps", STEPS)))
    except Exception as exc:  # one document's failure must not stop the run; it is reported on the job
        job_record(job_id, StepReport(), error=f"{document.uid}: {type(exc).__name__}: {exc}")
        raise
    else:
        job_record(job_id, report)
    finally:
        Job.part_done(job_id, document_id, f"{document.uid} done")


@transaction.atomic
def job_record(job_id: int, report: StepReport, error: str = "") -> None:
    job = Job.objects.select_for_update().get(pk=job_id)
    result = job.result
    result["mapped"] += report.mapped
    result["prelabeled"] += report.prelabeled
    result["prelabel_failures"] += report.prelabel_failures
    result["keyfacts_generated"] += report.keyfacts_generated
    result["embedded_documents"] += int(report.embedded)
    result["notes"] += [note for note in report.notes if note not in result["notes"]]
    if error:
        result["errors"].append(error)
    job.save(update_fields=["result"])
