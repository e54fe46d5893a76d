"""The analytics figures are a job's work, never a request's, and never shown once the labels they came from changed.

These tests run without the stand-in worker of tests/exports/conftest.py: a request only queues the job (its task is
captured on commit and run afterwards, as a worker would), and every change to what the figures read puts the page
back to "computing" and makes the CSVs answer 503 until the job has run on the new labels."""

import io

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.models import Adjudication, Assignment, Grade
from corpus.models import Job
from exports.csv_files import write_rows
from exports.figures import KIND, figures_compute, labels_fingerprint, table_from
from exports.models import AnalyticsFigures
from exports.selectors import label_source
from exports.tables import TABLES, table_rows

from .labels import annotate

pytestmark = pytest.mark.queued_analytics

PAGE_NUMBER = "0.389"  # fv alpha of `labelled` over all its labels, beside the headline: 7/18, see test_report
CSV_ALPHA = "0.3889"


@pytest.fixture
def manager_client(client, manager):
    client.force_login(manager)
    return client


def page(client, project, **query):
    return client.get(reverse("exports_analytics", args=[project.slug]), query)


def agreement_csv(client, project):
    return client.get(reverse("exports_table_csv", args=[project.slug, "agreement"]))


def compute(client, project, capture) -> Job:
    """A page view queues the job; running what it queued is what a worker does."""
    with capture(execute=False) as queued:
        page(client, project)
    for callback in queued:
        callback()
    job = Job.objects.filter(project=project, kind=KIND).latest("pk")
    assert job.status == Job.Status.DONE, job.error
    return job


def test_the_first_view_only_queues_the_computation_and_says_so(manager_client, labelled,
                                                                 django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as queued:
        response = page(manager_client, labelled)
        csv_response = agreement_csv(manager_client, labelled)

    html = response.content.decode()
    assert response.status_code == 200
    assert "Computing the analytics" in html and PAGE_NUMBER not in html
    assert 'hx-get="/projects/alpha/analytics/status/"' in html
    job = Job.objects.get(project=labelled, kind=KIND)  # the page and the CSV share one job
    assert job.status == Job.Status.QUEUED and job.started is None
    assert not AnalyticsFigures.objects.exists()  # nothing computed in the request
    assert csv_response.status_code == 503 and csv_response["Retry-After"]
    assert CSV_ALPHA not in csv_response.content.decode()
    assert len(queued) == 1

    queued[0]()  # what a worker does

    job.refresh_from_db()
    assert job.status == Job.Status.DONE, job.error
    status = manager_client.get(reverse("exports_analytics_status", args=[labelled.slug]), HTTP_HX_REQUEST="true")
    assert status["HX-Refresh"] == "true"
    assert PAGE_NUMBER in page(manager_client, labelled).content.decode()
    assert CSV_ALPHA in agreement_csv(manager_client, labelled).content.decode()


def test_while_the_job_waits_the_status_fragment_keeps_polling(manager_client, labelled,
                                                               django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        page(manager_client, labelled)
        fragment = manager_client.get(reverse("exports_analytics_status", args=[labelled.slug]),
                                      HTTP_HX_REQUEST="true")
    assert fragment.status_code == 200 and "every 2s" in fragment.content.decode()
    assert Job.objects.filter(project=labelled, kind=KIND).count() == 1


def submit_new_answers(project):
    """Answers are saved on an open reservation (annotation.services.answers) and count once it is submitted."""
    hit = project.hits.get()
    assignment = annotate(hit, list(hit.units.order_by("position")), [False, True, True, True], name="d")
    assignment.status, assignment.submitted_at = Assignment.Status.RESERVED, None
    assignment.save()
    assert fingerprint_unchanged(project)  # answers that do not count yet change no figure
    assignment.status, assignment.submitted_at = Assignment.Status.SUBMITTED, timezone.now()
    assignment.save()


def fingerprint_unchanged(project) -> bool:
    return AnalyticsFigures.objects.get(project=project).fingerprint == labels_fingerprint(project)


def add_an_annotator(project):
    hit = project.hits.get()
    annotate(hit, list(hit.units.order_by("position")), [False, False, False, False], name="d")


def fail_a_submission(project):
    Grade.objects.create(assignment=Assignment.objects.filter(hit__project=project).order_by("pk").first(),
                         passed=False, checks_total=1, checks_failed=1)


def override_a_grade(project):
    grade = Grade.objects.create(assignment=Assignment.objects.filter(hit__project=project).order_by("pk").first(),
                                 passed=True, checks_total=1)
    grade.override_passed, grade.overridden_at = False, timezone.now()
    grade.save()


def discard_a_submission(project):
    assignment = Assignment.objects.filter(hit__project=project).order_by("pk").first()
    assignment.status = Assignment.Status.DISCARDED
    assignment.save()


def delete_a_submission(project):
    Assignment.objects.filter(hit__project=project).order_by("pk").first().delete()


def adjudicate(project):
    project.adjudication_in_aggregation = True
    project.save()
    unit = project.hits.get().units.order_by("position").first()
    Adjudication.objects.create(unit=unit, has_error=False, reason="The sentence says what the text says.")


CHANGES = [submit_new_answers, add_an_annotator, fail_a_submission, override_a_grade, discard_a_submission,
           delete_a_submission, adjudicate]


@pytest.mark.parametrize("change", CHANGES, ids=[change.__name__ for change in CHANGES])
def test_figures_of_older_labels_are_never_shown(manager_client, labelled, change,
                                                 django_capture_on_commit_callbacks):
    compute(manager_client, labelled, django_capture_on_commit_callbacks)
    before = agreement_csv(manager_client, labelled).content.decode()
    assert CSV_ALPHA in before

    change(labelled)

    with django_capture_on_commit_callbacks(execute=False) as queued:
        html = page(manager_client, labelled).content.decode()
        stale_csv = agreement_csv(manager_client, labelled)
    assert "Computing the analytics" in html and PAGE_NUMBER not in html
    assert stale_csv.status_code == 503 and stale_csv.content.decode() != before
    assert len(queued) == 1
    queued[0]()

    after = agreement_csv(manager_client, labelled)
    assert after.status_code == 200
    expected = io.StringIO()
    write_rows(expected, table_rows(labelled, label_source(labelled), "agreement"))  # from the labels as they are now
    assert after.content.decode() == expected.getvalue()
    assert "Computing the analytics" not in page(manager_client, labelled).content.decode()


def test_the_job_computes_what_the_direct_computation_gives(labelled):
    source = label_source(labelled)
    figures = figures_compute(labelled, include_simulated=False)
    assert figures["source"] == source
    for table in TABLES:
        assert table_from(figures, table) == table_rows(labelled, source, table), table
    for dimension in ("faithfulness", "completeness", "conciseness", "composite"):
        assert table_from(figures, "scores", dimension) == table_rows(labelled, source, "scores", dimension)
    assert table_from(figures, "evaluator-nobody") == table_rows(labelled, source, "evaluator-nobody") == []
    assert table_from(figures, "nope") is None


def test_a_failed_computation_shows_its_error_and_is_not_retried_on_every_view(
        manager_client, labelled, monkeypatch, django_capture_on_commit_callbacks):
    def broken(project, *, include_simulated):
        raise ValueError("no memory left")

    monkeypatch.setattr("exports.figures.figures_compute", broken)
    with django_capture_on_commit_callbacks(execute=False) as queued:
        page(manager_client, labelled)
    with pytest.raises(ValueError):
        queued[0]()
    with django_capture_on_commit_callbacks(execute=False) as queued:
        html = page(manager_client, labelled).content.decode()
    # The error in words; Python's text stays in the worker's log.
    assert "It stopped on an unexpected error" in html and "Compute again" in html and not queued
    assert "no memory left" not in html
    assert agreement_csv(manager_client, labelled).status_code == 503

    monkeypatch.undo()
    with django_capture_on_commit_callbacks(execute=True):
        response = manager_client.post(reverse("exports_analytics_compute", args=[labelled.slug]))
    assert response.status_code == 302
    assert PAGE_NUMBER in page(manager_client, labelled).content.decode()


@pytest.mark.parametrize("name,method", [("exports_analytics_status", "get"), ("exports_analytics_compute", "post")])
def test_only_managers_follow_or_start_the_computation(client, labelled, annotator, outsider, name, method):
    url = reverse(name, args=[labelled.slug])
    assert getattr(client, method)(url).status_code == 302  # anonymous: to the log-in page
    client.force_login(annotator)
    assert getattr(client, method)(url).status_code == 403
    client.force_login(outsider)
    assert getattr(client, method)(url).status_code == 404
    assert not Job.objects.filter(kind=KIND).exists()
