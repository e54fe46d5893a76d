"""Numbers computed by a job and stored with the fingerprint of what they read: shown as current only while it
matches.

Some numbers read every label of a project (a quality dashboard, the analytics): seconds at UniSumEval scale, more
beyond, so they never run inside a request. A kind registers two functions (`snapshot_kind`): `basis(project)`, a few
cheap aggregates over what the numbers read (counts, largest ids, latest timestamps; it must move whenever a number
would), and `compute(project)`, the numbers as JSON. The job (`snapshot_start`: a Job row and a Celery task) takes
the basis before it reads anything, computes, and stores both in a `Snapshot`. A page asks `snapshot_state`: the
stored numbers, whether they are current, and the job bringing them up to date (the open one, or the one that failed
on this very basis: shown with its error, not retried on every view).
"""

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from .models import Job, Project, Snapshot, job_start


@dataclass(frozen=True)
class SnapshotKind:
    name: str
    basis: Callable[[Project], dict]
    compute: Callable[[Project], dict]


_KINDS: dict[str, SnapshotKind] = {}


def snapshot_kind(name: str, *, basis: Callable[[Project], dict], compute: Callable[[Project], dict]) -> None:
    """Register a kind (from its app's ready()); its jobs have `Job.kind == name`."""
    _KINDS[name] = SnapshotKind(name, basis, compute)


def snapshot_kinds() -> list[str]:
    """The job kinds that only read (a fingerprint of finished jobs leaves them out: they change no data)."""
    return list(_KINDS)


def fingerprint_of(basis: dict) -> str:
    # repr, not JSON: JSON would cut timestamps to milliseconds.
    return hashlib.sha256(repr(basis).encode()).hexdigest()


@dataclass
class SnapshotState:
    stored: Snapshot | None
    basis: dict
    fingerprint: str
    job: Job | None = None  # None when the stored numbers are current

    @property
    def current(self) -> bool:
        return self.stored is not None and self.stored.fingerprint == self.fingerprint

    @property
    def failed(self) -> bool:
        return self.job is not None and self.job.status == Job.Status.FAILED


def snapshot_state(project: Project, kind: str, *, user=None) -> SnapshotState:
    """The stored numbers and whether they are current; when they are not (or there are none), the job computing
    them, started here if none is open and none failed on this basis."""
    basis = _KINDS[kind].basis(project)
    state = SnapshotState(Snapshot.objects.filter(project=project, kind=kind).first(), basis, fingerprint_of(basis))
    if not state.current:
        state.job = snapshot_job(project, kind, fingerprint=state.fingerprint, user=user)
    return state


def snapshot_job(project: Project, kind: str, *, fingerprint: str, user=None) -> Job:
    """The open job of this kind, the one that failed on this very fingerprint, or a new one."""
    return job_for_fingerprint(project, kind, fingerprint=fingerprint, start=lambda: snapshot_start(
        project=project, kind=kind, user=user, fingerprint=fingerprint))


def job_for_fingerprint(project: Project, kind: str, *, fingerprint: str, start: Callable[[], Job],
                        params: dict | None = None) -> Job:
    """The job bringing stored numbers up to `fingerprint`: the open one of this kind (and `params`), the one that
    failed on this very fingerprint (shown with its error, not retried on every page view), or `start()`'s."""
    with transaction.atomic():
        # The project row's lock makes two page views at once start one job, not two.
        Project.objects.select_for_update().filter(pk=project.pk).first()
        jobs = project.jobs.filter(kind=kind, **{f"params__{name}": value for name, value in (params or {}).items()})
        job = jobs.open().order_by("-pk").first() or jobs.filter(
            status=Job.Status.FAILED, params__fingerprint=fingerprint).order_by("-pk").first()
        return job if job is not None else start()


def snapshot_start(*, project: Project, kind: str, user=None, fingerprint: str = "") -> Job:
    """A new job (a retry after a failure, or the first one). The kind's app registers it as a job kind run by
    `snapshot_task` too (corpus.jobs)."""
    if kind not in _KINDS:
        raise ValueError(f"Unknown kind of stored numbers: {kind!r}")
    return job_start(kind=kind, project=project, user=user, total=1, params={"fingerprint": fingerprint})


def snapshot_run(*, job_id: int) -> None:
    Job.objects.select_related("project").get(pk=job_id).run(_compute)


def _compute(job: Job) -> None:
    kind = _KINDS[job.kind]
    # Taken before anything is read: data that arrives meanwhile makes the stored numbers stale, never the reverse.
    basis, computed = kind.basis(job.project), timezone.now()
    job.advance(0, "reading")
    started = time.perf_counter()
    data = kind.compute(job.project)
    seconds = time.perf_counter() - started
    Snapshot.objects.update_or_create(
        project=job.project, kind=kind.name,
        defaults={"fingerprint": fingerprint_of(basis), "basis": basis, "data": data, "computed": computed,
                  "seconds": seconds})
    job.advance(1, "done")
    job.finish({"seconds": round(seconds, 2)})
