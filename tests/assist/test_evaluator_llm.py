"""FineSurE (papers 000/003) and FactSim (paper 001) against a real HTTP server on loopback, replaying model answers
(tests/fixtures/evaluators), malformed ones included."""

import json
import math
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command

from assist import embeddings
from assist.evaluators.base import DocumentInput, SummaryInput, Tools
from assist.evaluators.factsim import FactSimEvaluator, passages
from assist.evaluators.finesure import FineSurEEvaluator, FineSurEScores, finesure_scores
from assist.evaluators.prompts import FACTSIM_SOURCE_CLAIMS_VERSION, FINESURE_FACT_CHECK_VERSION
from assist.llm.base import InMemoryCache, RetryPolicy
from assist.llm.openai_compatible import OpenAICompatibleBackend
from assist.llm.registry import clear_backends
from assist.models import EvaluatorDocumentResult, EvaluatorScore, EvaluatorSentenceScore, LLMCacheEntry
from corpus.importing import import_dataset
from corpus.models import KeyFact

from .conftest import Reply, chat_reply

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "evaluators"
SMALL_JSONL = Path(__file__).resolve().parents[1] / "fixtures" / "import" / "small.jsonl"
SOURCE = [
    "The Harbour Street Library opened in 1928 next to the old fish market.",
    "It holds about forty thousand books, including a large collection of maritime maps.",
    "Last year the city council approved money to repair its leaking roof.",
    "Work on the roof is expected to finish in March.",
]
SUMMARY = [
    "The library opened in 1928 beside the fish market.",
    "It holds four thousand books.",
    "The roof work ends in March.",
]
KEYFACTS = ["The library opened in 1928.", "The council approved money for the roof."]


def answer(name: str) -> str:
    return (FIXTURES / name).read_text()


def prompt_of(request) -> str:
    return request.json["messages"][-1]["content"]


@pytest.fixture
def backend(chat_server):
    backend = OpenAICompatibleBackend(base_url=chat_server.base_url, model="test-model", api_key="sk-test", timeout=5)
    yield backend
    backend.close()


def tools(*, cache=None, sleeps=None) -> Tools:
    return Tools(source_vectors=lambda extra=(): embeddings.encode(SOURCE), encode=embeddings.encode,
                 cache=cache if cache is not None else InMemoryCache(),
                 policy=RetryPolicy(max_retries=1, sleep=(sleeps if sleeps is not None else []).append),
                 concurrency=2)


def document(*summaries, keyfacts=KEYFACTS) -> DocumentInput:
    return DocumentInput(key="doc", source_sentences=SOURCE, keyfacts=list(keyfacts), keyfact_origin="human",
                         summaries=[SummaryInput(key=key, sentences=list(sentences)) for key, sentences in summaries])


# --- FineSurE


def test_finesure_scores_are_the_papers_equations():
    # Eq. 1: 3 of 4 sentences without error. Eq. 2: key-fact 0 in sentences 0 and 2, key-fact 1 nowhere, key-fact 2
    # in sentence 0: 2 of 3 key-facts aligned; sentences 0 and 2 carry a key-fact: 2 of 4 sentences.
    scores = finesure_scores(["no_error", "entity", "no_error", "no_error"], [[0, 2], [], [0]], 4)
    assert (scores.faithfulness, scores.completeness, scores.conciseness) == (0.75, 2 / 3, 0.5)
    assert scores.composite == pytest.approx((0.75 + 2 / 3 + 0.5) / 3)
    assert finesure_scores(["other"], None, 1) == FineSurEScores(0.0, None, None, None)


def test_finesure_checks_facts_and_aligns_key_facts_through_the_backend(chat_server, backend):
    def respond(request):
        if prompt_of(request).startswith("Below are a summary"):
            return chat_reply(answer("finesure_alignment.json"), model="test-model-0613", prompt_tokens=50)
        return chat_reply(answer("finesure_fact_check.txt"), model="test-model-0613", prompt_tokens=300)

    chat_server.responder = respond

    [result] = FineSurEEvaluator(backend=backend).evaluate_document(document(("s1", SUMMARY)), tools()).summaries

    assert result.status == "ok", result.error
    assert result.dimensions == pytest.approx({"faithfulness": 2 / 3, "completeness": 1 / 2, "conciseness": 1 / 3,
                                               "composite": (2 / 3 + 1 / 2 + 1 / 3) / 3})
    assert [(s.category, s.error, s.score) for s in result.sentences] == [
        ("no_error", False, 1.0), ("entity", True, 0.0), ("no_error", False, 1.0)]
    assert result.sentences[1].reason == "The document says about forty thousand books, not four thousand."
    # A "No" with a line number carries no edge (the line numbers of a "No" are ignored).
    assert result.details["alignment"] == [[0], []] and result.sentences[0].details == {"keyfacts": [0]}
    calls = {call.step: call for call in result.calls}
    assert calls["fact_check"].raw_response == answer("finesure_fact_check.txt")
    assert (calls["fact_check"].model, calls["fact_check"].input_tokens, calls["fact_check"].output_tokens) == (
        "test-model-0613", 300, 20)
    assert calls["keyfact_alignment"].input_tokens == 50 and calls["fact_check"].latency_ms >= 0
    fact_check, alignment = sorted(prompt_of(r) for r in chat_server.requests)  # "a document" < "a summary"
    assert "[S4] Work on the roof is expected to finish in March." in fact_check
    assert "[2] It holds four thousand books." in fact_check
    assert "[1] The library opened in 1928 beside the fish market." in alignment
    assert "[2] The council approved money for the roof." in alignment  # the key-facts, numbered
    assert all(r.json["temperature"] == 0 and r.json["model"] == "test-model" for r in chat_server.requests)


def test_finesure_asks_again_after_a_malformed_answer_and_sums_what_each_attempt_cost(chat_server, backend):
    first_answers = {"alignment": "finesure_alignment_yes_without_sentences.json",
                     "fact_check": "finesure_fact_check_cut_off.txt"}
    later_answers = {"alignment": "finesure_alignment.json", "fact_check": "finesure_fact_check.txt"}
    seen = set()

    def respond(request):  # each question is first answered badly, then well
        question = "alignment" if prompt_of(request).startswith("Below are a summary") else "fact_check"
        name = (later_answers if question in seen else first_answers)[question]
        seen.add(question)
        return chat_reply(answer(name))

    chat_server.responder = respond
    sleeps = []

    [result] = FineSurEEvaluator(backend=backend).evaluate_document(document(("s1", SUMMARY)),
                                                                    tools(sleeps=sleeps)).summaries

    assert result.status == "ok", result.error
    assert len(chat_server.requests) == 4 and len(sleeps) == 2
    assert [call.attempts for call in result.calls] == [2, 2]
    assert [call.input_tokens for call in result.calls] == [200, 200]  # both attempts are paid for


def test_a_summary_whose_answers_stay_malformed_fails_alone_with_the_reason_and_the_raw_answer(chat_server,
                                                                                                backend):
    def respond(request):
        prompt = prompt_of(request)
        if prompt.startswith("Below are a summary"):
            return chat_reply(answer("finesure_alignment.json"))
        if "[1] A different summary." in prompt:
            return chat_reply(answer("finesure_fact_check_cut_off.txt"))
        return chat_reply(answer("finesure_fact_check.txt"))

    chat_server.responder = respond
    sleeps = []

    good, bad = FineSurEEvaluator(backend=backend).evaluate_document(
        document(("good", SUMMARY), ("bad", ["A different summary.", "Two.", "Three."])), tools(sleeps=sleeps)
    ).summaries

    assert good.status == "ok"
    assert bad.status == "failed" and bad.error == (
        "fact_check: ParseError: Expected 3 judgements, one per numbered item, got 1")  # the cut-off list
    assert bad.dimensions == {} and bad.sentences == []
    [failed] = [call for call in bad.calls if call.error]
    assert failed.raw_response == answer("finesure_fact_check_cut_off.txt") and failed.attempts == 2  # bounded


PAPER_NAMES = [  # (the category as a model that read FineSurE writes it, the slug it stands for)
    ("Circumstantial Error", "circumstance"), ("linking error", "discourse_link"),
    ("out-of-context error", "out_of_context"), ("CorefE", "coreference"), ("No factual error", "no_error"),
    ("Grammatical Error (GramE)", "grammatical"), ("PredE", "predicate"),
]


def fact_check_answer(categories: list[str]) -> str:
    return json.dumps([{"sentence": i, "reason": f"Reason {i}.", "category": category}
                       for i, category in enumerate(categories, start=1)])


def test_finesure_reads_the_papers_category_names_and_plain_synonyms_at_the_first_answer(chat_server, backend):
    sentences = [f"Sentence number {i}." for i in range(1, len(PAPER_NAMES) + 1)]

    def respond(request):
        if prompt_of(request).startswith("Below are a summary"):
            return chat_reply(answer("finesure_alignment.json"))
        return chat_reply(fact_check_answer([name for name, _ in PAPER_NAMES]))

    chat_server.responder = respond
    sleeps = []

    [result] = FineSurEEvaluator(backend=backend).evaluate_document(document(("s1", sentences)),
                                                                    tools(sleeps=sleeps)).summaries

    assert result.status == "ok", result.error
    assert [s.category for s in result.sentences] == [slug for _, slug in PAPER_NAMES]
    assert [s.error for s in result.sentences] == [slug != "no_error" for _, slug in PAPER_NAMES]
    assert result.dimensions["faithfulness"] == pytest.approx(1 / 7)
    assert len(chat_server.requests) == 2 and sleeps == []  # understood at once: nothing asked again


def test_a_category_that_could_mean_several_errors_is_asked_again_then_fails_with_the_word(chat_server, backend):
    def respond(request):
        if prompt_of(request).startswith("Below are a summary"):
            return chat_reply(answer("finesure_alignment.json"))
        return chat_reply(fact_check_answer(["no error", "hallucination", "no error"]))

    chat_server.responder = respond

    [result] = FineSurEEvaluator(backend=backend).evaluate_document(document(("s1", SUMMARY)), tools()).summaries

    assert result.status == "failed"
    assert result.error.startswith("fact_check: ParseError: Sentence 2: unknown category 'hallucination'")


def test_finesure_answers_come_from_the_cache_on_a_second_run(chat_server, backend):
    chat_server.responder = lambda request: chat_reply(answer(
        "finesure_alignment.json" if prompt_of(request).startswith("Below are a summary")
        else "finesure_fact_check.txt"))
    cache = InMemoryCache()
    evaluator = FineSurEEvaluator(backend=backend)
    first = evaluator.evaluate_document(document(("s1", SUMMARY)), tools(cache=cache)).summaries[0]
    requests = len(chat_server.requests)

    second = evaluator.evaluate_document(document(("s1", SUMMARY)), tools(cache=cache)).summaries[0]

    assert len(chat_server.requests) == requests == 2
    assert second.dimensions == first.dimensions
    assert all(call.cached and call.input_tokens == 0 and call.attempts == 0 for call in second.calls)


def test_without_key_facts_finesure_gives_faithfulness_only(chat_server, backend):
    chat_server.responder = lambda request: chat_reply(answer("finesure_fact_check.txt"))

    [result] = FineSurEEvaluator(backend=backend).evaluate_document(document(("s1", SUMMARY), keyfacts=[]),
                                                                     tools()).summaries

    assert len(chat_server.requests) == 1
    assert result.dimensions == {"faithfulness": pytest.approx(2 / 3), "completeness": None, "conciseness": None,
                                 "composite": None}


# --- FactSim


def hand_factsim(source_claims, summary_claims):
    """Eq. 1-3 by hand with the bundled model: sim = max(0, cosine)."""
    def text(claim):
        return " ".join(claim)

    model = embeddings.load_model()
    raw_source = model.encode([text(c) for c in source_claims], normalize_embeddings=False)
    raw_summary = model.encode([text(c) for c in summary_claims], normalize_embeddings=False)

    def sim(a, b):
        return max(0.0, float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b))))

    matrix = [[sim(s, r) for r in raw_source] for s in raw_summary]
    coverage = sum(max(row[j] for row in matrix) for j in range(len(source_claims))) / len(source_claims)
    consistency = sum(max(row) for row in matrix) / len(summary_claims)
    return coverage, consistency, 2 * coverage * consistency / (coverage + consistency), [max(row) for row in matrix]


def factsim_answers(request):
    prompt = prompt_of(request)
    if prompt.startswith("List the factual claims the text below makes"):
        return chat_reply(answer("factsim_source_claims.json"))
    return chat_reply(answer("factsim_summary_claims.txt"))


def test_factsim_matches_a_hand_computation_with_the_bundled_model(chat_server, backend):
    chat_server.responder = factsim_answers

    outcome = FactSimEvaluator(backend=backend).evaluate_document(document(("s1", SUMMARY)), tools())

    [result] = outcome.summaries
    assert result.status == "ok", result.error
    source_claims = json.loads(answer("factsim_source_claims.json"))
    summary_claims = [["library", "opened in 1928"], ["library", "next to fish market"],
                      ["library", "holds four thousand books"], ["roof work", "ends in March"]]
    coverage, consistency, factsim, best = hand_factsim(source_claims, summary_claims)
    assert result.scores == pytest.approx({"coverage": coverage, "consistency": consistency, "factsim": factsim},
                                          abs=1e-5)
    assert result.dimensions == pytest.approx({"faithfulness": consistency, "completeness": coverage,
                                               "conciseness": None, "composite": factsim}, abs=1e-5)
    # Per sentence: the mean best similarity of its claims; a claim restated word for word scores 1.
    assert [s.score for s in result.sentences] == pytest.approx([(best[0] + best[1]) / 2, best[2], best[3]],
                                                                abs=1e-5)
    assert best[0] == pytest.approx(1.0, abs=1e-5) and best[3] == pytest.approx(1.0, abs=1e-5)
    assert [c["claim"] for c in result.details["claims"]] == summary_claims
    assert outcome.document_details == {"passages": 1, "claims": source_claims}
    assert outcome.document_calls[0].raw_response == answer("factsim_source_claims.json")
    assert result.calls[0].step == "summary_claims" and result.calls[0].input_tokens == 100


def test_a_long_document_is_read_in_passages_whose_claims_are_pooled(chat_server, backend):
    chat_server.responder = factsim_answers
    long_source = [f"Sentence number {i} of a long report about the harbour and its library." for i in range(90)]
    doc = DocumentInput(key="doc", source_sentences=long_source, summaries=[SummaryInput("s1", SUMMARY)])

    outcome = FactSimEvaluator(backend=backend).evaluate_document(doc, tools())

    chunks = passages(long_source)
    assert len(chunks) == 3 and sum(chunks, []) == long_source  # about 400 words each, whole sentences
    source_prompts = [prompt_of(r) for r in chat_server.requests if "the text below makes" in prompt_of(r)]
    assert len(source_prompts) == 3 and outcome.document_details["passages"] == 3
    assert len(outcome.document_details["claims"]) == 15  # five claims per passage, concatenated (paper 3.1)


def test_factsim_retries_malformed_claims_then_fails_the_summaries_it_cannot_read(chat_server, backend):
    def respond(request):
        prompt = prompt_of(request)
        if prompt.startswith("List the factual claims the text below makes"):
            source_attempts.append(prompt)
            name = "factsim_source_claims_not_pairs.txt" if len(source_attempts) == 1 else "factsim_source_claims.json"
            return chat_reply(answer(name))
        if "[1] Another summary." in prompt:
            return chat_reply(answer("factsim_summary_claims_wrong_count.json"))
        return chat_reply(answer("factsim_summary_claims.txt"))

    source_attempts = []
    chat_server.responder = respond

    outcome = FactSimEvaluator(backend=backend).evaluate_document(
        document(("good", SUMMARY), ("bad", ["Another summary.", "Two.", "Three."])), tools())

    assert len(source_attempts) == 2 and outcome.document_calls[0].attempts == 2
    good, bad = outcome.summaries
    assert good.status == "ok"
    assert bad.status == "failed"
    assert bad.error == "summary_claims: ParseError: Expected 3 sentences, one per numbered item, got 1"
    assert bad.calls[0].raw_response == answer("factsim_summary_claims_wrong_count.json")


def test_when_the_source_claims_cannot_be_read_every_summary_fails_with_the_reason(chat_server, backend):
    chat_server.responder = lambda request: chat_reply(answer("factsim_source_claims_not_pairs.txt")) if \
        "the text below makes" in prompt_of(request) else chat_reply(answer("factsim_summary_claims.txt"))

    outcome = FactSimEvaluator(backend=backend).evaluate_document(document(("a", SUMMARY), ("b", SUMMARY)), tools())

    assert [r.status for r in outcome.summaries] == ["failed", "failed"]
    assert outcome.summaries[0].error.startswith("source claims: source_claims[0]: ParseError: Answer, claim 1:")
    assert outcome.document_calls[0].error and outcome.document_details["claims"] == []


# --- Runs over a project, with the backend chosen in settings.


@pytest.fixture
def imported(project, settings, chat_server):
    import_dataset(project=project, data=SMALL_JSONL.read_bytes(), filename="small.jsonl")
    settings.FINEGRAIN_LLM_BACKEND = "openai"
    settings.FINEGRAIN_OPENAI_BASE_URL = chat_server.base_url
    settings.FINEGRAIN_OPENAI_API_KEY = "sk-test"
    settings.FINEGRAIN_OPENAI_MODEL = "served-model"
    settings.FINEGRAIN_LLM_MAX_RETRIES = 1
    clear_backends()
    yield project
    clear_backends()


def numbered_lines(prompt: str, after: str) -> int:
    block = prompt.split(after, 1)[1].strip().split("\n\n")[0]
    return sum(1 for line in block.splitlines() if line.startswith("["))


def generic_finesure(request):
    """Every sentence correct but the first; every key-fact in sentence 1 but the second."""
    prompt = prompt_of(request)
    if prompt.startswith("Below are a summary"):
        m = numbered_lines(prompt, "numbered:\n")
        return chat_reply(json.dumps([{"key fact": k, "response": "no" if k == 2 else "yes",
                                       "sentences": [] if k == 2 else [1]} for k in range(1, m + 1)]))
    n = numbered_lines(prompt, "numbered sentences:\n")
    return chat_reply("```json\n" + json.dumps([{"sentence": i, "reason": f"Reason {i}.",
                                                 "category": "circumstance error" if i == 1 else "no error"}
                                                for i in range(1, n + 1)]) + "\n```")


def test_run_evaluator_finesure_stores_each_score_with_its_model_prompt_and_calls(imported, chat_server, capsys):
    chat_server.responder = generic_finesure
    KeyFact.objects.filter(document__uid="t-news-1", index=1).update(status=KeyFact.Status.ACCEPTED)

    call_command("run_evaluator", "--project", "alpha", "--evaluator", "finesure", verbosity=0)

    assert "4 summaries scored, 0 already current, 0 failed" in capsys.readouterr().out
    scores = EvaluatorScore.objects.filter(evaluator="finesure")
    assert scores.count() == 4 and set(scores.values_list("status", flat=True)) == {"ok"}
    score = scores.get(summary__document__uid="t-news-1", summary__model="m-good")
    assert (score.backend, score.model, score.origin) == ("openai", "served-model", "run")
    assert score.prompt_version.startswith(FINESURE_FACT_CHECK_VERSION)
    # Human key-facts win over candidates: t-news-1 has one accepted key-fact, aligned with sentence 1.
    assert score.details["keyfacts"] == "human" and score.details["n_keyfacts"] == 1
    assert (score.faithfulness, score.completeness, score.conciseness) == (0.5, 1.0, 0.5)
    assert [call["step"] for call in score.calls] == ["fact_check", "keyfact_alignment"]
    assert all(call["raw_response"] and call["model"] == "served-model" for call in score.calls)
    assert (score.input_tokens, score.output_tokens) == (200, 40)
    assert score.latency_ms == sum(call["latency_ms"] for call in score.calls)
    [first, second] = EvaluatorSentenceScore.objects.filter(evaluator_score=score).order_by("summary_sentence__index")
    assert (first.category, first.error, first.reason, second.category) == ("circumstance", True, "Reason 1.",
                                                                            "no_error")
    dialogue = scores.get(summary__document__uid="t-dial-1", summary__model="m-good")
    assert dialogue.details["keyfacts"] == "human"  # imported as human key-facts
    assert LLMCacheEntry.objects.count() == 8

    requests = len(chat_server.requests)
    call_command("run_evaluator", "--project", "alpha", "--evaluator", "finesure", verbosity=0)
    assert len(chat_server.requests) == requests and "4 already current" in capsys.readouterr().out
    # New key-fact labels make the FineSurE scores of that document stale; the fact checks come from the cache.
    KeyFact.objects.filter(document__uid="t-news-1").update(status=KeyFact.Status.ACCEPTED)
    call_command("run_evaluator", "--project", "alpha", "--evaluator", "finesure", verbosity=0)
    assert "2 summaries scored, 2 already current" in capsys.readouterr().out
    assert len(chat_server.requests) == requests + 2  # only the two new alignment questions
    score.refresh_from_db()
    assert (score.completeness, score.details["n_keyfacts"]) == (0.5, 2)


def test_a_failed_summary_is_recorded_and_tried_again_by_the_next_run(imported, chat_server, capsys):
    broken = {"on": True}

    def respond(request):
        if broken["on"] and "[1] The system booked" in prompt_of(request):
            return Reply(status=503, body={"error": {"message": "overloaded"}})
        return generic_finesure(request)

    chat_server.responder = respond
    call_command("run_evaluator", "--project", "alpha", "--evaluator", "finesure", verbosity=0)
    out = capsys.readouterr().out
    assert "3 summaries scored, 0 already current, 1 failed" in out and "Run the command again" in out
    failed = EvaluatorScore.objects.get(evaluator="finesure", status="failed")
    assert "TransientError" in failed.error and failed.faithfulness is None
    assert failed.calls[0]["attempts"] == 2  # FINEGRAIN_LLM_MAX_RETRIES = 1

    broken["on"] = False
    call_command("run_evaluator", "--project", "alpha", "--evaluator", "finesure", verbosity=0)
    assert "1 summaries scored, 3 already current, 0 failed" in capsys.readouterr().out
    failed.refresh_from_db()
    assert failed.status == "ok" and not math.isnan(failed.faithfulness)


def test_run_evaluator_factsim_keeps_the_source_claims_once_per_document(imported, chat_server, capsys):
    def respond(request):
        prompt = prompt_of(request)
        if "the text below makes" in prompt:
            return chat_reply(json.dumps([["council", "voted 7-2"], ["pier", "will be rebuilt"], ["table", "booked"]]))
        n = numbered_lines(prompt, "Sentences:\n")
        return chat_reply(json.dumps([{"sentence": i, "claims": [["council", "voted 7-2"]]} for i in range(1, n + 1)]))

    chat_server.responder = respond

    call_command("run_evaluator", "--project", "alpha", "--evaluator", "factsim", verbosity=0)

    assert "4 summaries scored" in capsys.readouterr().out
    results = EvaluatorDocumentResult.objects.filter(evaluator="factsim")
    assert results.count() == 2
    result = results.get(document__uid="t-news-1")
    assert result.details["claims"][0] == ["council", "voted 7-2"] and result.calls[0]["raw_response"]
    assert result.prompt_version.startswith(FACTSIM_SOURCE_CLAIMS_VERSION)
    score = EvaluatorScore.objects.get(evaluator="factsim", summary__document__uid="t-news-1", summary__model="m-bad")
    assert score.embedding_model == str(embeddings.model_identity())
    assert score.faithfulness == pytest.approx(1.0, abs=1e-5)  # its one claim restates a source claim
    assert score.composite == pytest.approx(score.scores["factsim"])
    assert sum("the text below makes" in prompt_of(r) for r in chat_server.requests) == 2  # one per document
