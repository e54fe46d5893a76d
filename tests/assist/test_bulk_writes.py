"""The workers write many rows at once: a document's pre-labels, its generated key-facts with their votes, an
evaluator's scores with their sentence scores and the document embeddings an attention-check build computes take
as many INSERT, UPDATE and DELETE statements for a short document as for a long one."""

import json
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.quality.disguise import DocumentVectors
from assist.evaluators import build_evaluator
from assist.evaluators.runs import evaluate_document
from assist.llm.registry import clear_backends, get_backend
from assist.models import DocumentEmbedding, EvaluatorScore, EvaluatorSentenceScore, KeyFactVote, PreLabel
from assist.pipeline import StepReport, assist_document, generate_document_keyfacts, store_prelabels
from corpus.models import Document, KeyFact, SummarySentence
from tests.work import import_generated

from .conftest import chat_reply

pytestmark = pytest.mark.django_db

WRITE = re.compile(r"^\s*(WITH\b.*?\)\s*)?(INSERT|UPDATE|DELETE)\b", re.S | re.I)


@pytest.fixture(autouse=True)
def fresh_backends():
    clear_backends()
    yield
    clear_backends()


def writes_of(work) -> int:
    """How many INSERT, UPDATE and DELETE statements `work()` sends."""
    with CaptureQueriesContext(connection) as captured:
        work()
    return sum(bool(WRITE.match(query["sql"])) for query in captured.captured_queries)


def one_document(project, *, summarizers: int, sentences: int) -> Document:
    import_generated(project, documents=1, summarizers=summarizers, sentences=sentences)
    return project.documents.get()


@pytest.fixture
def short_and_long(project, other_project):
    """One summary of two sentences; four summaries of nine sentences each."""
    return (one_document(project, summarizers=1, sentences=2), one_document(other_project, summarizers=4, sentences=9))


def test_a_documents_assistance_takes_as_many_writes_for_36_summary_sentences_as_for_2(short_and_long):
    short, long = short_and_long
    counts = [writes_of(lambda document=document: assist_document(document)) for document in (short, long)]
    # Text and document embeddings, the contextual mappings (the stale ones deleted first), the pre-labels.
    assert counts == [6, 6]
    for document, sentences in ((short, 2), (long, 36)):
        labels = PreLabel.objects.filter(summary_sentence__summary__document=document)
        assert labels.count() == sentences and set(labels.values_list("status", flat=True)) == {"ok"}


def test_a_pre_label_stored_again_is_written_over_in_place(project):
    document = one_document(project, summarizers=1, sentences=3)
    sentences = list(SummarySentence.objects.filter(summary__document=document).order_by("index"))

    def results(status, category):
        return [dict(category=category, reason=f"Reason {n}." if category else "", status=status,
                     error="" if status == "ok" else "timed out", raw_response="", latency_ms=5, input_tokens=1,
                     output_tokens=2, attempts=3, model="m") for n in range(3)]

    first = StepReport()
    assert writes_of(lambda: store_prelabels(sentences, "openai", "v1", results("failed", ""), first)) == 1
    before = {row.summary_sentence_id: (row.pk, row.created) for row in PreLabel.objects.all()}
    again = StepReport()
    assert writes_of(lambda: store_prelabels(sentences, "openai", "v1", results("ok", "entity"), again)) == 1
    assert (first.prelabeled, first.prelabel_failures, again.prelabeled, again.prelabel_failures) == (0, 3, 3, 0)
    rows = list(PreLabel.objects.order_by("summary_sentence__index"))
    assert {row.summary_sentence_id: (row.pk, row.created) for row in rows} == before
    assert [(row.status, row.category, row.reason, row.error) for row in rows] == [
        ("ok", "entity", f"Reason {n}.", "") for n in range(3)]
    # Another prompt version is another pre-label beside it.
    store_prelabels(sentences[:1], "openai", "v2", results("ok", "entity")[:1], StepReport())
    assert PreLabel.objects.count() == 4


@pytest.mark.parametrize("candidates", [2, 12])
def test_generated_key_facts_and_their_votes_take_two_writes_whatever_their_number(project, settings, chat_server,
                                                                                  candidates):
    settings.FINEGRAIN_LLM_BACKEND = "openai"
    settings.FINEGRAIN_OPENAI_BASE_URL = chat_server.base_url
    settings.FINEGRAIN_OPENAI_API_KEY = "sk-test"
    settings.FINEGRAIN_OPENAI_MODEL = "served-model"
    settings.FINEGRAIN_LLM_VOTER_BACKENDS = ["openai:voter-a", "openai:voter-b"]
    settings.FINEGRAIN_LLM_MAX_RETRIES = 0

    def answer(request):
        prompt = request.json["messages"][-1]["content"]
        if prompt.startswith("Below are a document and"):  # a voter: no to the second candidate
            return chat_reply(json.dumps([{"candidate": i, "response": "no" if i == 2 else "yes",
                                           "reason": f"Vote {i}."} for i in range(1, candidates + 1)]),
                              model=request.json["model"])
        return chat_reply(json.dumps([f"Fact number {i}." for i in range(1, candidates + 1)]))

    chat_server.responder = answer
    document = one_document(project, summarizers=1, sentences=2)
    document.keyfacts.all().delete()
    source = list(document.sentences.order_by("index").values_list("text", flat=True))
    report = StepReport()
    # Three answers kept in the response cache (generation, two voters), then the key-facts, then their votes.
    assert writes_of(lambda: generate_document_keyfacts(document, get_backend(), report,
                                                        {"source_text": source})) == 3 + 2
    facts = list(KeyFact.objects.filter(document=document).order_by("index"))
    assert [(fact.index, fact.text, fact.status) for fact in facts] == [
        (i, f"Fact number {i + 1}.", "rejected" if i == 1 else "candidate") for i in range(candidates)]
    assert report.keyfacts_generated == candidates
    votes = KeyFactVote.objects.filter(keyfact__document=document)
    assert votes.count() == 2 * candidates
    assert sorted(votes.filter(keyfact=facts[1]).values_list("model", "accept", "reason")) == [
        ("voter-a", False, "Vote 2."), ("voter-b", False, "Vote 2.")]


def test_an_evaluator_run_takes_as_many_writes_for_four_long_summaries_as_for_one_short(short_and_long):
    short, long = short_and_long
    evaluator = build_evaluator("sbertscore")
    counts = [writes_of(lambda document=document: evaluate_document(document, evaluator))
              for document in (short, long)]
    assert counts[0] == counts[1]
    assert EvaluatorScore.objects.filter(summary__document=long, status="ok").count() == 4
    assert EvaluatorSentenceScore.objects.filter(evaluator_score__summary__document=long).count() == 36
    # Written again (as when the sentences changed): the same score rows, their sentence scores replaced, in three
    # statements (the document's embeddings are stored by now).
    before = dict(EvaluatorScore.objects.filter(summary__document=long).values_list("summary_id", "pk"))
    EvaluatorScore.objects.filter(summary__document=long).update(inputs_sha256="stale")
    assert writes_of(lambda: evaluate_document(long, evaluator)) == 3
    assert dict(EvaluatorScore.objects.filter(summary__document=long).values_list("summary_id", "pk")) == before
    assert EvaluatorSentenceScore.objects.filter(evaluator_score__summary__document=long).count() == 36
    assert not EvaluatorScore.objects.filter(inputs_sha256="stale").exists()


def test_an_attention_check_builds_document_embeddings_take_one_write_for_one_document_as_for_five(project,
                                                                                                  other_project):
    import_generated(project, documents=1, summarizers=1, sentences=2)
    import_generated(other_project, documents=5, summarizers=1, sentences=2)
    counts = [writes_of(lambda place=place: DocumentVectors().prefetch_documents(list(place.documents.all())))
              for place in (project, other_project)]
    assert counts == [1, 1]
    assert DocumentEmbedding.objects.count() == 6
    # A document whose sentences changed has its stale embedding written over.
    stale = other_project.documents.first()
    DocumentEmbedding.objects.filter(document=stale).update(sentences_sha256="stale")
    vectors = DocumentVectors()
    assert writes_of(lambda: vectors.prefetch_documents(list(other_project.documents.all()))) == 1
    assert DocumentEmbedding.objects.count() == 6
    assert DocumentEmbedding.objects.get(document=stale).sentences_sha256 != "stale"
    assert vectors.get(stale)[1].shape[0] == stale.sentences.count()

