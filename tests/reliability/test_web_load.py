"""50 concurrent annotators against a real gunicorn; then the same while gunicorn workers are SIGKILLed.

Afterwards every answer the server acknowledged is in the database exactly once with the acknowledged value, every
acknowledged submission is recorded once, no HIT holds more than N submissions, and no request got a 5xx.
"""

import os
import signal
import time

import pytest

from corpus.models import Project

from ..work import import_generated
from .annotators import create_annotators, run_annotators, verify_against_database
from .conftest import running_gunicorn

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]

ANNOTATORS = 50
LOAD_SECONDS = 20
KILL_SECONDS = 15
KILLS = 4


@pytest.fixture(scope="module")
def gunicorn(django_db_setup, tmp_path_factory):
    """One gunicorn for both tests (starting one takes seconds); the kills of the second leave it with three workers
    again, as it asserts."""
    with running_gunicorn(tmp_path_factory.mktemp("gunicorn") / "gunicorn.log") as server:
        yield server


def load_project(slug: str, documents: int) -> Project:
    from annotation.services.hits import build_hits

    # No attention checks and highlights only: every FV item has the same two questions, so the clients need
    # no knowledge of the checks (grading still runs on every submit).
    project = Project.objects.create(slug=slug, name=slug, attention_check_rate=0.0, assistance="highlights",
                                     fast_seconds_per_item=0.0)
    import_generated(project, documents=documents, summarizers=5, sentences=3, words_per_sentence=8)
    build_hits(project, "fv")
    return project


def figures_of(tally, verdict) -> dict:
    return {
        "annotators": ANNOTATORS,
        "requests": tally.requests,
        "transport_errors": tally.transport_errors,
        "retries": tally.retries,
        "http_5xx": tally.server_errors,
        "answers_acknowledged": tally.answer_acks,
        "distinct_answers_acknowledged": len(tally.answers),
        "answers_verified": len(tally.answers) - verdict["lost_answers"] - verdict["wrong_values"],
        "submissions_acknowledged": len(tally.submissions),
        "lost": verdict["lost_answers"] + verdict["lost_submissions"],
        "duplicates": verdict["duplicates"],
        "mean_ms": tally.mean_ms(),
        "reserve_found_nothing": tally.nothing_left,
    }


def assert_no_loss(tally, verdict) -> None:
    assert not tally.unexpected, tally.unexpected[:5]
    assert tally.server_errors == 0, tally.statuses
    assert tally.gave_up == 0
    assert verdict["duplicates"] == 0, verdict["examples"]
    assert verdict["lost_answers"] == 0, verdict["examples"]
    assert verdict["wrong_values"] == 0, verdict["examples"]
    assert verdict["lost_submissions"] == 0 and verdict["submission_key_mismatch"] == 0, verdict["examples"]
    assert verdict["hits_over_capacity"] == 0


def test_it_keeps_every_acknowledged_answer_of_50_concurrent_annotators(gunicorn, record_figures):
    project = load_project("load", documents=14)
    names = create_annotators(project, ANNOTATORS)

    tally = run_annotators(gunicorn.url, names, project.slug, LOAD_SECONDS)
    verdict = verify_against_database(tally, project)

    record_figures(**figures_of(tally, verdict), seconds_of_load=LOAD_SECONDS,
                   requests_per_second=round(tally.requests / LOAD_SECONDS, 1))
    assert tally.answer_acks > 100, "the load test did too little work to mean anything"
    assert len(tally.submissions) > 20
    assert_no_loss(tally, verdict)
    # Without faults nothing is stored that the server did not acknowledge.
    assert verdict["unacknowledged_but_stored"] == 0


def test_it_loses_no_answer_when_web_workers_are_killed_mid_request(gunicorn, record_figures):
    project = load_project("webkill", documents=12)
    names = create_annotators(project, ANNOTATORS)
    killed = []

    def kill_workers(deadline):
        # SIGKILL one busy gunicorn worker every few seconds while the clients save answers; the master respawns it.
        time.sleep(2)
        while len(killed) < KILLS and time.monotonic() < deadline - 2:
            workers = gunicorn.workers()
            if workers:
                victim = workers[len(killed) % len(workers)]
                os.kill(victim, signal.SIGKILL)
                killed.append(victim)
            time.sleep((KILL_SECONDS - 4) / KILLS)

    tally = run_annotators(gunicorn.url, names, project.slug, KILL_SECONDS, during=kill_workers)
    verdict = verify_against_database(tally, project)

    record_figures(**figures_of(tally, verdict), faults_injected=len(killed),
                   stored_without_acknowledgement=verdict["unacknowledged_but_stored"])
    assert len(killed) == KILLS
    assert tally.transport_errors > 0, "no request was cut off: the kills did not land mid-request"
    assert gunicorn.process.poll() is None and len(gunicorn.workers()) == 3  # the master replaced them
    assert_no_loss(tally, verdict)
