"""The response cache in front of every LLM call (assist.llm.base.cached_completion), against a real chat server."""

import logging

import pytest

from assist.llm.base import InMemoryCache, RetryPolicy, cached_completion
from assist.llm.openai_compatible import OpenAICompatibleBackend
from assist.parsing import parse_reason

from .conftest import chat_reply

MESSAGES = [{"role": "user", "content": "Why is this sentence supported?"}]
ANSWER = '{"reason": "S2 says the museum reopened in May."}'


@pytest.fixture
def ask(chat_server, sleeps):
    backend = OpenAICompatibleBackend(base_url=chat_server.base_url, model="configured", timeout=2)
    policy = RetryPolicy(max_retries=1, sleep=sleeps.append)

    def ask(cache):
        return cached_completion(backend, MESSAGES, parse_reason, cache=cache, key="k", policy=policy, max_tokens=200)

    return ask


def test_a_cache_hit_sends_no_request_and_costs_nothing(chat_server, ask):
    cache = InMemoryCache()
    cache.set("k", {"text": ANSWER, "model": "served"})

    result = ask(cache)

    assert (result.ok, result.value, result.model, result.raw_response) == (
        True, "S2 says the museum reopened in May.", "served", ANSWER
    )
    assert (result.cached, result.latency_ms, result.input_tokens, result.output_tokens, result.attempts) == (
        True, 0, 0, 0, 0
    )
    assert chat_server.requests == []


def test_an_unusable_cache_entry_is_asked_again_and_replaced(chat_server, ask, caplog):
    cache = InMemoryCache()
    cache.set("k", {"text": "first line\nsecond line", "model": "old"})
    chat_server.add(chat_reply(ANSWER, model="served", prompt_tokens=100, completion_tokens=20))

    with caplog.at_level(logging.WARNING):
        result = ask(cache)

    assert "Ignoring an unusable cache entry k" in caplog.text
    assert (result.ok, result.value, result.model, result.cached, result.attempts) == (
        True, "S2 says the museum reopened in May.", "served", False, 1
    )
    assert (result.input_tokens, result.output_tokens) == (100, 20)
    assert cache.get("k") == {"text": ANSWER, "model": "served"}
    assert len(chat_server.requests) == 1


def test_a_failure_is_not_cached(chat_server, ask, sleeps):
    cache = InMemoryCache()
    chat_server.add(chat_reply("first line\nsecond line", model="served"), chat_reply("[1, 2]", model="served"))

    result = ask(cache)

    assert (result.ok, result.value, result.cached, result.attempts) == (False, None, False, 2)
    assert result.error.startswith("ParseError")
    assert (result.model, result.raw_response) == ("served", "[1, 2]")  # The last answer, for the record.
    assert len(sleeps) == 1
    assert len(cache) == 0
