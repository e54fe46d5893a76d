"""The analytics figures are a job's work, never a request's, and never shown once the labels they came from changed.

These tests run without the stand-in worker (tests/conftest.py, `numbers_worker`): a page view starts nothing, the
button queues the job (its task is captured on commit and run afterwards, as a worker would), and every change to
what the figures read hides them and makes the CSVs answer 409 until the job has run on the new labels."""

import csv
import io

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.models import Adjudication, Assignment, Grade
from corpus.models import Job, Snapshot
from corpus.snapshots import fingerprint_of
from exports.csv_files import write_rows
from exports.figures import KIND, figures_basis, figures_compute, table_from
from exports.tables import TABLES, table_columns
from tests.conftest import numbers_now

from .labels import annotate

pytestmark = pytest.mark.queued_numbers

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


def ask(client, project, **fields):
    """The page's button."""
    return client.post(reverse("numbers_update", args=[project.slug, KIND]), fields)


def compute(client, project, capture) -> Job:
    """The button queues the job; running what it queued is what a worker does."""
    with capture(execute=False) as queued:
        ask(client, project)
    for callback in queued:
        callback()
    job = Job.objects.filter(project=project, kind=KIND).latest("pk")
    assert job.status == Job.Status.DONE, job.error
    return job


def test_a_view_starts_nothing_and_offers_the_button(manager_client, labelled, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as queued:
        response = page(manager_client, labelled)
        csv_response = agreement_csv(manager_client, labelled)
    html = response.content.decode()
    assert response.status_code == 200 and not queued
    assert not Job.objects.filter(kind=KIND).exists() and not Snapshot.objects.exists()
    assert "Not computed yet" in html and PAGE_NUMBER not in html and "hx-get" not in html
    assert f'action="{reverse("numbers_update", args=[labelled.slug, KIND])}"' in html
    assert csv_response.status_code == 409 and "never computed" in csv_response.content.decode()


def test_the_button_queues_one_job_and_the_page_follows_it(manager_client, labelled,
                                                          django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as queued:
        first = ask(manager_client, labelled)
        ask(manager_client, labelled)  # a second click follows the same job
        html = page(manager_client, labelled).content.decode()
        csv_response = agreement_csv(manager_client, labelled)
        fragment = manager_client.get(reverse("numbers_status", args=[labelled.slug, KIND]), HTTP_HX_REQUEST="true")
    assert first.status_code == 302 and first["Location"] == reverse("exports_analytics", args=[labelled.slug])
    job = Job.objects.get(project=labelled, kind=KIND)
    assert job.status == Job.Status.QUEUED and job.started is None and len(queued) == 1
    assert "Computing the analytics figures" in html and PAGE_NUMBER not in html
    assert f'hx-get="/projects/alpha/numbers/{KIND}/?variant=&amp;shown="' in html
    assert fragment.status_code == 200 and "every 2s" in fragment.content.decode()
    assert csv_response.status_code == 503 and csv_response["Retry-After"]
    assert CSV_ALPHA not in csv_response.content.decode()

    queued[0]()  # what a worker does

    job.refresh_from_db()
    assert job.status == Job.Status.DONE, job.error
    status = manager_client.get(reverse("numbers_status", args=[labelled.slug, KIND]), HTTP_HX_REQUEST="true")
    assert status["HX-Refresh"] == "true"
    assert PAGE_NUMBER in page(manager_client, labelled).content.decode()
    assert CSV_ALPHA in agreement_csv(manager_client, labelled).content.decode()


def test_the_simulated_variant_is_kept_beside_the_real_one(manager_client, labelled,
                                                          django_capture_on_commit_callbacks):
    numbers_now(labelled, KIND)
    with django_capture_on_commit_callbacks(execute=False) as queued:
        html = page(manager_client, labelled, simulated="1").content.decode()
        ask(manager_client, labelled, variant="simulated", next="https://elsewhere.example/")
    assert "Not computed yet" in html and len(queued) == 1
    assert Job.objects.get(kind=KIND, params__variant="simulated").status == Job.Status.QUEUED
    assert PAGE_NUMBER in page(manager_client, labelled).content.decode()  # the real labels' figures stay current
    assert manager_client.post(reverse("numbers_update", args=[labelled.slug, KIND]),
                               {"variant": "nope"}).status_code == 404


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
    return Snapshot.objects.get(project=project, kind=KIND).fingerprint == fingerprint_of(figures_basis(project))


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
    assert "The data changed after the last computation of the analytics figures" in html
    assert PAGE_NUMBER not in html and not queued
    assert stale_csv.status_code == 409 and stale_csv.content.decode() != before
    compute(manager_client, labelled, django_capture_on_commit_callbacks)

    after = agreement_csv(manager_client, labelled)
    assert after.status_code == 200
    expected = io.StringIO()
    # From the labels as they are now, computed here.
    write_rows(expected, table_from(figures_compute(labelled, include_simulated=False), "agreement"),
               table_columns("agreement"))
    assert after.content.decode() == expected.getvalue()
    assert "from the labels as they are now" in page(manager_client, labelled).content.decode()


def rows_of(response) -> list[dict]:
    return list(csv.DictReader(io.StringIO(response.content.decode())))


def test_the_job_gives_the_hand_computed_numbers(manager_client, labelled):
    """Three annotators on four sentences: a and b say error, no error, error, no error; c says error, no error, no
    error, error. Krippendorff's alpha over all labels is 7/18 (test_report works it out), over the first two 1; the
    majority finds errors in sentences 1 and 3, so half of the summary's sentences are faithful; every table a CSV
    offers is there."""
    numbers_now(labelled, KIND)
    overall = next(row for row in rows_of(agreement_csv(manager_client, labelled))
                   if (row["task"], row["breakdown"]) == ("fv", "overall"))
    # The headline reads each unit's first two labels, a's and b's, which are the same: alpha 1.
    assert (overall["primary_value"], overall["all_labels_primary_value"]) == ("1.0", CSV_ALPHA)
    scores = rows_of(manager_client.get(reverse("exports_table_csv", args=[labelled.slug, "summarizers"])))
    assert [(row["summarizer"], row["faithfulness"]) for row in scores] == [("m", "50.0")]  # in percent
    for table in TABLES:
        response = manager_client.get(reverse("exports_table_csv", args=[labelled.slug, table]))
        assert response.status_code == 200, table
    assert manager_client.get(reverse("exports_table_csv", args=[labelled.slug, "nope"])).status_code == 404
    figures = Snapshot.objects.get(kind=KIND).data
    assert table_from(figures, "evaluator-nobody") == [] and table_from(figures, "nope") is None


def test_a_failed_computation_shows_its_error_and_is_retried_only_when_asked(
        manager_client, labelled, monkeypatch, django_capture_on_commit_callbacks):
    def broken(project, *, include_simulated):
        raise ValueError("no memory left")

    monkeypatch.setattr("exports.figures.figures_compute", broken)
    with django_capture_on_commit_callbacks(execute=False) as queued:
        ask(manager_client, labelled)
    with pytest.raises(ValueError):
        queued[0]()
    with django_capture_on_commit_callbacks(execute=False) as queued:
        html = page(manager_client, labelled).content.decode()
        csv_response = agreement_csv(manager_client, labelled)
    # The error in words; Python's text stays in the worker's log.
    assert "It stopped on an unexpected error" in html and "Compute again" in html and not queued
    assert "no memory left" not in html
    assert csv_response.status_code == 409 and "failed" in csv_response.content.decode()

    monkeypatch.undo()
    with django_capture_on_commit_callbacks(execute=True):
        response = ask(manager_client, labelled)
    assert response.status_code == 302
    assert PAGE_NUMBER in page(manager_client, labelled).content.decode()
    assert Job.objects.filter(kind=KIND).count() == 2


@pytest.mark.parametrize("name,method", [("numbers_status", "get"), ("numbers_update", "post")])
def test_only_managers_follow_or_start_the_computation(client, labelled, annotator, outsider, name, method):
    url = reverse(name, args=[labelled.slug, KIND])
    assert getattr(client, method)(url).status_code == 302  # anonymous: to the log-in page
    client.force_login(annotator)
    assert getattr(client, method)(url).status_code == 403
    client.force_login(outsider)
    assert getattr(client, method)(url).status_code == 404
    assert not Job.objects.filter(kind=KIND).exists()
