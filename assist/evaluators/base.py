"""What every automatic evaluator takes and gives back, as plain data (no database, no Django).

A run (assist.evaluators.runs) reads one document with the summaries still to score into a DocumentInput, hands it
to an Evaluator with the Tools it may use (the document's stored embeddings, the encoder, an LLM backend with its
cache and retry policy), and stores the SummaryResults it gets back. Evaluators never touch the database, so the
computation can be tested on hand-made inputs and reused by scripts.
"""

import abc
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from assist.llm.base import ChatBackend, CompletionResult, ResponseCache, RetryPolicy

OK = "ok"
FAILED = "failed"


@dataclass(frozen=True)
class SummaryInput:
    key: Any  # The caller's handle (a primary key).
    sentences: list[str]


@dataclass(frozen=True)
class DocumentInput:
    key: Any
    source_sentences: list[str]
    summaries: list[SummaryInput]
    keyfacts: list[str] = field(default_factory=list)  # The key-facts FineSurE aligns (see finesure.py).
    keyfact_origin: str = ""  # "human" or "candidates": which list `keyfacts` is.


@dataclass(frozen=True)
class Identity:
    """Everything that decides an evaluator's scores besides its inputs; stored beside every score."""

    evaluator: str
    evaluator_version: str
    backend: str = ""
    model: str = ""
    embedding_model: str = ""
    prompt_version: str = ""

    def stored(self) -> tuple[str, str, str, str, str]:
        """In the order of assist.models.EvaluatorScore.identity()."""
        return (self.evaluator_version, self.backend, self.model, self.embedding_model, self.prompt_version)


@dataclass(frozen=True)
class CallRecord:
    """One LLM request (with its retries) behind a score: what came back and what it cost."""

    step: str
    model: str
    raw_response: str
    latency_ms: int
    input_tokens: int
    output_tokens: int
    attempts: int
    cached: bool
    error: str = ""

    @classmethod
    def of(cls, step: str, result: CompletionResult) -> "CallRecord":
        return cls(step=step, model=result.model, raw_response=result.raw_response, latency_ms=result.latency_ms,
                   input_tokens=result.input_tokens or 0, output_tokens=result.output_tokens or 0,
                   attempts=result.attempts, cached=result.cached, error=result.error)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class SentenceResult:
    """One summary sentence: `score` is higher when the sentence is more likely faithful (None: not scored)."""

    score: float | None
    error: bool | None = None  # The evaluator's own verdict, when it gives one.
    category: str = ""
    reason: str = ""
    details: dict = field(default_factory=dict)


@dataclass
class SummaryResult:
    key: Any
    status: str = OK
    error: str = ""
    dimensions: dict[str, float | None] = field(default_factory=dict)  # faithfulness ... composite
    scores: dict[str, float | None] = field(default_factory=dict)  # The evaluator's own names.
    details: dict = field(default_factory=dict)
    sentences: list[SentenceResult] = field(default_factory=list)
    calls: list[CallRecord] = field(default_factory=list)

    @classmethod
    def failed(cls, key: Any, error: str, calls: Sequence[CallRecord] = ()) -> "SummaryResult":
        return cls(key=key, status=FAILED, error=error, calls=list(calls))


@dataclass
class DocumentOutcome:
    summaries: list[SummaryResult]
    # What was computed once for the whole document (FactSim's source claims), and its LLM calls.
    document_details: dict | None = None
    document_calls: list[CallRecord] = field(default_factory=list)


@dataclass
class Tools:
    """What an evaluator may use. `source_vectors(extra)` returns the document's stored sentence embeddings; when
    they are not stored yet, they are computed and stored (a document is embedded once), and the `extra` texts the
    evaluator will need are embedded in the same call, which fills the model's batches better than two calls.
    `encode` embeds texts with the same model (those already embedded as `extra` are not embedded again)."""

    source_vectors: Callable[[Sequence[str]], np.ndarray]
    encode: Callable[[list[str]], np.ndarray]
    backend: ChatBackend | None = None
    cache: ResponseCache | None = None
    policy: RetryPolicy = field(default_factory=RetryPolicy)
    concurrency: int = 1


class Evaluator(abc.ABC):
    name: str = ""
    version: str = ""
    uses_llm: bool = False
    uses_keyfacts: bool = False  # Its scores depend on the document's key-facts (a changed list makes them stale).
    # Which of the evaluator's own scores stands for which human score, as the analytics page explains it.
    dimension_sources: dict[str, str] = {}

    @abc.abstractmethod
    def identity(self) -> Identity:
        """The identity its scores would be stored with."""

    @abc.abstractmethod
    def evaluate_document(self, document: DocumentInput, tools: Tools) -> DocumentOutcome:
        """Score every summary of `document`; never raises for one summary's failure (its result says why)."""


def inputs_digest(document: DocumentInput, summary: SummaryInput, *, keyfacts: bool = False) -> str:
    """sha256 of what a summary's score is computed from: a changed input makes the stored score stale."""
    payload = [document.source_sentences, summary.sentences, document.keyfacts if keyfacts else None]
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False).encode()).hexdigest()


def harmonic_mean(a: float | None, b: float | None) -> float | None:
    """2ab / (a + b); None when either is missing or the sum is not positive (cosines can be negative)."""
    if a is None or b is None or a + b <= 0:
        return None
    return 2 * a * b / (a + b)
