"""The export job: a Job row (status, progress, files) that the analytics page polls; a worker writes the files."""

import dataclasses
import logging
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from corpus.models import Job, Project, Summary, job_start

from .export import ExportOptions, export_benchmark
from .job_kinds import EXPORT
from .storage import StorageError, configured_url, upload

log = logging.getLogger(__name__)


def export_directory(job: Job) -> Path:
    return Path(settings.MEDIA_ROOT) / "exports" / job.project.slug / f"job-{job.pk}"


def export_start(*, project: Project, options: ExportOptions, user=None) -> Job:
    """Queue an export; raises JobAlreadyOpen while another one is queued or running for the project."""
    return job_start(kind=EXPORT, project=project, user=user,
                     total=Summary.objects.filter(document__project=project).count(),
                     params={"options": dataclasses.asdict(options)}, exclusive=True)


def export_run(*, job_id: int) -> None:
    # A full disk, a refused upload or a bad option fails the row without a traceback; anything else is a bug,
    # which fails the row too and reaches Celery's log.
    Job.objects.select_related("project").get(pk=job_id).run(_export, expected=(OSError, StorageError, ValueError))


def _export(job: Job) -> None:
    options = ExportOptions(**job.params.get("options", {}))
    job.begin(total=Summary.objects.filter(document__project=job.project).count())
    directory = export_directory(job)
    extension = "json" if options.format == "json" else "jsonl"
    progress = job.reporter("writing summaries")
    result = export_benchmark(project=job.project, out=directory / f"{job.project.slug}.{extension}",
                              options=options, progress=progress)
    progress.flush()
    uploaded = []
    if configured_url():
        job.advance(0, "uploading")
        uploaded = [upload(path, f"{configured_url()}/{job.project.slug}/job-{job.pk}") for path in result.files]
    job.finish({"directory": str(directory), "files": [path.name for path in result.files], "rows": result.rows,
                "label_source": result.label_source, "uploaded": uploaded,
                "finished_at": timezone.now().isoformat()})
