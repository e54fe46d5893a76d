"""Long work (imports, HIT building, assist runs, exports, crowd publishing) is a row the pages poll; a Celery task
that a worker process runs does the work, never a web request.

One pattern for every kind: an `<x>_start` service calls `job_start`, which writes the row and queues the kind's task
once the row is committed; the task takes the row's id and calls the kind's service through `Job.run`, which marks
the row running and records any error that escapes; the service reports progress with `advance` and ends the row
with `finish` or `fail`. Pages show the row with templates/jobs/_job.html, polled through one view
(annotation/views/jobs.py) that tells htmx to stop polling once the job is finished.
"""

import time
import uuid
from collections.abc import Callable
from pathlib import PurePath

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import models, transaction
from django.utils import timezone

from ..jobs import job_kind, kind_choices
from .project import Project


def job_upload_to(job: "Job", filename: str) -> str:
    # A random folder per upload: two files of one name never meet, and the name says nothing about the project.
    return f"uploads/{uuid.uuid4().hex}/{PurePath(filename).name[-150:]}"


class JobQuerySet(models.QuerySet):
    def open(self) -> "JobQuerySet":
        return self.filter(status__in=[Job.Status.QUEUED, Job.Status.RUNNING])


class JobAlreadyOpen(Exception):
    """A job of this kind is still queued or running for the project; `job` is that one."""

    def __init__(self, job: "Job"):
        self.job = job
        super().__init__(f"{job.get_kind_display()} #{job.pk} is still {job.get_status_display().lower()}")


class Job(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="jobs")
    # The kinds are declared by the apps that run them (corpus.jobs), so the choices are read when needed.
    kind = models.CharField(max_length=40, choices=kind_choices)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.QUEUED)
    progress = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    message = models.CharField(max_length=300, blank=True)
    error = models.TextField(blank=True)
    # What the job was asked to do (its start arguments); `result` is what it did.
    params = models.JSONField(default=dict, blank=True)
    result = models.JSONField(default=dict, blank=True)
    # An uploaded file the job reads (an import); deleted when the job ends.
    input_file = models.FileField(upload_to=job_upload_to, max_length=300, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created = models.DateTimeField(auto_now_add=True)
    started = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)

    objects = JobQuerySet.as_manager()

    class Meta:
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED)

    @property
    def percent(self) -> int:
        if self.status == self.Status.DONE:
            return 100
        return min(100, int(100 * self.progress / self.total)) if self.total else 0

    @property
    def unit(self) -> str:
        """What `progress` and `total` count."""
        try:
            return job_kind(self.kind).unit
        except LookupError:  # a row of a kind no app declares any more
            return "steps"

    @property
    def detail_template(self) -> str:
        """The kind's own lines inside the one job fragment (templates/jobs/_<kind>.html)."""
        return f"jobs/_{self.kind}.html"

    def run(self, work: Callable[["Job"], None], *, expected: tuple[type[Exception], ...] = ()) -> None:
        """The body of every job task: mark the row running and call `work(job)`, which advances and finishes it
        (or leaves that to the tasks it queues). An error of the `expected` kinds fails the row; any other error
        fails it too and is raised again, so that Celery logs it. A finished job is not run again (a redelivered
        message)."""
        if self.is_finished:
            return
        self.begin()
        try:
            work(self)
        except SoftTimeLimitExceeded:
            # The task's soft limit (corpus/time_limits.py): the row says so in words, and the worker moves on.
            self.fail("Stopped: it ran longer than its time limit allows. Start it again; what it finished is not "
                      "done twice.")
        except expected as exc:
            # Expected errors are worded for the manager; the class name is Python's, not theirs.
            self.fail(str(exc) or "It failed without saying why. Start it again; what it finished is not done twice.")
        except Exception:
            # An unexpected error's text is Python's (a KeyError reads "'uid'"): the page says what happened and
            # the worker's log keeps the error for the site's operators.
            self.fail("It stopped on an unexpected error, kept in the worker's log for the site's operators. Start "
                      "it again; what it finished is not done twice.")
            raise

    def begin(self, total: int | None = None) -> None:
        self.status, self.started = self.Status.RUNNING, self.started or timezone.now()
        fields = ["status", "started"]
        if total is not None:
            self.total, self.progress = total, 0
            fields += ["total", "progress"]
        self.save(update_fields=fields)

    def advance(self, step: int = 1, message: str = "") -> None:
        # An UPDATE with F() so that parallel per-document tasks never overwrite each other's progress.
        Job.objects.filter(pk=self.pk).update(progress=models.F("progress") + step, message=message[:300])

    def fan_out(self, document_ids: list[int]) -> None:
        """Work split by document: queue the kind's per-document task (corpus.jobs, `part`) once for each; the last
        to finish ends the row, and with no document the row ends now."""
        part = job_kind(self.kind).part
        self.begin(total=len(document_ids))
        if not document_ids:
            Job.finish_if_complete(self.pk)
        for document_id in document_ids:
            part.delay(self.pk, document_id)

    @classmethod
    def part_done(cls, pk: int, document_id: int, message: str = "") -> None:
        """A per-document task is through with its document (done or failed): the progress counts each document
        once, however often its task ran (a message is delivered at least once: one redelivered while its first run
        was still going runs twice), and the task that counts the last document ends the row."""
        with transaction.atomic():
            job = cls.objects.select_for_update().get(pk=pk)
            done = job.result.setdefault("documents_done", [])
            if document_id not in done:
                done.append(document_id)
            job.progress, job.message = len(done), message[:300]
            job.save(update_fields=["result", "progress", "message"])
        cls.finish_if_complete(pk)

    @classmethod
    def finish_if_complete(cls, pk: int) -> None:
        """For work split into parallel tasks (one per document): the task that brings progress to the total ends
        the row, failed if any task recorded an error in `result["errors"]`."""
        with transaction.atomic():
            job = cls.objects.select_for_update().get(pk=pk)
            if job.is_finished or job.progress < job.total:
                return
            job.finished = timezone.now()
            if job.result.get("errors"):
                job.status = cls.Status.FAILED
                job.error = "\n".join(job.result["errors"])
            else:
                job.status = cls.Status.DONE
            job.save(update_fields=["status", "finished", "error"])

    def reporter(self, message: str = "", every: float = 1.0) -> "ProgressReporter":
        """A `progress(step)` callable for long loops: it writes to the row at most once every `every` seconds."""
        return ProgressReporter(self, message, every)

    def finish(self, result: dict | None = None) -> None:
        self.refresh_from_db(fields=["progress", "message"])
        self.status, self.finished, self.result = self.Status.DONE, timezone.now(), result or {}
        self.save(update_fields=["status", "finished", "result"])
        self._drop_input()

    def fail(self, error: str, result: dict | None = None) -> None:
        self.status, self.finished, self.error = self.Status.FAILED, timezone.now(), error
        fields = ["status", "finished", "error"]
        if result is not None:
            self.result = result
            fields.append("result")
        self.save(update_fields=fields)
        self._drop_input()

    def _drop_input(self) -> None:
        # The upload served its purpose: its rows are stored or its problems are listed on the row.
        if self.input_file:
            self.input_file.delete(save=False)
            Job.objects.filter(pk=self.pk).update(input_file="")


class ProgressReporter:
    """Counts steps and writes them to the job's row now and then: one UPDATE per document would cost an import of
    thousands of documents more than the documents themselves (SQLite commits each one to disk)."""

    def __init__(self, job: Job, message: str, every: float):
        self.job, self.message, self.every = job, message, every
        self.pending, self.written = 0, time.monotonic()

    def __call__(self, step: int = 1) -> None:
        self.pending += step
        if time.monotonic() - self.written >= self.every:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            self.job.advance(self.pending, self.message)
        self.pending, self.written = 0, time.monotonic()


def job_start(*, kind: str, project: Project, user=None, total: int = 0, params: dict | None = None,
              input_file=None, exclusive: bool = False, alike: tuple[str, ...] = ()) -> Job:
    """Write the job's row and queue its kind's task (corpus.jobs) with the row's id once the row is committed (a
    worker never looks for a row that is not there yet). `exclusive`: refuse with JobAlreadyOpen while a job of this
    kind is open for the project (one with the same `alike` params, when given)."""
    task = job_kind(kind).task
    with transaction.atomic():
        if exclusive:
            # The project row's lock makes two clicks at once start one job, not two.
            Project.objects.select_for_update().filter(pk=project.pk).first()
            same = {f"params__{name}": (params or {}).get(name) for name in alike}
            running = project.jobs.open().filter(kind=kind, **same).first()
            if running is not None:
                raise JobAlreadyOpen(running)
        job = Job.objects.create(project=project, kind=kind, total=total, params=params or {},
                                 input_file=input_file or "",
                                 created_by=user if user is not None and user.is_authenticated else None)
        transaction.on_commit(lambda: task.delay(job.pk))
    return job
