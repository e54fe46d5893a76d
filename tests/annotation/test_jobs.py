"""Long work never runs inside a request. Every page that starts some (an upload, building HITs, an AI run, an export,
publishing) answers once the job's row is written and its task queued for after the commit: nothing of the work
exists yet. The task does it, and the one job fragment follows the row and stops polling (286) once it is finished.

The queued callbacks are captured and not run while the request is served; running them afterwards is what a worker
does (tests run Celery tasks in-process). tests/deploy/test_embedded_broker.py does the same with a real worker."""

from pathlib import Path

import pytest
from django.urls import reverse

from annotation.models import CrowdBatch, Hit
from annotation.services.hits import build_hits
from assist.models import ContextualMapping
from corpus.models import Job
from exports.runs import export_directory

from ..work import SMALL_JSONL, import_small


def upload(client, project, path: Path = SMALL_JSONL):
    with path.open("rb") as file:
        return client.post(reverse("import_upload", args=[project.slug]), {"file": file})


def with_hits(project):
    import_small(project)
    build_hits(project, "fv")


ENTRY_POINTS = {
    # kind: (setup, the page's request, how much of the work exists)
    "import": (lambda project: None, upload, lambda project, job: project.documents.count()),
    "hits_build": (import_small,
                          lambda client, project: client.post(reverse("hits_build", args=[project.slug]),
                                                              {"task": "all"}),
                          lambda project, job: Hit.objects.filter(project=project).count()),
    "assist": (import_small, lambda client, project: client.post(reverse("assist_start", args=[project.slug])),
                      lambda project, job: ContextualMapping.objects.filter(
                          summary_sentence__summary__document__project=project).count()),
    "export": (import_small,
                      lambda client, project: client.post(reverse("exports_create", args=[project.slug]),
                                                          {"format": "jsonl"}),
                      lambda project, job: len(list(export_directory(job).glob("*"))) if export_directory(
                          job).exists() else 0),
    "crowd_publish": (with_hits,
                       lambda client, project: client.post(reverse("crowd_publish", args=[project.slug]),
                                                           {"task": "fv", "provider": "link", "confirm": "yes"}),
                       lambda project, job: CrowdBatch.objects.filter(project=project).count()),
}


def fragment(client, job):
    return client.get(reverse("job_status", args=[job.project.slug, job.pk]), HTTP_HX_REQUEST="true")


@pytest.mark.parametrize("kind", list(ENTRY_POINTS))
def test_the_request_only_queues_the_work_and_the_task_does_it(kind, client, project, manager, settings, tmp_path,
                                                              django_capture_on_commit_callbacks):
    settings.MEDIA_ROOT = tmp_path
    setup, start, work_done = ENTRY_POINTS[kind]
    setup(project)
    client.force_login(manager)

    with django_capture_on_commit_callbacks(execute=False) as queued:
        response = start(client, project)

    assert response.status_code == 302
    job = Job.objects.get(project=project, kind=kind)
    assert job.status == Job.Status.QUEUED and job.started is None
    assert work_done(project, job) == 0
    polling = fragment(client, job)
    assert polling.status_code == 200 and 'hx-get="/projects/alpha/jobs/' in polling.content.decode()
    assert len(queued) == 1  # the job's task, sent once the row is committed

    queued[0]()  # what a worker does

    job.refresh_from_db()
    assert job.status == Job.Status.DONE, job.error
    assert job.progress == job.total > 0 and job.started <= job.finished
    assert work_done(project, job) > 0
    finished = fragment(client, job)
    assert finished.status_code == 286 and "hx-get" not in finished.content.decode()
    assert "Done" in finished.content.decode()


def test_the_job_page_is_for_the_projects_managers_only(client, project, manager, annotator, outsider,
                                                       django_capture_on_commit_callbacks):
    client.force_login(manager)
    with django_capture_on_commit_callbacks(execute=True):
        job_page = upload(client, project).url
    page = client.get(job_page)
    assert page.status_code == 200 and "Imported 4 rows: 2 new documents" in page.content.decode()
    imports = client.get(reverse("import_upload", args=["alpha"])).content.decode()
    assert imports.count("<h1>Import a dataset</h1>") == 1 and "Recent imports" in imports and 'id="job-' in imports
    for user, status in ((annotator, 403), (outsider, 404)):
        client.force_login(user)
        assert client.get(job_page).status_code == status
        assert client.get(job_page, HTTP_HX_REQUEST="true").status_code == status
    client.logout()
    assert client.get(job_page).status_code == 302


def test_an_upload_full_of_problems_lists_the_first_thousand_keeps_nothing_and_drops_the_file(
        client, project, manager, settings, tmp_path, django_capture_on_commit_callbacks):
    settings.MEDIA_ROOT = tmp_path / "media"
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{}\n" * 200, encoding="utf-8")  # 8 missing fields on each of 200 lines
    client.force_login(manager)
    with django_capture_on_commit_callbacks(execute=False) as queued:
        upload(client, project, bad)
    job = Job.objects.get()
    stored = Path(job.input_file.path)
    assert stored.read_bytes() == bad.read_bytes()  # kept for the worker
    queued[0]()
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and job.error == "Nothing was imported: 1600 problems."
    assert job.result["problem_count"] == 1600 and len(job.result["problems"]) == 1000
    assert job.result["problems"][0] == {"line": 1, "field": "doc_id", "message": "missing required field"}
    assert not project.documents.exists()
    assert not stored.exists() and not job.input_file
    html = fragment(client, job).content.decode()
    assert "The first 1000 of 1600 problems" in html and html.count("missing required field") == 1000


def test_a_second_export_or_ai_run_waits_for_the_open_one(client, project, manager, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    import_small(project)
    client.force_login(manager)
    for _ in range(2):  # the first job's task is never run here: it stays queued
        client.post(reverse("exports_create", args=["alpha"]), {"format": "jsonl"})
        client.post(reverse("assist_start", args=["alpha"]))
    assert Job.objects.filter(kind="export").count() == 1
    assert Job.objects.filter(kind="assist").count() == 1
    page = client.get(reverse("project_detail", args=["alpha"]))
    assert "An assist run is already in progress." in page.content.decode()


def test_a_task_that_breaks_fails_its_row_and_the_fragment_stops(client, project, manager, monkeypatch,
                                                                django_capture_on_commit_callbacks):
    import_small(project)

    def broken(project, task):
        raise RuntimeError("<b>the build broke</b>")

    monkeypatch.setattr("annotation.services.hits.build_hits", broken)
    client.force_login(manager)
    with pytest.raises(RuntimeError), django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("hits_build", args=["alpha"]), {"task": "fv"})  # raised again so that Celery logs it
    job = Job.objects.get()
    assert job.status == Job.Status.FAILED and job.error.startswith("It stopped on an unexpected error")
    response = fragment(client, job)
    assert response.status_code == 286
    assert "It stopped on an unexpected error" in response.content.decode()
    assert "RuntimeError" not in response.content.decode() and "the build broke" not in response.content.decode()
