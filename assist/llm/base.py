"""The one interface every LLM backend implements, its typed errors, and how the rest of assist calls it.

Backends turn their transport's failures into three kinds the callers can act on: RateLimited (wait as told, then
retry), TransientError (retry with backoff) and PermanentError (do not retry: a bad key, an unknown model, a request
the service refuses). `complete_with_retries` owns the retry policy for all callers (pre-labels, key-facts,
paraphrases), so the policy is written and tested once; `cached_completion` puts the response cache in front of it.
"""

import abc
import hashlib
import json
import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypedDict, TypeVar, runtime_checkable

from assist.config import DEFAULTS
from assist.parsing import ParseError, SentenceJudgement

logger = logging.getLogger(__name__)

T = TypeVar("T")


class Message(TypedDict):
    role: str  # "system", "user" or "assistant"
    content: str


@dataclass(frozen=True)
class Completion:
    text: str
    model: str  # As reported by the service when it says, else as configured.
    input_tokens: int | None
    output_tokens: int | None
    latency_ms: int
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


class BackendError(Exception):
    """Base class for failures of a backend call."""


class RateLimited(BackendError):
    """HTTP 429 or the service's throttling error; `retry_after` is in seconds when the service said."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class TransientError(BackendError):
    """5xx, timeouts, dropped connections: the same request may well succeed later."""


class PermanentError(BackendError):
    """Any other refusal (4xx): retrying the same request cannot help."""


class NotSupported(BackendError):
    """The configured backend cannot do this at all; a configuration problem, so it is never retried or hidden."""


class ChatBackend(abc.ABC):
    """A chat model behind some transport. `name` is the backend kind, `label` what pages call it, `model` the model
    it calls."""

    name: str = ""
    label: str = ""
    model: str = ""

    @abc.abstractmethod
    def complete(self, messages: list[Message], *, max_tokens: int, temperature: float) -> Completion:
        """Send one chat request; raise RateLimited, TransientError or PermanentError on failure."""

    def close(self) -> None:  # noqa: B027 - optional hook, most backends hold nothing.
        """Release connections; the default has none."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} {self.model}>"


@runtime_checkable
class SentenceLabeler(Protocol):
    """A backend that labels summary sentences itself instead of answering a prompt (the offline labeler)."""

    name: str
    model: str
    prompt_version: str

    def label_summary(self, source_sentences: list[str], summary_sentences: list[str]) -> list[SentenceJudgement]: ...


# --- Rate limiting: a backend wrapper, so every request counts, retries included.


class RateLimiter:
    """Spaces requests evenly to at most `requests_per_minute` per process (0 = unlimited); thread-safe."""

    def __init__(
        self,
        requests_per_minute: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.interval = 60.0 / requests_per_minute if requests_per_minute > 0 else 0.0
        self._clock = clock
        self._sleep = sleep
        self._next_slot = 0.0
        self._lock = threading.Lock()

    def acquire(self) -> float:
        """Wait for the next free slot; return how long we waited."""
        if not self.interval:
            return 0.0
        with self._lock:  # Reserve a slot under the lock, wait outside it so other threads can queue.
            now = self._clock()
            slot = max(now, self._next_slot)
            self._next_slot = slot + self.interval
        wait = slot - now
        if wait > 0:
            self._sleep(wait)
        return wait


class ThrottledBackend(ChatBackend):
    """Wraps a backend so that each request first takes a slot from a shared RateLimiter."""

    def __init__(self, backend: ChatBackend, limiter: RateLimiter) -> None:
        self.backend = backend
        self.limiter = limiter
        self.name, self.label = backend.name, backend.label
        self.model = backend.model

    def complete(self, messages: list[Message], *, max_tokens: int, temperature: float) -> Completion:
        self.limiter.acquire()
        return self.backend.complete(messages, max_tokens=max_tokens, temperature=temperature)

    def close(self) -> None:
        self.backend.close()


# --- Retries.


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff: base_delay * 2**n, capped, plus up to `jitter` of it so parallel workers spread out."""

    max_retries: int = DEFAULTS.llm_max_retries  # Retries after the first attempt.
    base_delay: float = 1.0
    max_delay: float = 30.0
    max_retry_after: float = 300.0  # A Retry-After longer than this is cut down: a worker must not sleep for hours.
    jitter: float = 0.1
    sleep: Callable[[float], None] = time.sleep

    def delay(self, retry: int, error: Exception | None) -> float:
        if isinstance(error, RateLimited) and error.retry_after is not None:
            return max(min(error.retry_after, self.max_retry_after), 0.0)
        backoff = min(self.max_delay, self.base_delay * 2 ** (retry - 1))
        return backoff + backoff * self.jitter * random.random()


@dataclass
class CallOutcome(Generic[T]):
    """What a call with retries produced: the parsed value or the last error, and what it cost."""

    value: T | None = None
    error: str = ""
    completion: Completion | None = None  # The last completion received, parsed or not.
    attempts: int = 0
    latency_ms: int = 0  # Summed over attempts that got an answer.
    input_tokens: int | None = None  # Summed over attempts: every attempt is paid for.
    output_tokens: int | None = None

    @property
    def ok(self) -> bool:
        return not self.error


def _add(total: int | None, value: int | None) -> int | None:
    if value is None:
        return total
    return (total or 0) + value


def complete_with_retries(
    backend: ChatBackend,
    messages: list[Message],
    parse: Callable[[str], T],
    *,
    policy: RetryPolicy,
    max_tokens: int = 2048,
    temperature: float = 0.0,
) -> CallOutcome[T]:
    """Call the backend and parse its answer, retrying parse errors and transient failures a bounded number of times.

    Never raises for a failed call (the outcome says why), except NotSupported, which is a configuration error.
    """
    outcome: CallOutcome[T] = CallOutcome()
    last_error: Exception | None = None
    for attempt in range(1, policy.max_retries + 2):
        outcome.attempts = attempt
        try:
            completion = backend.complete(messages, max_tokens=max_tokens, temperature=temperature)
        except NotSupported:
            raise
        except PermanentError as error:
            outcome.error = f"{type(error).__name__}: {error}"
            return outcome
        except (RateLimited, TransientError) as error:
            outcome.error = f"{type(error).__name__}: {error}"
            last_error = error
        except Exception as error:  # A backend bug must fail one item, not the batch.
            logger.exception("Backend %r raised an unexpected error", backend)
            outcome.error = f"{type(error).__name__}: {error}"
            return outcome
        else:
            outcome.completion = completion
            outcome.latency_ms += completion.latency_ms
            outcome.input_tokens = _add(outcome.input_tokens, completion.input_tokens)
            outcome.output_tokens = _add(outcome.output_tokens, completion.output_tokens)
            try:
                outcome.value = parse(completion.text)
            except ParseError as error:
                outcome.error = f"ParseError: {error.reason}"
                last_error = error
            except Exception as error:  # A parser bug, likewise.
                logger.exception("Parsing an answer of %r failed unexpectedly", backend)
                outcome.error = f"{type(error).__name__}: {error}"
                return outcome
            else:
                outcome.error = ""
                return outcome
        if attempt <= policy.max_retries:
            delay = policy.delay(attempt, last_error)
            logger.info("%r attempt %d failed (%s); retrying in %.1fs", backend, attempt, outcome.error, delay)
            policy.sleep(delay)
    return outcome


# --- The response cache: an answer is asked for once.


class ResponseCache(Protocol):
    """Where answers are kept between runs. Values are JSON-serialisable dicts; a DB-backed cache has the same two
    methods."""

    def get(self, key: str) -> dict[str, Any] | None: ...

    def set(self, key: str, value: dict[str, Any]) -> None: ...


class InMemoryCache:
    """A process-local ResponseCache, for tests and one-off scripts."""

    def __init__(self) -> None:
        self._values: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            value = self._values.get(key)
            return dict(value) if value is not None else None

    def set(self, key: str, value: dict[str, Any]) -> None:
        with self._lock:
            self._values[key] = dict(value)

    def __len__(self) -> int:
        return len(self._values)


def cache_key(backend_name: str, model: str, prompt_version: str, payload: Any) -> str:
    """sha256 of backend, model, prompt version and the exact input; any change gives a new key."""
    text = json.dumps(payload, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256("\x1f".join((backend_name, model, prompt_version, text)).encode()).hexdigest()


def safe_cache_get(cache: ResponseCache | None, key: str) -> dict[str, Any] | None:
    if cache is None:
        return None
    try:
        return cache.get(key)
    except Exception:  # A broken cache costs a request, never the pre-label.
        logger.exception("Response cache lookup failed")
        return None


def safe_cache_set(cache: ResponseCache | None, key: str, value: dict[str, Any]) -> None:
    if cache is None:
        return
    try:
        cache.set(key, value)
    except Exception:
        logger.exception("Response cache write failed")


@dataclass(frozen=True)
class CompletionResult(Generic[T]):
    """The parsed answer of a cached call with retries, or the last error, and what the call cost. A cache hit costs
    nothing: no latency, no tokens (0, not unknown), no attempts."""

    value: T | None
    error: str
    model: str  # As the service reported it, else as configured.
    raw_response: str  # The last answer received, parsed or not; "" when none came.
    latency_ms: int
    input_tokens: int | None
    output_tokens: int | None
    attempts: int
    cached: bool = False

    @property
    def ok(self) -> bool:
        return not self.error

    def details(self) -> dict[str, Any]:
        """Where the answer came from and what it cost, as the result records of pre-labels and key-facts name it."""
        return dict(
            model=self.model,
            raw_response=self.raw_response,
            latency_ms=self.latency_ms,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            attempts=self.attempts,
            cached=self.cached,
        )


def cached_completion(
    backend: ChatBackend,
    messages: list[Message],
    parse: Callable[[str], T],
    *,
    cache: ResponseCache | None,
    key: str,
    policy: RetryPolicy,
    **request_options: Any,
) -> CompletionResult[T]:
    """The cached answer under `key` when `parse` accepts it, else `complete_with_retries` (with `request_options`:
    max_tokens, temperature); only an answer that parsed is stored. Raises only what complete_with_retries raises."""
    hit = safe_cache_get(cache, key)
    if hit is not None:
        try:
            value = parse(hit["text"])
        except Exception:  # Stale or foreign entry: ask again.
            logger.warning("Ignoring an unusable cache entry %s", key)
        else:
            return CompletionResult(
                value=value, error="", model=hit.get("model", backend.model), raw_response=hit["text"],
                latency_ms=0, input_tokens=0, output_tokens=0, attempts=0, cached=True,
            )
    outcome = complete_with_retries(backend, messages, parse, policy=policy, **request_options)
    completion = outcome.completion
    if outcome.ok:
        safe_cache_set(cache, key, {"text": completion.text, "model": completion.model})
    return CompletionResult(
        value=outcome.value,
        error=outcome.error,
        model=completion.model if completion else backend.model,
        raw_response=completion.text if completion else "",
        latency_ms=outcome.latency_ms,
        input_tokens=outcome.input_tokens,
        output_tokens=outcome.output_tokens,
        attempts=outcome.attempts,
    )
