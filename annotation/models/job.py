"""Long work (assist runs, imports, exports, publishing) is a row the pages poll; Celery only executes it."""

from django.conf import settings
from django.db import models
from django.utils import timezone

from .project import Project


class Job(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="jobs")
    kind = models.CharField(max_length=40)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.QUEUED)
    progress = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    message = models.CharField(max_length=300, blank=True)
    error = models.TextField(blank=True)
    result = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created = models.DateTimeField(auto_now_add=True)
    started = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED)

    @property
    def percent(self) -> int:
        return int(100 * self.progress / self.total) if self.total else (100 if self.is_finished else 0)

    def start(self, total: int) -> None:
        self.status, self.total, self.progress, self.started = self.Status.RUNNING, total, 0, timezone.now()
        self.save(update_fields=["status", "total", "progress", "started"])

    def advance(self, step: int = 1, message: str = "") -> None:
        # An UPDATE with F() so that parallel per-document tasks never overwrite each other's progress.
        Job.objects.filter(pk=self.pk).update(progress=models.F("progress") + step, message=message[:300])

    def finish(self, result: dict | None = None) -> None:
        self.refresh_from_db(fields=["progress"])
        self.status, self.finished, self.result = self.Status.DONE, timezone.now(), result or {}
        self.save(update_fields=["status", "finished", "result"])

    def fail(self, error: str) -> None:
        self.status, self.finished, self.error = self.Status.FAILED, timezone.now(), error
        self.save(update_fields=["status", "finished", "error"])
