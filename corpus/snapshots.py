"""Stored numbers: numbers a job computed and stored with the fingerprint of what they read, shown as current only
while it matches. The analytics figures, the reviewer's list and the annotators' quality numbers are all kept so.

They read every label of a project: seconds at UniSumEval scale, more beyond, so they never run inside a request. A
kind of job declares its numbers (corpus.jobs.StoredNumbers): `basis(project, variant)`, a few cheap aggregates over
what the numbers read (counts, largest ids, latest timestamps, built from the parts in `annotation.fingerprints`; it
must move whenever a number would), and `compute(job)`, the numbers as JSON. The job takes the basis before it reads
anything, computes, and stores both in a `Snapshot`.

A page asks `numbers_state`: the stored numbers, whether they are current, and the job bringing them up to date if
one is open (or the last one, if it failed: shown with its error). A page view never starts one: a GET changes
nothing. The manager asks for new numbers with a button (`numbers_update`, a POST), and the one polling view
(annotation.views.jobs.numbers_status) follows the job until the page can show them.

Why a fingerprint, not counters kept by every writer: labels arrive through bulk inserts and bulk updates that no
signal sees, and a counter missed once would show stale numbers as current. An insert moves a count and a largest id,
an edit a timestamp, a delete a count.
"""

import hashlib
import time
from dataclasses import dataclass
from functools import cache

from django.db import transaction
from django.db.models import Count, Max, Q
from django.utils import timezone
from django.utils.module_loading import import_string

from .jobs import JobKind, StoredNumbers, job_kind, read_only_kinds
from .models import Document, Job, KeyFact, Project, Snapshot, Summary, job_start


def numbers_of(code: str, variant: str = "") -> StoredNumbers:
    """The kind's stored numbers; LookupError for a kind that stores none or a variant it does not keep."""
    numbers = job_kind(code).numbers
    if numbers is None or variant not in numbers.variants:
        raise LookupError(f"The job kind {code!r} stores no numbers of variant {variant!r}")
    return numbers


@cache
def function(path: str):
    return import_string(path)


def fingerprint_of(basis: dict) -> str:
    # repr, not JSON: JSON would cut timestamps to milliseconds.
    return hashlib.sha256(repr(basis).encode()).hexdigest()


def data_jobs(project: Project) -> dict:
    """The project's jobs that may change what numbers read (imports, HIT building, AI assistance, evaluator runs...),
    as a fingerprint part: one that finishes moves it. Jobs that only read (exports, the stored numbers) do not."""
    return project.jobs.exclude(kind__in=read_only_kinds()).aggregate(n=Count("pk"), finished=Max("finished"))


def corpus_parts(project: Project) -> dict:
    """The project's documents, summaries and key-facts, as fingerprint parts."""
    return {
        "documents": Document.objects.filter(project=project).aggregate(n=Count("pk"), last=Max("pk")),
        "summaries": Summary.objects.filter(document__project=project).aggregate(n=Count("pk"), last=Max("pk")),
        "keyfacts": KeyFact.objects.filter(document__project=project).aggregate(
            n=Count("pk"), last=Max("pk"), accepted=Count("pk", filter=Q(status=KeyFact.Status.ACCEPTED))),
    }


@dataclass
class NumbersState:
    """Stored numbers of one kind (and variant) against the data as it is now."""

    project: Project
    kind: JobKind
    variant: str
    stored: Snapshot | None
    basis: dict
    fingerprint: str
    # While the numbers are not current: the open job, or the latest one if it failed after the stored numbers were
    # computed; never one started for the page.
    job: Job | None

    @property
    def numbers(self) -> StoredNumbers:
        return self.kind.numbers

    @property
    def current(self) -> bool:
        return self.stored is not None and self.stored.fingerprint == self.fingerprint

    @property
    def failed(self) -> bool:
        return self.job is not None and self.job.status == Job.Status.FAILED

    @property
    def running(self) -> bool:
        return self.job is not None and not self.job.is_finished

    @property
    def data(self) -> dict | None:
        """The stored numbers, older ones included where the kind shows them; None when there are none to show."""
        if self.stored is None or not (self.current or self.numbers.show_stale):
            return None
        return self.stored.data

    @property
    def computed(self):
        return self.stored.computed if self.stored is not None else None

    @property
    def since(self) -> str:
        """What changed since the stored numbers were computed, in a phrase ("" when the kind does not say)."""
        if self.stored is None or self.current or not self.numbers.since:
            return ""
        return function(self.numbers.since)(self)


def numbers_state(project: Project, code: str, variant: str = "") -> NumbersState:
    """The stored numbers and whether they are current, with the job bringing them up to date if one is open or the
    last one failed. Reads only: a page view starts nothing."""
    numbers = numbers_of(code, variant)
    basis = function(numbers.basis)(project, variant)
    fingerprint = fingerprint_of(basis)
    stored = Snapshot.objects.filter(project=project, kind=code, variant=variant).first()
    state = NumbersState(project, job_kind(code), variant, stored, basis, fingerprint, job=None)
    if not state.current:
        # The newest of the open jobs and those that failed since the stored numbers were computed (whatever data
        # they were asked for: an error is shown until somebody asks again), in one query.
        failed = Q(status=Job.Status.FAILED)
        if stored is not None:
            failed &= Q(created__gt=stored.computed)
        state.job = project.jobs.filter(
            Q(status__in=[Job.Status.QUEUED, Job.Status.RUNNING]) | failed,
            kind=code, params__variant=variant).order_by("-pk").first()
    return state


def numbers_update(project: Project, code: str, variant: str = "", *, user=None) -> Job | None:
    """Ask for numbers computed from the data as it is now (a POST): the job already open, a new one, or None when
    the stored numbers are current. A job that failed is tried again: somebody asked."""
    with transaction.atomic():
        # The project row's lock makes two clicks at once start one job, not two.
        Project.objects.select_for_update().filter(pk=project.pk).first()
        state = numbers_state(project, code, variant)
        if state.running:
            return state.job
        if state.current:
            return None
        return job_start(kind=code, project=project, user=user, total=1,
                         params={"variant": variant, "fingerprint": state.fingerprint})


def numbers_run(*, job_id: int) -> None:
    Job.objects.select_related("project").get(pk=job_id).run(_compute)


def _compute(job: Job) -> None:
    numbers, variant = numbers_of(job.kind), job.params.get("variant", "")
    # Taken before anything is read: data that arrives meanwhile makes the stored numbers stale, never the reverse.
    basis, computed = function(numbers.basis)(job.project, variant), timezone.now()
    job.advance(0, "reading")
    started = time.perf_counter()
    result = function(numbers.compute)(job)
    data, write = result if isinstance(result, tuple) else (result, None)
    seconds = time.perf_counter() - started
    # The kind's own rows and the numbers in one transaction: a page reads the old ones or the new, never half.
    with transaction.atomic():
        if write is not None:
            write()
        Snapshot.objects.update_or_create(
            project=job.project, kind=job.kind, variant=variant,
            defaults={"fingerprint": fingerprint_of(basis), "basis": basis, "data": data, "computed": computed,
                      "seconds": seconds})
    Job.objects.filter(pk=job.pk).update(progress=job.total, message="done")
    job.finish({"variant": variant, "seconds": round(seconds, 2), **(data.get("summary") or {})})
