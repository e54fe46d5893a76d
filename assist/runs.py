"""An assist run over a project: one Job row (status, progress, notes) and one unit of work per document."""

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from annotation.models import Document, Job, Project

from .pipeline import STEPS, StepReport, assist_document

JOB_KIND = "assist"


def job_create(*, project: Project, steps: tuple[str, ...] = STEPS, user=None) -> Job:
    unknown = set(steps) - set(STEPS)
    if unknown:
        raise ValueError(f"unknown assist step(s): {', '.join(sorted(unknown))}; choose from {', '.join(STEPS)}")
    total = project.documents.count()
    return Job.objects.create(
        project=project, kind=JOB_KIND, status=Job.Status.RUNNING, total=total, started=timezone.now(),
        created_by=user if user is not None and user.is_authenticated else None,
        result={"steps": list(steps), "mapped": 0, "prelabeled": 0, "prelabel_failures": 0,
                "keyfacts_generated": 0, "embedded_documents": 0, "notes": [], "errors": []},
    )


def assist_run_start(*, project: Project, steps: tuple[str, ...] = STEPS, user=None) -> Job:
    """Queue one Celery task per document once the Job row is committed; the page polls the row."""
    from .tasks import assist_document_task

    job = job_create(project=project, steps=steps, user=user)
    document_ids = list(project.documents.values_list("pk", flat=True))
    if not document_ids:
        job_finish_if_complete(job.pk)

    def queue():
        for document_id in document_ids:
            assist_document_task.delay(job.pk, document_id)

    transaction.on_commit(queue)
    return job


def job_run_document(job_id: int, document_id: int) -> None:
    """The body of one task: idempotent (steps skip current work), records its outcome on the Job row."""
    job = Job.objects.get(pk=job_id)
    if job.is_finished:
        return
    document = Document.objects.select_related("project").get(pk=document_id)
    try:
        report = assist_document(document, tuple(job.result.get("steps", STEPS)))
    except Exception as exc:  # one document's failure must not stop the run; it is reported on the job
        job_record(job_id, StepReport(), error=f"{document.uid}: {type(exc).__name__}: {exc}")
        raise
    else:
        job_record(job_id, report)
    finally:
        Job.objects.filter(pk=job_id).update(progress=F("progress") + 1, message=f"{document.uid} done")
        job_finish_if_complete(job_id)


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


def job_finish_if_complete(job_id: int) -> None:
    with transaction.atomic():
        job = Job.objects.select_for_update().get(pk=job_id)
        if job.is_finished or job.progress < job.total:
            return
        job.finished = timezone.now()
        if job.result.get("errors"):
            job.status = Job.Status.FAILED
            job.error = "\n".join(job.result["errors"])
        else:
            job.status = Job.Status.DONE
        job.save(update_fields=["status", "finished", "error"])
