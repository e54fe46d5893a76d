"""Error messages speak the user's words: no Python class names or reprs, no environment variable names, no codes."""

import json

import pytest
from django.urls import reverse

from annotation.crowd.publishing import plan_publish
from corpus.importing import DatasetError, import_dataset
from corpus.models import Job
from tests.work import annotator_for, work_through

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("numbers_worker")]


def test_a_job_that_breaks_unexpectedly_says_so_in_words_and_keeps_python_for_the_log(project):
    job = Job.objects.create(project=project, kind="export")

    def broken(job):
        {}["uid"]

    with pytest.raises(KeyError):
        job.run(broken)
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED
    assert job.error == ("It stopped on an unexpected error, kept in the worker's log for the site's operators. "
                         "Start it again; what it finished is not done twice.")


def test_an_expected_error_reads_as_its_message_without_the_class_name(project):
    job = Job.objects.create(project=project, kind="export")

    def full(job):
        raise ValueError("The export folder is full.")

    job.run(full, expected=(ValueError,))
    job.refresh_from_db()
    assert job.error == "The export folder is full."


def test_import_errors_quote_values_as_written_never_as_python_reprs(project):
    row = {"uid": "O'Neil-1", "doc_id": "O'Neil-1", "source": "S", "domain": "news", "input_type": "non-dialogue",
           "model": "m", "document": "One sentence here.", "summary": "One sentence."}
    data = "\n".join(json.dumps(r) for r in (row, row)).encode()
    with pytest.raises(DatasetError) as refused:
        import_dataset(project=project, data=data, filename="rows.jsonl")
    assert [str(error) for error in refused.value.errors] == [
        "line 2, field 'model': duplicate row: uid 'O'Neil-1' and model 'm' already appear on line 1"]
    with pytest.raises(DatasetError) as refused:
        import_dataset(project=project, data=data, filename="Anna's rows.txt")
    assert "cannot tell the format of 'Anna's rows.txt'" in str(refused.value.errors[0])


def test_building_hits_for_an_unknown_task_names_the_tasks_in_words(client, project, manager):
    client.force_login(manager)
    # A hyphen never occurs in a CSRF token, so the posted value cannot turn up on the page by chance.
    html = client.post(reverse("hits_build", args=[project.slug]), {"task": "no-such-task"}).content.decode()
    assert "fact verification, key-fact validation or key-fact alignment, or all three" in html
    assert "fv, kv" not in html and "no-such-task" not in html


def test_publishing_on_an_unconfigured_prolific_names_no_environment_variable(settings, project):
    settings.FINEGRAIN_PROLIFIC_TOKEN = settings.FINEGRAIN_PROLIFIC_WORKSPACE_ID = ""
    problems = plan_publish(project=project, task="fv", provider="prolific").problems
    assert "This site has no Prolific account yet" in " ".join(problems)
    assert not any("FINEGRAIN_" in problem or "_ID" in problem for problem in problems)


def test_the_managers_pages_name_error_types_in_words(client, corpus, manager, annotator, other_annotator):
    first = work_through(annotator_for(annotator), corpus, "fv", yes=True)
    work_through(annotator_for(other_annotator), corpus, "fv", yes=False)  # every sentence: an entity error
    client.force_login(manager)
    hit = client.get(reverse("hit_detail", args=[corpus.slug, first.hit.public_id])).content.decode()
    assert "error: entity error" in hit and "error: entity<" not in hit
    review = client.get(reverse("review", args=[corpus.slug])).content.decode()
    assert "<td>entity error</td>" in review and "<td>entity</td>" not in review


def test_the_ai_assistance_card_names_its_backend_in_words(project, client, manager):
    client.force_login(manager)
    page = client.get(reverse("project_detail", args=[project.slug])).content.decode()
    assert "Backend: <strong>Offline labeler</strong>" in page and "offline-similarity" not in page


@pytest.mark.parametrize("stored, shown", [
    ("TransientError: HTTP 503 from the model: busy", "the model could not be reached: HTTP 503 from the model: busy"),
    ("fact_check: ParseError: Expected 3 judgements, got 1",
     "fact_check: the model's answer could not be read: Expected 3 judgements, got 1"),
    ("d-17: RuntimeError: 'uid'", "d-17: an unexpected error, kept in the worker's log for the site's operators"),
    ("KeyError: 'uid'", "an unexpected error, kept in the worker's log for the site's operators"),
    ("The model said no.", "The model said no."),
])
def test_a_stored_error_reads_in_words_on_a_page(stored, shown):
    from annotation.templatetags.words import error_words

    assert error_words(stored) == shown


def test_a_failed_pre_label_reads_in_words_on_the_document_page(corpus, client, manager):
    from assist.models import PreLabel
    from corpus.models import SummarySentence

    sentence = SummarySentence.objects.filter(summary__document__project=corpus).first()
    PreLabel.objects.update_or_create(summary_sentence=sentence, defaults=dict(
        status=PreLabel.Status.FAILED, error="RuntimeError: CUDA out of memory", reason="", backend="openai"))
    client.force_login(manager)
    page = client.get(reverse("document_detail", args=[corpus.slug, sentence.summary.document_id])).content.decode()
    assert "an unexpected error, kept in the worker&#x27;s log" in page and "RuntimeError" not in page
