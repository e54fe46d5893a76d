"""AI pre-labels with reasons (paper B.2): a category and a one-sentence reason per summary sentence.

Used twice: to select hallucinogenic documents and as the "machine-based reasoning" shown in fact verification
(paper 3.4). A summary is one request. A failure never escapes as an exception: after a bounded number of retries the
summary's sentences come back with status "failed" and the reason, and the rest of the batch goes on.
Answers are cached by a digest of everything that decides them, so re-running assistance costs nothing.
"""

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any, TypeVar

from django.conf import settings

from assist.config import backend_config
from assist.llm.base import (
    ChatBackend,
    InMemoryCache,  # noqa: F401 - tests and scripts import it from here.
    ResponseCache,
    RetryPolicy,
    SentenceLabeler,
    cache_key,
    cached_completion,
    complete_with_retries,
    safe_cache_get,
    safe_cache_set,
)
from assist.parsing import CATEGORY_LABELS, SentenceJudgement, parse_fact_check, parse_reason
from assist.prompts import FACT_CHECK_VERSION, JUDGMENT_REASON_VERSION, fact_check_messages, judgment_reason_messages

logger = logging.getLogger(__name__)
# FINEGRAIN_LLM_BACKEND names the kind of backend; a pre-label stores the name its backend reports.
PRELABEL_BACKEND_NAMES = {"offline": "offline-similarity"}


def prelabel_backend() -> str:
    """The backend name the pre-labels of the configured backend carry."""
    configured = settings.FINEGRAIN_LLM_BACKEND
    return PRELABEL_BACKEND_NAMES.get(configured, configured)

OK = "ok"
FAILED = "failed"

J = TypeVar("J")
R = TypeVar("R")


@dataclass(frozen=True)
class PreLabelResult:
    """One summary sentence's pre-label and where it came from. Costs (tokens, latency) are those of the summary's
    request, summed over its attempts and repeated on each of its sentences; a cache hit costs nothing (0)."""

    index: int  # 0-based, as in the stored segmentation.
    category: str  # One of assist.parsing.CATEGORIES; "" when failed.
    reason: str
    status: str  # "ok" or "failed".
    error: str
    backend: str
    model: str
    prompt_version: str
    raw_response: str
    latency_ms: int
    input_tokens: int | None
    output_tokens: int | None
    attempts: int  # Requests sent; 0 for a cache hit.
    cached: bool = False


def max_tokens_for(n_sentences: int) -> int:
    """Room for a JSON object with a one-sentence reason per summary sentence."""
    return min(8192, max(1024, 160 * n_sentences))


def _results(
    judgements: Sequence[SentenceJudgement] | None, n: int, *, error: str = "", **common: Any
) -> list[PreLabelResult]:
    if judgements is None:
        return [
            PreLabelResult(index=i, category="", reason="", status=FAILED, error=error, **common) for i in range(n)
        ]
    return [
        PreLabelResult(index=j.index, category=j.category, reason=j.reason, status=OK, error="", **common)
        for j in judgements
    ]


def _label_directly(
    labeler: SentenceLabeler, source_sentences: list[str], summary_sentences: list[str]
) -> list[PreLabelResult]:
    """The offline labeler needs no prompt; same result type, its own prompt version."""
    common: dict[str, Any] = dict(
        backend=labeler.name,
        model=labeler.model,
        prompt_version=labeler.prompt_version,
        raw_response="",
        input_tokens=None,
        output_tokens=None,
        attempts=1,
    )
    started = time.monotonic()
    try:
        judgements = labeler.label_summary(source_sentences, summary_sentences)
        if len(judgements) != len(summary_sentences):
            raise ValueError(f"{len(judgements)} judgements for {len(summary_sentences)} sentences")
    except Exception as error:
        logger.exception("Labeler %r failed", labeler)
        latency_ms = round((time.monotonic() - started) * 1000)
        return _results(None, len(summary_sentences), error=f"{type(error).__name__}: {error}",
                        latency_ms=latency_ms, **common)
    latency_ms = round((time.monotonic() - started) * 1000)
    return _results(judgements, len(summary_sentences), latency_ms=latency_ms, **common)


def prelabel_summary(
    backend: ChatBackend,
    source_sentences: Sequence[str],
    summary_sentences: Sequence[str],
    *,
    max_retries: int | None = None,
    cache: ResponseCache | None = None,
    sleep: Callable[[float], None] = time.sleep,
    base_delay: float = 1.0,
) -> list[PreLabelResult]:
    """Pre-label every sentence of one summary. Raises only NotSupported (a configuration error)."""
    source_sentences, summary_sentences = list(source_sentences), list(summary_sentences)
    n = len(summary_sentences)
    if n == 0:
        return []
    if isinstance(backend, SentenceLabeler):
        return _label_directly(backend, source_sentences, summary_sentences)

    if max_retries is None:
        max_retries = backend_config().llm_max_retries
    messages = fact_check_messages(source_sentences, summary_sentences)
    result = cached_completion(
        backend,
        messages,
        lambda text: parse_fact_check(text, n),
        cache=cache,
        key=cache_key(backend.name, backend.model, FACT_CHECK_VERSION, messages),
        policy=RetryPolicy(max_retries=max_retries, base_delay=base_delay, sleep=sleep),
        max_tokens=max_tokens_for(n),
    )
    details = dict(backend=backend.name, prompt_version=FACT_CHECK_VERSION, **result.details())
    if not result.ok:
        return _results(None, n, error=result.error, **details)
    return _results(result.value, n, **details)


# --- Many summaries at once.


@dataclass(frozen=True)
class SummaryJob:
    """One summary to pre-label; `key` is the caller's handle (a primary key, a uid)."""

    key: Any
    source_sentences: Sequence[str]
    summary_sentences: Sequence[str]


def run_concurrently(
    function: Callable[[J], R],
    items: Iterable[J],
    *,
    concurrency: int,
    on_done: Callable[[J, R], None] | None = None,
) -> list[R]:
    """Apply `function` to items on at most `concurrency` threads; results in input order.

    `on_done` runs in the calling thread as each item finishes (progress bars, database writes).
    """
    items = list(items)
    results: list[Any] = [None] * len(items)
    if concurrency <= 1 or len(items) <= 1:
        for position, item in enumerate(items):
            results[position] = function(item)
            if on_done:
                on_done(item, results[position])
        return results
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="assist") as pool:
        futures = {pool.submit(function, item): position for position, item in enumerate(items)}
        try:
            for future in as_completed(futures):
                position = futures[future]
                results[position] = future.result()
                if on_done:
                    on_done(items[position], results[position])
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            raise
    return results


def prelabel_many(
    backend: ChatBackend,
    jobs: Iterable[SummaryJob],
    *,
    max_retries: int | None = None,
    cache: ResponseCache | None = None,
    concurrency: int | None = None,
    sleep: Callable[[float], None] = time.sleep,
    on_done: Callable[[SummaryJob, list[PreLabelResult]], None] | None = None,
) -> list[list[PreLabelResult]]:
    """Pre-label many summaries on FINEGRAIN_LLM_CONCURRENCY threads. The requests-per-minute budget is enforced by
    the backend itself (assist.llm.registry wraps it), so it holds across all callers in the process."""
    config = backend_config()
    max_retries = config.llm_max_retries if max_retries is None else max_retries
    concurrency = config.llm_concurrency if concurrency is None else concurrency
    if isinstance(backend, SentenceLabeler):
        concurrency = 1  # Local CPU work: threads would only fight over the same cores.

    def run(job: SummaryJob) -> list[PreLabelResult]:
        return prelabel_summary(
            backend, job.source_sentences, job.summary_sentences, max_retries=max_retries, cache=cache, sleep=sleep
        )

    return run_concurrently(run, jobs, concurrency=concurrency, on_done=on_done)


# --- A reason for a judgment made elsewhere (the platform-set AI judgment of an FV attention check).


@dataclass(frozen=True)
class ReasonJob:
    source_sentences: Sequence[str]
    sentence: str
    category: str  # One of assist.parsing.CATEGORIES: the judgment to explain, already decided.


def reasons_for_judgments(
    backend: ChatBackend,
    jobs: Sequence[ReasonJob],
    *,
    max_retries: int | None = None,
    cache: ResponseCache | None = None,
    concurrency: int | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> list[str]:
    """The backend's one-sentence reason for each job's judgment, worded as its pre-label reasons are; "" where it
    failed after its retries (the caller has a fallback). Raises NotSupported for a backend without a language model.

    Cache reads and writes stay in the calling thread (a database cache must not be used from worker threads);
    only the requests run on FINEGRAIN_LLM_CONCURRENCY threads.
    """
    config = backend_config()
    max_retries = config.llm_max_retries if max_retries is None else max_retries
    concurrency = config.llm_concurrency if concurrency is None else concurrency
    messages = [judgment_reason_messages(list(job.source_sentences), job.sentence, CATEGORY_LABELS[job.category])
                for job in jobs]
    keys = [cache_key(backend.name, backend.model, JUDGMENT_REASON_VERSION, m) for m in messages]
    reasons = [""] * len(jobs)
    missing = []
    for position, key in enumerate(keys):
        hit = safe_cache_get(cache, key)
        try:
            reasons[position] = parse_reason(hit["text"]) if hit is not None else ""
        except Exception:  # Stale or foreign entry: ask again.
            reasons[position] = ""
        if not reasons[position]:
            missing.append(position)
    policy = RetryPolicy(max_retries=max_retries, sleep=sleep)

    def ask(position: int):
        return complete_with_retries(backend, messages[position], parse_reason, policy=policy, max_tokens=200)

    for position, outcome in zip(missing, run_concurrently(ask, missing, concurrency=concurrency)):
        if outcome.ok:
            reasons[position] = outcome.value
            safe_cache_set(cache, keys[position], {"text": outcome.completion.text, "model": outcome.completion.model})
        else:
            logger.warning("No reason from %r for a %s judgment: %s", backend, jobs[position].category, outcome.error)
    return reasons
