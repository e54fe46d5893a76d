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


_KINDS: dict[str, JobKind] = {}


def register_kinds(*kinds: JobKind) -> None:
    for kind in kinds:
        _KINDS[kind.code] = kind


def job_kind(code: str) -> JobKind:
    try:
        return _KINDS[code]
    except KeyError:
        raise LookupError(f"No kind of job is registered as {code!r}: is its app's tasks module imported by its "
                          "AppConfig.ready?") from None


def kind_choices() -> list[tuple[str, str]]:
    """Job.kind's choices, read when they are needed (the apps register their kinds after the models load)."""
    return [(kind.code, kind.label) for kind in _KINDS.values()]


def queue_task(name: str, *args) -> None:
    """Queue a Celery task by its registered name: for the few tasks that are not a job kind's (one provider call per
    HIT), whose services must not import the tasks module that imports them."""
    from celery import current_app

    current_app.tasks[name].delay(*args)
