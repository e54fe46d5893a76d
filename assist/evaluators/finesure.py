"""FineSurE (papers 000/003): LLM fact checking per summary sentence and key-fact alignment, giving faithfulness,
completeness and conciseness (section 3.2, eq. 1-2).

Two parts, kept apart:
- offline: `finesure_scores` turns the two answers into the three scores; no model involved.
- LLM: `FineSurEEvaluator` asks the configured backend (two requests per summary: fact checking, and key-fact
  alignment when the document has key-facts), through the response cache, with the platform's parsing and retries.

Key-facts: the document's human key-facts (those the key-fact validation majority accepted), as in the paper. A
document without any yet falls back to its candidates that were not rejected (FineSurE's own fallback is
automatically extracted key-facts, appendix C); the score records which list it used. Without any key-fact,
completeness and conciseness are not given.
"""

from dataclasses import dataclass

from assist.llm.base import ChatBackend, cache_key
from assist.prelabel import max_tokens_for

from .base import (
    OK,
    CallRecord,
    DocumentInput,
    DocumentOutcome,
    Evaluator,
    Identity,
    SentenceResult,
    SummaryResult,
    Tools,
)
from .llm import Request, ask_all
from .parsing import parse_finesure_fact_check, parse_keyfact_alignment
from .prompts import (
    FINESURE_ALIGNMENT_VERSION,
    FINESURE_FACT_CHECK_VERSION,
    finesure_alignment_messages,
    finesure_fact_check_messages,
)

NAME = "finesure"
VERSION = "finesure/1"
NO_ERROR = "no_error"


@dataclass(frozen=True)
class FineSurEScores:
    faithfulness: float
    completeness: float | None
    conciseness: float | None
    composite: float | None


def finesure_scores(categories: list[str], alignment: list[list[int]] | None, n_sentences: int) -> FineSurEScores:
    """Eq. 1: sentences marked "no error" / sentences. Eq. 2, on the bipartite graph of (key-fact, sentence) edges:
    key-facts with an edge / key-facts, and sentences with an edge / sentences. `alignment` lists each key-fact's
    sentences (0-based); None when the document has no key-facts."""
    if n_sentences == 0 or len(categories) != n_sentences:
        raise ValueError(f"{len(categories)} categories for {n_sentences} sentences")
    faithfulness = sum(category == NO_ERROR for category in categories) / n_sentences
    if not alignment:
        return FineSurEScores(faithfulness, None, None, None)
    completeness = sum(bool(sentences) for sentences in alignment) / len(alignment)
    conciseness = len({s for sentences in alignment for s in sentences}) / n_sentences
    return FineSurEScores(faithfulness, completeness, conciseness, (faithfulness + completeness + conciseness) / 3)


def alignment_max_tokens(n_keyfacts: int) -> int:
    return min(8192, max(1024, 60 * n_keyfacts))


class FineSurEEvaluator(Evaluator):
    name = NAME
    version = VERSION
    uses_llm = True
    uses_keyfacts = True
    dimension_sources = {"faithfulness": "faithfulness (eq. 1)", "completeness": "completeness (eq. 2)",
                         "conciseness": "conciseness (eq. 2)", "composite": "mean of the three"}

    def __init__(self, *, backend: ChatBackend) -> None:
        self.backend = backend

    def identity(self) -> Identity:
        return Identity(evaluator=NAME, evaluator_version=VERSION, backend=self.backend.name, model=self.backend.model,
                        prompt_version=f"{FINESURE_FACT_CHECK_VERSION}+{FINESURE_ALIGNMENT_VERSION}")

    def _requests(self, document: DocumentInput, sentences: list[str]) -> list[Request]:
        backend, n = self.backend, len(sentences)
        messages = finesure_fact_check_messages(document.source_sentences, sentences)
        requests = [Request(key=cache_key(backend.name, backend.model, FINESURE_FACT_CHECK_VERSION, messages),
                            messages=messages, parse=lambda text, n=n: parse_finesure_fact_check(text, n),
                            max_tokens=max_tokens_for(n))]
        if document.keyfacts:
            m = len(document.keyfacts)
            messages = finesure_alignment_messages(document.keyfacts, sentences)
            requests.append(Request(key=cache_key(backend.name, backend.model, FINESURE_ALIGNMENT_VERSION, messages),
                                    messages=messages, parse=lambda text, m=m, n=n: parse_keyfact_alignment(text, m, n),
                                    max_tokens=alignment_max_tokens(m)))
        return requests

    def evaluate_document(self, document: DocumentInput, tools: Tools) -> DocumentOutcome:
        scorable = [summary for summary in document.summaries if summary.sentences and document.source_sentences]
        per_summary = [self._requests(document, summary.sentences) for summary in scorable]
        answers = ask_all(self.backend, [request for requests in per_summary for request in requests],
                          cache=tools.cache, policy=tools.policy, concurrency=tools.concurrency)
        results, position = {}, 0
        for summary, requests in zip(scorable, per_summary):
            mine = answers[position:position + len(requests)]
            position += len(requests)
            calls = [CallRecord.of(step, answer) for step, answer in zip(("fact_check", "keyfact_alignment"), mine)]
            failed = [call for call in calls if call.error]
            if failed:
                results[summary.key] = SummaryResult.failed(
                    summary.key, "; ".join(f"{call.step}: {call.error}" for call in failed), calls)
                continue
            judgements = mine[0].value
            alignment = mine[1].value if len(mine) > 1 else None
            scores = finesure_scores([category for category, _ in judgements], alignment, len(summary.sentences))
            keyfacts_of = [[k for k, sentences in enumerate(alignment or []) if s in sentences]
                           for s in range(len(summary.sentences))]
            results[summary.key] = SummaryResult(
                key=summary.key, status=OK,
                dimensions={"faithfulness": scores.faithfulness, "completeness": scores.completeness,
                            "conciseness": scores.conciseness, "composite": scores.composite},
                scores={"faithfulness": scores.faithfulness, "completeness": scores.completeness,
                        "conciseness": scores.conciseness},
                details={"keyfacts": document.keyfact_origin if document.keyfacts else "",
                         "n_keyfacts": len(document.keyfacts), "alignment": alignment},
                sentences=[SentenceResult(score=1.0 if category == NO_ERROR else 0.0, error=category != NO_ERROR,
                                          category=category, reason=reason, details={"keyfacts": keyfacts})
                           for (category, reason), keyfacts in zip(judgements, keyfacts_of)],
                calls=calls,
            )
        empty = "the document or the summary has no sentences"
        return DocumentOutcome(summaries=[results.get(summary.key) or SummaryResult.failed(summary.key, empty)
                                          for summary in document.summaries])
