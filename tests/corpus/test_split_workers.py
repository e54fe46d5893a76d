"""corpus.segmentation.Splitter: texts offered while a file is read are split once, in worker processes, and give
the sentences the splitter gives in this process; what is left queued when the import stops is dropped."""

import multiprocessing
import sys

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


def test_the_switch_interval_is_short_while_the_workers_split_and_restored_after(parallel):
    before = sys.getswitchinterval()
    with Splitter(2, 10_000) as splitter:
        assert sys.getswitchinterval() == segmentation.HANDOVER_SWITCH_INTERVAL < before
        splitter.offer(SUMMARY, "One. Two.")
    assert sys.getswitchinterval() == before
    with pytest.raises(RuntimeError), Splitter(2, 10_000):
        raise RuntimeError("the file had errors")
    assert sys.getswitchinterval() == before
    with Splitter(1, 10_000):
        assert sys.getswitchinterval() == before


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
