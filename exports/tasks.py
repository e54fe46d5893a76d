"""The export job: a Job row (status, progress, files) that the analytics page polls, run by a Celery task."""

import dataclasses
import logging
from pathlib import Path

from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotation.models import Job, Project, Summary

from .export import ExportOptions, export_benchmark
from .storage import StorageError, configured_url, upload

JOB_KIND = "export"
PROGRESS_EVERY = 50
log = logging.getLogger(__name__)


def export_directory(job: Job) -> Path:
    return Path(settings.MEDIA_ROOT) / "exports" / job.project.slug / f"job-{job.pk}"


def export_start(*, project: Project, options: ExportOptions, user=None) -> Job:
    """Create the Job row and queue the task once the row is committed."""
    job = Job.objects.create(project=project, kind=JOB_KIND, status=Job.Status.QUEUED,
                             total=Summary.objects.filter(document__project=project).count(),
                             result={"options": dataclasses.asdict(options)},
                             created_by=user if user is not None and user.is_authenticated else None)
    transaction.on_commit(lambda: export_task.delay(job.pk))
    return job


def run_export_job(job_id: int) -> None:
    job = Job.objects.select_related("project").get(pk=job_id)
    if job.is_finished:
        return
    options = ExportOptions(**job.result.get("options", {}))
    job.start(total=Summary.objects.filter(document__project=job.project).count())
    directory = export_directory(job)
    extension = "json" if options.format == "json" else "jsonl"
    pending = [0]

    def progress(step: int) -> None:
        pending[0] += step
        if pending[0] >= PROGRESS_EVERY:
            job.advance(pending[0], "writing summaries")
            pending[0] = 0

    try:
        result = export_benchmark(project=job.project, out=directory / f"{job.project.slug}.{extension}",
                                  options=options, progress=progress)
        job.advance(pending[0], "uploading" if configured_url() else "done")
        uploaded = []
        if configured_url():
            uploaded = [upload(path, f"{configured_url()}/{job.project.slug}/job-{job.pk}") for path in result.files]
    except (OSError, StorageError, ValueError) as exc:
        log.exception("export job %s failed", job_id)
        job.fail(f"{type(exc).__name__}: {exc}")
        return
    except Exception as exc:  # A bug: the row must not stay "running" forever; Celery still sees the error.
        job.fail(f"{type(exc).__name__}: {exc}")
        raise
    job.finish({"options": dataclasses.asdict(options), "directory": str(directory),
                "files": [path.name for path in result.files], "rows": result.rows,
                "label_source": result.label_source, "uploaded": uploaded,
                "finished_at": timezone.now().isoformat()})


@shared_task(acks_late=True, reject_on_worker_lost=True)
def export_task(job_id: int) -> None:
    # Rerunnable: a redelivered task rewrites the same files from the same labels.
    run_export_job(job_id)
