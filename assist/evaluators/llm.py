"""How the LLM evaluators ask their questions: many cached requests at once, with the platform's retry policy.

The same contract as assist.llm.base.cached_completion (a parsed cached answer is reused; only an answer that parsed
is stored), for a batch: cache reads and writes stay in the calling thread (a database cache must not be used from
worker threads), only the requests run on `concurrency` threads (the backend keeps the requests-per-minute budget).
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from assist.llm.base import (
    ChatBackend,
    CompletionResult,
    Message,
    ResponseCache,
    RetryPolicy,
    complete_with_retries,
    safe_cache_get,
    safe_cache_set,
)
from assist.prelabel import run_concurrently


@dataclass(frozen=True)
class Request:
    key: str  # assist.llm.base.cache_key of backend, model, prompt version and messages.
    messages: list[Message]
    parse: Callable[[str], Any]
    max_tokens: int = 2048


def ask_all(backend: ChatBackend, requests: Sequence[Request], *, cache: ResponseCache | None, policy: RetryPolicy,
            concurrency: int) -> list[CompletionResult]:
    """One CompletionResult per request, in order. Raises only NotSupported (a backend without a language model)."""
    results: list[CompletionResult | None] = [None] * len(requests)
    missing = []
    for position, request in enumerate(requests):
        hit = safe_cache_get(cache, request.key)
        if hit is not None:
            try:
                value = request.parse(hit["text"])
            except Exception:  # Stale or foreign entry: ask again.
                value = None
            else:
                results[position] = CompletionResult(
                    value=value, error="", model=hit.get("model", backend.model), raw_response=hit["text"],
                    latency_ms=0, input_tokens=0, output_tokens=0, attempts=0, cached=True)
        if results[position] is None:
            missing.append(position)

    def ask(position: int):
        request = requests[position]
        return complete_with_retries(backend, request.messages, request.parse, policy=policy,
                                     max_tokens=request.max_tokens)

    for position, outcome in zip(missing, run_concurrently(ask, missing, concurrency=concurrency)):
        completion = outcome.completion
        if outcome.ok:
            safe_cache_set(cache, requests[position].key, {"text": completion.text, "model": completion.model})
        results[position] = CompletionResult(
            value=outcome.value, error=outcome.error, model=completion.model if completion else backend.model,
            raw_response=completion.text if completion else "", latency_ms=outcome.latency_ms,
            input_tokens=outcome.input_tokens, output_tokens=outcome.output_tokens, attempts=outcome.attempts)
    return results
