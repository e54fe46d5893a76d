"""The OpenAI-compatible backend and the pre-labeler against a real HTTP server on 127.0.0.1."""

import json
import socket

import pytest

from assist.llm.base import PermanentError, RateLimited, TransientError
from assist.llm.openai_compatible import OpenAICompatibleBackend, parse_retry_after
from assist.prelabel import InMemoryCache, SummaryJob, prelabel_many, prelabel_summary
from assist.prompts import FACT_CHECK_VERSION

from .conftest import Reply, chat_reply

SOURCE = [
    "The Harbour Street Library opened in 1928 next to the old fish market.",
    "It holds about forty thousand books, including many maritime maps.",
    "The city council approved money to repair its roof.",
]
SUMMARY = [
    "The library opened in 1928 beside the fish market.",
    "It has a collection of maritime maps.",
    "The library was the first to lend e-books.",
]
GOOD = json.dumps([
    {"sentence": 1, "category": "no error", "reason": "S1 gives the year and the place."},
    {"sentence": 2, "category": "No Error", "reason": "S2 mentions the maps."},
    {"sentence": 3, "category": "out-of-article error", "reason": "The document never mentions e-books."},
])


@pytest.fixture
def backend(chat_server):
    backend = OpenAICompatibleBackend(base_url=chat_server.base_url, model="test-model", api_key="sk-test", timeout=2)
    yield backend
    backend.close()


def test_it_sends_a_chat_completion_request(chat_server, backend):
    chat_server.add(chat_reply(GOOD, model="test-model-2025"))

    results = prelabel_summary(backend, SOURCE, SUMMARY, max_retries=0)

    [request] = chat_server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.json["model"] == "test-model"
    assert request.json["temperature"] == 0
    assert request.json["max_tokens"] >= 1024
    [message] = request.json["messages"]
    assert message["role"] == "user"
    assert "[S1] The Harbour Street Library opened in 1928" in message["content"]
    assert "[3] The library was the first to lend e-books." in message["content"]
    assert [r.category for r in results] == ["no_error", "no_error", "out_of_article"]
    assert [r.index for r in results] == [0, 1, 2]
    assert results[2].reason == "The document never mentions e-books."
    first = results[0]
    assert (first.status, first.error, first.attempts, first.cached) == ("ok", "", 1, False)
    assert (first.backend, first.model, first.prompt_version) == ("openai", "test-model-2025", FACT_CHECK_VERSION)
    assert (first.input_tokens, first.output_tokens) == (100, 20)
    assert first.raw_response == GOOD
    assert first.latency_ms >= 0


def test_it_reads_json_inside_code_fences_and_prose(chat_server, backend):
    chat_server.add(chat_reply(f"Sure! Here is my assessment:\n```json\n{GOOD}\n```\nLet me know if you need more."))

    results = prelabel_summary(backend, SOURCE, SUMMARY, max_retries=0)

    assert [r.status for r in results] == ["ok"] * 3
    assert results[2].category == "out_of_article"


def test_it_retries_a_wrong_number_of_sentences_then_marks_the_summary_failed(chat_server, backend, sleeps):
    short = json.dumps([{"sentence": 1, "category": "no error", "reason": "Fine."}])
    chat_server.add(chat_reply(short), chat_reply(short))

    results = prelabel_summary(backend, SOURCE, SUMMARY, max_retries=1, sleep=sleeps.append)

    assert len(chat_server.requests) == 2
    assert len(sleeps) == 1 and 1.0 <= sleeps[0] <= 1.1
    assert len(results) == 3
    for result in results:
        assert (result.status, result.category, result.attempts) == ("failed", "", 2)
        assert "Expected 3 judgements" in result.error and "got 1" in result.error
        assert result.raw_response == short
        assert result.input_tokens == 200  # Both attempts were paid for.


def test_it_retries_an_unknown_category(chat_server, backend, sleeps):
    bad = GOOD.replace("out-of-article error", "hallucination")
    chat_server.add(chat_reply(bad), chat_reply(GOOD))

    results = prelabel_summary(backend, SOURCE, SUMMARY, max_retries=2, sleep=sleeps.append)

    assert [r.status for r in results] == ["ok"] * 3
    assert results[0].attempts == 2
    assert len(chat_server.requests) == 2


def test_unknown_category_error_names_the_sentence_and_the_value(chat_server, backend, sleeps):
    chat_server.add(chat_reply(GOOD.replace("out-of-article error", "hallucination")))

    results = prelabel_summary(backend, SOURCE, SUMMARY, max_retries=0, sleep=sleeps.append)

    assert results[0].status == "failed"
    assert "Sentence 3: Unknown category 'hallucination'" in results[0].error


def test_malformed_json_fails_with_the_reason(chat_server, backend, sleeps):
    chat_server.add(chat_reply('[{"sentence": 1, "category": "no error", "reason": "ok",'))

    results = prelabel_summary(backend, SOURCE, SUMMARY, max_retries=0, sleep=sleeps.append)

    assert results[0].status == "failed"
    assert "malformed" in results[0].error


def test_a_slow_answer_times_out_and_is_retried(chat_server, sleeps):
    backend = OpenAICompatibleBackend(base_url=chat_server.base_url, model="m", timeout=0.3)
    slow = chat_reply(GOOD)
    slow.delay = 1.0
    chat_server.add(slow, chat_reply(GOOD))

    results = prelabel_summary(backend, SOURCE, SUMMARY, max_retries=1, sleep=sleeps.append)

    assert [r.status for r in results] == ["ok"] * 3
    assert results[0].attempts == 2
    backend.close()


def test_a_timeout_is_a_transient_error(chat_server):
    backend = OpenAICompatibleBackend(base_url=chat_server.base_url, model="m", timeout=0.3)
    slow = chat_reply(GOOD)
    slow.delay = 1.0
    chat_server.add(slow)

    with pytest.raises(TransientError, match="within 0.3s"):
        backend.complete([{"role": "user", "content": "hi"}], max_tokens=10, temperature=0)
    backend.close()


def test_http_429_waits_for_retry_after(chat_server, backend, sleeps):
    chat_server.add(
        Reply(status=429, body={"error": {"message": "Rate limit reached"}}, headers={"Retry-After": "7"}),
        chat_reply(GOOD),
    )

    results = prelabel_summary(backend, SOURCE, SUMMARY, max_retries=3, sleep=sleeps.append)

    assert sleeps == [7.0]
    assert [r.status for r in results] == ["ok"] * 3
    assert results[0].attempts == 2


def test_http_429_raises_rate_limited_with_retry_after(chat_server, backend):
    chat_server.add(Reply(status=429, body={"error": {"message": "slow down"}}, headers={"Retry-After": "2"}))

    with pytest.raises(RateLimited, match="slow down") as raised:
        backend.complete([{"role": "user", "content": "hi"}], max_tokens=10, temperature=0)
    assert raised.value.retry_after == 2.0


def test_retry_after_accepts_an_http_date():
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # In the past: retry now.
    assert parse_retry_after("not a date") is None
    assert parse_retry_after(None) is None


def test_http_500_then_success(chat_server, backend, sleeps):
    chat_server.add(Reply(status=500, body={"error": {"message": "upstream crashed"}}), chat_reply(GOOD))

    results = prelabel_summary(backend, SOURCE, SUMMARY, max_retries=3, sleep=sleeps.append)

    assert [r.status for r in results] == ["ok"] * 3
    assert results[0].attempts == 2
    assert len(sleeps) == 1


def test_retries_are_bounded(chat_server, backend, sleeps):
    chat_server.add(*[Reply(status=503, body="busy") for _ in range(5)])

    results = prelabel_summary(backend, SOURCE, SUMMARY, max_retries=2, sleep=sleeps.append)

    assert len(chat_server.requests) == 3
    assert results[0].attempts == 3
    assert results[0].error == "TransientError: HTTP 503 from " + backend.endpoint + ": busy"
    assert 1.0 <= sleeps[0] <= 1.1 and 2.0 <= sleeps[1] <= 2.2  # Exponential backoff.


def test_a_client_error_is_not_retried(chat_server, backend, sleeps):
    chat_server.add(Reply(status=401, body={"error": {"message": "Incorrect API key provided"}}))

    results = prelabel_summary(backend, SOURCE, SUMMARY, max_retries=3, sleep=sleeps.append)

    assert len(chat_server.requests) == 1
    assert results[0].status == "failed"
    assert "HTTP 401" in results[0].error and "Incorrect API key" in results[0].error
    assert sleeps == []


def test_it_raises_typed_errors(chat_server, backend):
    chat_server.add(Reply(status=400, body={"error": {"message": "bad model"}}), Reply(status=502, body="gateway"))
    messages = [{"role": "user", "content": "hi"}]
    with pytest.raises(PermanentError, match="bad model"):
        backend.complete(messages, max_tokens=10, temperature=0)
    with pytest.raises(TransientError, match="HTTP 502"):
        backend.complete(messages, max_tokens=10, temperature=0)


def test_a_closed_port_is_a_transient_error():
    with socket.socket() as probe:  # A port that was free a moment ago: nothing listens there.
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    backend = OpenAICompatibleBackend(base_url=f"http://127.0.0.1:{port}/v1", model="m", timeout=1)
    with pytest.raises(TransientError, match="Cannot reach"):
        backend.complete([{"role": "user", "content": "hi"}], max_tokens=10, temperature=0)


def test_no_authorization_header_without_a_key(chat_server):
    backend = OpenAICompatibleBackend(base_url=chat_server.base_url + "/", model="llama3", timeout=2)
    chat_server.add(chat_reply("hello"))

    completion = backend.complete([{"role": "user", "content": "hi"}], max_tokens=10, temperature=0.5)

    assert "authorization" not in chat_server.requests[0].headers
    assert chat_server.requests[0].path == "/v1/chat/completions"
    assert completion.text == "hello" and completion.raw["id"] == "chatcmpl-test"


def test_a_cache_hit_sends_no_second_request(chat_server, backend):
    chat_server.add(chat_reply(GOOD))
    cache = InMemoryCache()

    first = prelabel_summary(backend, SOURCE, SUMMARY, max_retries=0, cache=cache)
    second = prelabel_summary(backend, SOURCE, SUMMARY, max_retries=0, cache=cache)

    assert len(chat_server.requests) == 1
    assert [r.category for r in second] == [r.category for r in first]
    assert (second[0].cached, second[0].attempts, second[0].model) == (True, 0, "served-model")
    assert (second[0].input_tokens, second[0].latency_ms) == (0, 0)  # Nothing was spent the second time.


def test_failed_answers_are_not_cached(chat_server, backend, sleeps):
    chat_server.add(chat_reply("no idea"), chat_reply(GOOD))
    cache = InMemoryCache()

    prelabel_summary(backend, SOURCE, SUMMARY, max_retries=0, cache=cache, sleep=sleeps.append)
    results = prelabel_summary(backend, SOURCE, SUMMARY, max_retries=0, cache=cache, sleep=sleeps.append)

    assert len(cache) == 1 and len(chat_server.requests) == 2
    assert results[0].status == "ok"


def test_a_batch_never_crashes_and_keeps_its_order(chat_server, backend, sleeps):
    def respond(request):
        prompt = request.json["messages"][0]["content"]
        if "BROKEN" in prompt:
            return chat_reply("I cannot help with that.")
        if "SERVER" in prompt:
            return Reply(status=500, body="boom")
        n = prompt.count("\n[", prompt.index("Summary,"))
        return chat_reply(json.dumps([
            {"sentence": i, "category": "entity_error", "reason": "Wrong name."} for i in range(1, n + 1)
        ]))

    chat_server.responder = respond
    jobs = [
        SummaryJob("a", SOURCE, ["One sentence."]),
        SummaryJob("b", SOURCE, ["BROKEN summary.", "Second."]),
        SummaryJob("c", SOURCE, ["SERVER error."]),
        SummaryJob("d", SOURCE, ["First.", "Second.", "Third."]),
    ]
    done = []

    results = prelabel_many(
        backend, jobs, max_retries=1, concurrency=3, sleep=sleeps.append, on_done=lambda job, r: done.append(job.key)
    )

    assert sorted(done) == ["a", "b", "c", "d"]
    assert [len(r) for r in results] == [1, 2, 1, 3]
    assert [r.status for r in results[0]] == ["ok"] and results[0][0].category == "entity"
    assert [r.status for r in results[1]] == ["failed", "failed"]
    assert "no JSON" in results[1][0].error
    assert results[2][0].status == "failed" and "HTTP 500" in results[2][0].error
    assert [r.status for r in results[3]] == ["ok"] * 3
    assert len(chat_server.requests) == 1 + 2 + 2 + 1
