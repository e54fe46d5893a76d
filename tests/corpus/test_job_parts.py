"""A job split into one task per document counts each document once: a broker delivers a message at least once, and
a task redelivered while its first run is still going runs twice. Counting runs instead of documents ended a run
before its last document had been processed (seen with workers killed mid-task)."""

import pytest

from assist.runs import empty_result, job_run_document
from corpus.models import Job

from ..work import import_generated

pytestmark = pytest.mark.django_db


def test_a_document_done_twice_counts_once_and_the_last_document_ends_the_job(project):
    job = Job.objects.create(kind="assist", project=project, status=Job.Status.RUNNING, total=2, result={})
    Job.part_done(job.pk, 11, "a done")
    Job.part_done(job.pk, 11, "a done again")
    job.refresh_from_db()
    assert (job.progress, job.status, job.message) == (1, Job.Status.RUNNING, "a done again")
    Job.part_done(job.pk, 12, "b done")
    job.refresh_from_db()
    assert (job.progress, job.status) == (2, Job.Status.DONE)
    assert sorted(job.result["documents_done"]) == [11, 12]


def test_an_assist_task_run_twice_leaves_the_run_open_for_its_other_documents(project):
    import_generated(project, documents=2, summarizers=1, sentences=2)
    first, second = project.documents.values_list("pk", flat=True)
    job = Job.objects.create(kind="assist", project=project, status=Job.Status.RUNNING, total=2,
                             params={"steps": []}, result=empty_result())
    job_run_document(job.pk, first)
    job_run_document(job.pk, first)  # the same message, delivered again
    job.refresh_from_db()
    assert (job.progress, job.is_finished) == (1, False)
    job_run_document(job.pk, second)
    job.refresh_from_db()
    assert (job.progress, job.status) == (2, Job.Status.DONE)
