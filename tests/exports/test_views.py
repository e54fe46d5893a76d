"""The analytics pages: managers of the project only; each chart with its table and CSV; the export job."""

import csv
import io

import pytest
from django.urls import reverse

from corpus.models import Job

pytestmark = pytest.mark.usefixtures("numbers_worker")


def login(client, user):
    client.force_login(user)
    return client


URLS = [
    ("exports_analytics", {}),
    ("exports_table_csv", {"table": "agreement"}),
    ("exports_table_csv", {"table": "scores"}),
]


@pytest.mark.parametrize("name,kwargs", URLS)
def test_it_refuses_everyone_but_the_projects_managers(client, labelled, annotator, outsider, name, kwargs):
    url = reverse(name, kwargs={"slug": labelled.slug, **kwargs})
    assert client.get(url).status_code == 302  # anonymous: to the log-in page
    assert login(client, annotator).get(url).status_code == 403
    assert login(client, outsider).get(url).status_code == 404


def test_it_shows_agreement_scores_and_charts(client, labelled, manager):
    response = login(client, manager).get(reverse("exports_analytics", args=[labelled.slug]))
    assert response.status_code == 200
    html = response.content.decode()
    # The headline on the first two labels (a and b agree: 1), all labels beside it (7/18), the paper's value
    # beside the headline; see test_report.
    assert 'Krippendorff&#x27;s alpha <span class="headline">1.000</span>' in html
    assert "(paper: 0.60; all counted labels: 0.389)" in html
    assert "first two labels of each unit: comparable with fixed designs and with the paper" in html
    assert html.count("<svg") >= 3
    assert "style=" not in html  # the CSP allows no inline styles
    assert "<script>" not in html


def test_the_csv_is_the_table(client, labelled, manager):
    response = login(client, manager).get(reverse("exports_table_csv", args=[labelled.slug, "agreement"]))
    assert response["Content-Type"].startswith("text/csv")
    # Text cells are quoted (exports.csv_files); the cells are the table's.
    lines = list(csv.reader(io.StringIO(response.content.decode())))
    assert lines[0][:5] == ["task", "breakdown", "group", "n_units", "n_ratings"]
    # The headline on each unit's first two labels (a and b agree), then all labels (7/18); see test_report.
    assert lines[1][:7] == ["fv", "overall", "all", "4", "8", "krippendorff_alpha", "1.0"]
    row = dict(zip(lines[0], lines[1]))
    assert row["labels"] == "first two counted labels of each unit"
    assert (row["all_labels_n_ratings"], row["all_labels_primary_value"]) == ("12", "0.3889")


def test_an_unknown_table_is_404(client, labelled, manager):
    assert login(client, manager).get(reverse("exports_table_csv", args=[labelled.slug, "nope"])).status_code == 404


def test_a_manager_runs_an_export_and_downloads_it(client, labelled, manager, settings, tmp_path,
                                                   django_capture_on_commit_callbacks):
    settings.MEDIA_ROOT = tmp_path
    client = login(client, manager)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("exports_create", args=[labelled.slug]),
                               {"format": "jsonl", "annotator_labels": "1", "card": "1", "checks": "1"})
    assert response.status_code == 302
    job = Job.objects.get(project=labelled, kind="export")
    assert job.status == Job.Status.DONE, job.error
    assert job.progress == job.total == 1
    status = client.get(reverse("job_status", args=[labelled.slug, job.pk]), HTTP_HX_REQUEST="true")
    assert status.status_code == 286  # htmx stops polling a finished job
    assert "alpha.jsonl" in status.content.decode()
    download = client.get(reverse("exports_download", args=[labelled.slug, job.pk, "alpha.jsonl"]))
    assert download.status_code == 200
    assert b'"faithfulness_score"' in b"".join(download.streaming_content)
    assert client.get(reverse("exports_download", args=[labelled.slug, job.pk, "settings.py"])).status_code == 404


def test_only_managers_start_or_download_exports(client, labelled, manager, annotator, outsider, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    login(client, manager).post(reverse("exports_create", args=[labelled.slug]), {"format": "jsonl"})
    job = Job.objects.get(project=labelled, kind="export")
    for user, status in ((annotator, 403), (outsider, 404)):
        client = login(client, user)
        assert client.post(reverse("exports_create", args=[labelled.slug]), {}).status_code == status
        assert client.get(reverse("job_status", args=[labelled.slug, job.pk])).status_code == status
        assert client.get(reverse("exports_download", args=[labelled.slug, job.pk, "alpha.jsonl"])).status_code \
            == status
    assert Job.objects.filter(project=labelled, kind="export").count() == 1


def test_a_manager_imports_evaluator_scores_from_the_page(client, labelled, manager):
    from django.core.files.uploadedfile import SimpleUploadedFile

    data = b"uid,model,faithfulness\ndoc-news,m,0.5\n"
    response = login(client, manager).post(reverse("exports_evaluator_upload", args=[labelled.slug]),
                                           {"evaluator": "g-eval", "file": SimpleUploadedFile("s.csv", data)})
    assert response.status_code == 302
    page = client.get(reverse("exports_analytics", args=[labelled.slug])).content.decode()
    assert "g-eval" in page and "fewer than 3 points" in page


def test_a_failed_export_is_recorded_on_the_job(labelled, manager, settings, tmp_path, monkeypatch):
    from exports import runs
    from exports.export import ExportOptions

    settings.MEDIA_ROOT = tmp_path

    def broken(**kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(runs, "export_benchmark", broken)
    job = runs.export_start(project=labelled, options=ExportOptions(), user=manager)
    runs.export_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and "disk full" in job.error
