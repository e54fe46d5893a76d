"""Import under concurrency, on the real PostgreSQL (CI)."""

import threading
from pathlib import Path

import pytest
from django.db import connection

from corpus.importing import DatasetError, import_dataset
from corpus.models import Document, Project, Summary, SummarySentence

SMALL_JSONL = Path(__file__).resolve().parents[1] / "fixtures" / "import" / "small.jsonl"


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_concurrent_imports_of_one_file_write_it_once():
    Project.objects.create(slug="race", name="Race")
    data = SMALL_JSONL.read_bytes()
    barrier = threading.Barrier(4)
    outcomes: list[str] = []

    def run():
        try:
            barrier.wait()
            project = Project.objects.get(slug="race")
            result = import_dataset(project=project, data=data, filename="small.jsonl")
            outcomes.append("created" if result.changed else "unchanged")
        except DatasetError as exc:
            outcomes.append(str(exc))
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert outcomes.count("created") == 1, outcomes
    assert all(o in ("created", "unchanged") or "another import wrote" in o for o in outcomes), outcomes
    assert Document.objects.count() == 2
    assert Summary.objects.count() == 4
    assert SummarySentence.objects.count() == 6
