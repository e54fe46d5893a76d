"""A dataset upload, imported by a worker: the request stores the file on a Job row and returns at once; the task
checks every row and writes all or nothing (corpus/importing.py), and the job's page lists every problem."""

import dataclasses

from .importing import DatasetError, import_dataset
from .models import Job, Project, job_start

# A file with a problem on every line would otherwise put hundreds of thousands of them on one row.
MAX_LISTED_PROBLEMS = 1000
IMPORT = "import"  # its job kind (corpus/tasks.py)


def import_start(*, project: Project, upload, user=None) -> Job:
    return job_start(kind=IMPORT, project=project, user=user, params={"filename": upload.name}, input_file=upload)


def import_run(*, job_id: int) -> None:
    Job.objects.select_related("project").get(pk=job_id).run(_import)


def _import(job: Job) -> None:
    job.advance(0, "checking every row")
    progress = job.reporter("segmenting documents")
    try:
        # Read a piece at a time, never whole: an import's memory does not follow the file's size.
        with job.input_file.open("rb") as file:
            result = import_dataset(project=job.project, data=file, filename=job.params["filename"],
                                    progress=progress, planned=lambda total: job.begin(total=total))
    except DatasetError as exc:
        problems = [{"line": error.line, "field": error.field, "message": error.message} for error in exc.errors]
        job.fail(f"Nothing was imported: {len(problems)} problem{'s' if len(problems) != 1 else ''}.",
                 result={"problems": problems[:MAX_LISTED_PROBLEMS], "problem_count": len(problems)})
        return
    progress.flush()
    job.finish(dataclasses.asdict(result))
