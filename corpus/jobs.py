"""The kinds of long work, declared by the app that owns each one and registered at start-up.

Each app lists its kinds in its tasks module, beside the Celery tasks that run them, and its AppConfig.ready imports
that module, so every process (web, worker, command) knows every kind before it starts or shows a job. A Job row
names its kind by `code`; `job_start` queues the kind's task found here, so a service never imports the task that
runs it: the task imports the service, and imports point one way. corpus, the ground floor, knows no kind of its own
apart from the import.
"""

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class JobKind:
    code: str  # stored in Job.kind
    label: str  # what the pages call it
    task: Any  # the Celery task that runs it, called with the row's id
    unit: str = "steps"  # what the row's progress and total count
    # For work split by document: the task run once per document, called with the row's id and the document's
    # (`fan_out`); the last one to finish ends the row (Job.finish_if_complete).
    part: Any = None
    # Work that changes nothing stored numbers read (an export, the stored numbers themselves): its jobs leave every
    # fingerprint alone (corpus.snapshots.data_jobs).
    reads_only: bool = False
    # For numbers computed from a fingerprint of what they read: how they are computed, checked and shown
    # (corpus.snapshots); run by corpus.tasks.snapshot_task.
    numbers: "StoredNumbers | None" = None


@dataclass(frozen=True)
class StoredNumbers:
    """Numbers a job computes and stores with the fingerprint of what they read (corpus.snapshots). The functions are
    named by dotted path and imported when first used, so registering a kind at start-up loads none of them."""

    what: str  # what the pages call them, in a sentence: "the quality numbers"
    basis: str  # (project, variant) -> a dict of cheap aggregates that moves whenever a number would
    compute: str  # (job) -> the numbers as JSON, or (numbers, write): write() stores the kind's own rows
    access: str  # (user, slug) -> the project, raising 404 or 403: who may see them and ask for them
    page: str  # the URL name of the page that shows them (its one argument: the project's slug)
    variants: tuple[str, ...] = ("",)  # kept side by side, e.g. with and without simulated labels
    show_stale: bool = True  # False: numbers older than the data are not shown at all (the paper's tables)
    # When newer numbers are ready on a page that shows older ones: reload it, or say so and let the reader reload
    # (a reload would lose a reason being typed).
    reload_when_shown: bool = True
    stale_note: str = ""  # what stays live on the page while the numbers are older than the data
    since: str = ""  # optional (state) -> a phrase for what changed since the stored numbers, e.g. "12 submissions"


_KINDS: dict[str, JobKind] = {}


def register_kinds(*kinds: JobKind) -> None:
    """Called by each app's tasks module when it is imported (its AppConfig.ready)."""
    for kind in kinds:
        _KINDS[kind.code] = kind


def job_kind(code: str) -> JobKind:
    try:
        return _KINDS[code]
    except KeyError:
        raise LookupError(f"No kind of job is registered as {code!r}: is its app's tasks module imported by its "
                          "AppConfig.ready?") from None


def numbers_kinds() -> list[JobKind]:
    return [kind for kind in _KINDS.values() if kind.numbers is not None]


def read_only_kinds() -> list[str]:
    return [kind.code for kind in _KINDS.values() if kind.reads_only or kind.numbers is not None]


def kind_choices() -> list[tuple[str, str]]:
    """Job.kind's choices, read when they are needed (the apps register their kinds after the models load)."""
    return [(kind.code, kind.label) for kind in _KINDS.values()]


def queue_task(name: str, *args) -> None:
    """Queue a Celery task by its registered name: for the few tasks that are not a job kind's (one provider call per
    HIT), whose services must not import the tasks module that imports them."""
    from celery import current_app

    current_app.tasks[name].delay(*args)
