"""corpus.segmentation.Splitter: texts offered while a file is read are split once, in worker processes, and give
the sentences the splitter gives in this process; what is left queued when the import stops is dropped."""

import multiprocessing

import pytest

from corpus import segmentation
from corpus.segmentation import DIALOGUE, DOCUMENT, SUMMARY, Splitter, split_as

TEXTS = [(DOCUMENT, "The council met on Monday. It voted 7-2 (a rare split).\nA new line, a new sentence."),
         (DIALOGUE, "#Person1#: Where were you? I waited.\n#Person2#: At the station. Sorry!"),
         (SUMMARY, "The council voted. Dr. Ruiz objected.")]


@pytest.fixture
def parallel(monkeypatch):
    monkeypatch.setattr(segmentation, "PARALLEL_FROM_CHARS", 0)
    monkeypatch.setattr(segmentation, "BATCH_CHARS", 60)  # a batch every text or two


def test_offered_texts_are_split_once_in_the_workers_with_the_same_sentences(parallel, monkeypatch):
    batches = []
    real_submit = segmentation.ProcessPoolExecutor.submit
    monkeypatch.setattr(segmentation.ProcessPoolExecutor, "submit",
                        lambda pool, function, batch: batches.append(list(batch)) or real_submit(pool, function, batch))
    with Splitter(2, 10_000) as splitter:
        for kind, text in TEXTS * 3:  # every row repeats its document
            splitter.offer(kind, text)
        splitter.send()
        got = [splitter.sentences(kind, text) for kind, text in TEXTS]
    assert got == [split_as(kind, text) for kind, text in TEXTS]
    assert sorted(key for batch in batches for key in batch) == sorted(TEXTS)
    assert not multiprocessing.active_children()


def test_a_text_never_offered_or_not_yet_sent_is_still_split(parallel):
    with Splitter(2, 10_000) as splitter:
        splitter.offer(SUMMARY, "One. Two.")  # below the batch size: still queued
        assert splitter.sentences(SUMMARY, "One. Two.") == ["One.", "Two."]
        assert splitter.sentences(SUMMARY, "Never offered. Still split.") == ["Never offered.", "Still split."]


def test_small_work_or_one_process_splits_here_without_workers():
    for processes, chars in ((1, 10**9), (2, 10)):
        with Splitter(processes, chars) as splitter:
            splitter.offer(SUMMARY, "One. Two.")
            assert splitter.pool is None and splitter.results == {}
            assert splitter.sentences(SUMMARY, "One. Two.") == ["One.", "Two."]


def test_leaving_with_work_queued_drops_it_and_leaves_no_worker(parallel):
    with pytest.raises(RuntimeError), Splitter(2, 10_000) as splitter:
        for number in range(200):
            splitter.offer(DOCUMENT, f"Sentence {number}. " * 50)
        raise RuntimeError("the file had errors")
    assert not multiprocessing.active_children()


def test_a_daemonic_process_such_as_a_celery_prefork_child_splits_in_workers_and_stays_daemonic(parallel,
                                                                                                  monkeypatch):
    monkeypatch.setitem(multiprocessing.current_process()._config, "daemon", True)
    with Splitter(2, 10_000) as splitter:
        for kind, text in TEXTS:
            splitter.offer(kind, text)
        splitter.send()
        assert [splitter.sentences(kind, text) for kind, text in TEXTS] == [split_as(kind, text) for kind, text in TEXTS]
        assert splitter.pool._processes  # the texts were split in worker processes
    assert multiprocessing.current_process().daemon
    assert not multiprocessing.active_children()


# --- How many processes split: the cores shared among a Celery worker's pool

def test_the_operators_setting_wins(settings, monkeypatch):
    from corpus.importing import split_processes

    settings.FINEGRAIN_SEGMENT_PROCESSES = 3
    monkeypatch.setenv("FINEGRAIN_WORKER_POOL", "8")
    assert split_processes() == 3


@pytest.mark.parametrize("pool, cores, expected", [(None, 8, 8), ("1", 8, 8), ("2", 8, 4), ("3", 8, 2), ("4", 2, 1)])
def test_outside_a_workers_pool_each_pool_process_has_its_share_of_the_cores(settings, monkeypatch, pool, cores,
                                                                              expected):
    from corpus import importing, worker_pool

    settings.FINEGRAIN_SEGMENT_PROCESSES = 0
    if pool is None:
        monkeypatch.delenv("FINEGRAIN_WORKER_POOL", raising=False)
    else:
        monkeypatch.setenv("FINEGRAIN_WORKER_POOL", pool)
    monkeypatch.setattr(importing.os, "cpu_count", lambda: cores)
    monkeypatch.setattr(worker_pool, "_running", None)  # no counter: not a pool process
    assert importing.split_processes() == expected


@pytest.mark.parametrize("pool, cores, running, expected", [
    ("2", 2, 1, 2), ("2", 2, 2, 1),  # alone it takes both cores; beside a busy sibling, its own
    ("4", 8, 1, 8), ("4", 8, 2, 6), ("4", 8, 4, 2), ("3", 8, 3, 4),  # 8 // 3 = 2 each: two busy siblings hold 4
    ("2", 2, 9, 1),  # a count left high by a killed sibling never goes below the share
])
def test_in_a_workers_pool_an_import_takes_the_shares_of_its_idle_siblings(settings, monkeypatch, pool, cores, running,
                                                                          expected):
    from corpus import importing, worker_pool

    settings.FINEGRAIN_SEGMENT_PROCESSES = 0
    monkeypatch.setenv("FINEGRAIN_WORKER_POOL", pool)
    monkeypatch.setattr(importing.os, "cpu_count", lambda: cores)
    monkeypatch.setattr(worker_pool, "_running", None)  # put back as it was after the test
    worker_pool.share_among_pool()
    for _ in range(running):
        worker_pool.task_started()  # this import's own task is one of them
    assert importing.split_processes() == expected
    for _ in range(running + 1):
        worker_pool.task_ended()
    assert worker_pool.busy_siblings() == 0


# A worker whose pool can also run a task that holds its pool process until a file is deleted.
HOLDING_WORKER = """
import pathlib, sys, time
from config.celery_app import app

@app.task(name="tests.hold")
def hold(path):
    while pathlib.Path(path).exists():
        time.sleep(0.05)

app.worker_main(sys.argv[1:])
"""


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_a_worker_of_two_processes_splits_on_every_core_alone_and_on_its_share_beside_a_busy_sibling(settings,
                                                                                                    tmp_path):
    import os
    import re
    import time
    from pathlib import Path

    from django.core.files.uploadedfile import SimpleUploadedFile

    from config.celery_app import app
    from corpus.models import Job, Project
    from corpus.uploads import import_start
    from tests.reliability.conftest import wait_until
    from tests.worker import celery_worker, purge_queues, worker_log

    purge_queues("default", "assist", "crowd")
    projects = [Project.objects.create(slug=f"split-share-{n}", name=f"Split share {n}") for n in (1, 2)]
    data = (Path(__file__).resolve().parents[1] / "fixtures" / "import" / "small.jsonl").read_bytes()
    held = tmp_path / "held"

    def imported(name: str, project: Project) -> Job:
        job = import_start(project=project, upload=SimpleUploadedFile(name, data))
        wait_until(lambda: Job.objects.get(pk=job.pk).is_finished, timeout=120, what=f"the import of {name}",
                   alive=worker)
        return Job.objects.get(pk=job.pk)

    app.conf.task_always_eager = False  # the real broker and a real worker
    try:
        with celery_worker(queues="default", concurrency=2, env={"FINEGRAIN_SEGMENT_PROCESSES": "0"},
                           script=HOLDING_WORKER) as worker:
            wait_until(lambda: " ready." in worker_log(worker), timeout=60, what="the worker", alive=worker)
            alone = imported("alone.jsonl", projects[0])
            held.touch()
            app.send_task("tests.hold", args=[str(held)], queue="default")
            wait_until(lambda: "tests.hold[" in worker_log(worker), timeout=30, what="the holding task",
                       alive=worker)
            time.sleep(0.5)  # received by the worker, then started by a pool process
            beside = imported("beside.jsonl", projects[1])
            held.unlink()
            wait_until(lambda: re.search(r"tests\.hold\[[^\]]+\] succeeded", worker_log(worker)), timeout=30,
                       what="the holding task's end", alive=worker)
            log = worker_log(worker)
    finally:
        held.unlink(missing_ok=True)
        app.conf.task_always_eager = True
        purge_queues("default")
    cores = os.cpu_count() or 1
    assert (alone.status, beside.status) == (Job.Status.DONE, Job.Status.DONE), (alone.error, beside.error)
    assert alone.result["split_processes"] == cores, log[-3000:]
    assert beside.result["split_processes"] == max(1, cores // 2), log[-3000:]
    assert alone.result["documents_created"] == 2 and beside.result["documents_created"] == 2
