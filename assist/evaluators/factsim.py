"""FactSim (paper 001, section 3): claims extracted from the source and from the summary, compared by embedding
similarity.

Two parts, kept apart:
- offline: `factsim_scores` compares the claims' embedding matrices. With sim = max(0, cosine) (paper 4.2):
  coverage f_V = mean over source claims of the best similarity to a summary claim (eq. 1);
  consistency f_N = mean over summary claims of the best similarity to a source claim (eq. 2);
  FactSim = their harmonic mean (eq. 3).
- LLM: `FactSimEvaluator` has the configured backend extract the claims: from the document passage by passage (the
  paper extracts them from each source text and concatenates them, so a claim made several times weighs more), and
  from each summary sentence by sentence, so that a claim is traced to its sentence.

Adapted to single documents of any domain: the paper's tuples are (subject, description) of one word each, made for
product reviews; here the subject may take up to three words and the description up to five. Claims are embedded
with the platform's sentence-transformers model (the paper used distiluse-base-multilingual-cased).
Consistency looks at what the summary says, so it stands for faithfulness; coverage for completeness; FactSim for
the composite. Per sentence: the mean best similarity of its claims (None for a sentence without claims).
"""

from dataclasses import dataclass

import numpy as np

from assist.contextual_mapping import similarity_matrix
from assist.embeddings import model_identity
from assist.llm.base import ChatBackend, cache_key

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
from .parsing import parse_claims, parse_sentence_claims
from .prompts import (
    FACTSIM_SOURCE_CLAIMS_VERSION,
    FACTSIM_SUMMARY_CLAIMS_VERSION,
    factsim_source_claims_messages,
    factsim_summary_claims_messages,
)

NAME = "factsim"
VERSION = "factsim/1"
PASSAGE_WORDS = 400  # The document is read in passages of about this many words, whole sentences each.

Claim = tuple[str, str]


@dataclass(frozen=True)
class FactSimScores:
    coverage: float  # f_V
    consistency: float  # f_N
    factsim: float
    best_source: list[int]  # Per summary claim: the most similar source claim.
    best_similarity: list[float]
    sentence_scores: list[float | None]


def claim_text(claim: Claim) -> str:
    """What is embedded for a claim: subject and description as one phrase (paper 3.1: one embedding per tuple)."""
    return " ".join(part for part in claim if part)


def factsim_scores(source_vectors: np.ndarray, summary_vectors: np.ndarray, claim_sentences: list[int],
                   n_sentences: int) -> FactSimScores:
    """Eq. 1-3. `claim_sentences[j]` is the summary sentence (0-based) of summary claim j; both sides non-empty."""
    if len(source_vectors) == 0 or len(summary_vectors) == 0:
        raise ValueError("FactSim needs at least one source claim and one summary claim")
    similarity = np.clip(similarity_matrix(summary_vectors, source_vectors).astype(np.float64), 0.0, None)
    best_source = similarity.argmax(axis=1)
    best = similarity[np.arange(len(similarity)), best_source]
    coverage = float(similarity.max(axis=0).mean())
    consistency = float(best.mean())
    total = coverage + consistency
    factsim = 2 * coverage * consistency / total if total > 0 else 0.0
    per_sentence: list[list[float]] = [[] for _ in range(n_sentences)]
    for sentence, value in zip(claim_sentences, best):
        per_sentence[sentence].append(float(value))
    return FactSimScores(coverage=coverage, consistency=consistency, factsim=factsim,
                         best_source=[int(i) for i in best_source], best_similarity=[float(v) for v in best],
                         sentence_scores=[float(np.mean(values)) if values else None for values in per_sentence])


def passages(sentences: list[str], words: int = PASSAGE_WORDS) -> list[list[str]]:
    """Consecutive sentences grouped into passages of about `words` words (a long sentence stays whole)."""
    groups: list[list[str]] = []
    count = words
    for sentence in sentences:
        if count >= words:
            groups.append([])
            count = 0
        groups[-1].append(sentence)
        count += len(sentence.split())
    return groups


def summary_claims_max_tokens(n_sentences: int) -> int:
    return min(8192, max(1024, 200 * n_sentences))


class FactSimEvaluator(Evaluator):
    name = NAME
    version = VERSION
    uses_llm = True
    dimension_sources = {"faithfulness": "consistency f_N", "completeness": "coverage f_V", "composite": "FactSim"}

    def __init__(self, *, backend: ChatBackend, model_path: str | None = None) -> None:
        self.backend = backend
        self.model_path = model_path

    def identity(self) -> Identity:
        return Identity(evaluator=NAME, evaluator_version=VERSION, backend=self.backend.name, model=self.backend.model,
                        embedding_model=str(model_identity(self.model_path)),
                        prompt_version=f"{FACTSIM_SOURCE_CLAIMS_VERSION}+{FACTSIM_SUMMARY_CLAIMS_VERSION}")

    def _request(self, version: str, messages, parse, max_tokens: int) -> Request:
        return Request(key=cache_key(self.backend.name, self.backend.model, version, messages), messages=messages,
                       parse=parse, max_tokens=max_tokens)

    def evaluate_document(self, document: DocumentInput, tools: Tools) -> DocumentOutcome:
        scorable = [summary for summary in document.summaries if summary.sentences]
        chunks = passages(document.source_sentences)
        requests = [self._request(FACTSIM_SOURCE_CLAIMS_VERSION, factsim_source_claims_messages(chunk), parse_claims,
                                  4096) for chunk in chunks]
        requests += [self._request(FACTSIM_SUMMARY_CLAIMS_VERSION, factsim_summary_claims_messages(summary.sentences),
                                   lambda text, n=len(summary.sentences): parse_sentence_claims(text, n),  # noqa: B008 (binds n now)
                                   summary_claims_max_tokens(len(summary.sentences))) for summary in scorable]
        answers = ask_all(self.backend, requests, cache=tools.cache, policy=tools.policy,
                          concurrency=tools.concurrency)
        source_answers, summary_answers = answers[:len(chunks)], answers[len(chunks):]
        document_calls = [CallRecord.of(f"source_claims[{i}]", answer) for i, answer in enumerate(source_answers)]
        source_claims = [claim for answer in source_answers if answer.ok for claim in answer.value]
        details = {"passages": len(chunks), "claims": [list(claim) for claim in source_claims]}
        failed_passages = [call for call in document_calls if call.error]
        problem = ""
        if not chunks:
            problem = "the document has no sentences"
        elif failed_passages:
            problem = "source claims: " + "; ".join(f"{call.step}: {call.error}" for call in failed_passages)
        elif not source_claims:
            problem = "no claim was extracted from the document"

        summary_claims = {summary.key: answer for summary, answer in zip(scorable, summary_answers)}
        texts = [claim_text(claim) for claim in source_claims]
        for answer in summary_answers:
            if answer.ok:
                texts += [claim_text(claim) for claims in answer.value for claim in claims]
        texts = list(dict.fromkeys(texts))  # Each distinct claim is embedded once.
        vectors = dict(zip(texts, tools.encode(texts))) if texts and not problem else {}
        results = []
        for summary in document.summaries:
            answer = summary_claims.get(summary.key)
            calls = [CallRecord.of("summary_claims", answer)] if answer is not None else []
            if answer is None:
                results.append(SummaryResult.failed(summary.key, "the summary has no sentences"))
            elif problem:
                results.append(SummaryResult.failed(summary.key, problem, calls))
            elif not answer.ok:
                results.append(SummaryResult.failed(summary.key, f"summary_claims: {answer.error}", calls))
            elif not any(answer.value):
                results.append(SummaryResult.failed(summary.key, "no claim was extracted from the summary", calls))
            else:
                results.append(self._score(summary, answer.value, source_claims, vectors, calls))
        return DocumentOutcome(summaries=results, document_details=details, document_calls=document_calls)

    @staticmethod
    def _score(summary, per_sentence: list[list[Claim]], source_claims: list[Claim], vectors: dict,
               calls: list[CallRecord]) -> SummaryResult:
        claims = [(index, claim) for index, sentence_claims in enumerate(per_sentence) for claim in sentence_claims]
        scores = factsim_scores(np.stack([vectors[claim_text(claim)] for claim in source_claims]),
                                np.stack([vectors[claim_text(claim)] for _, claim in claims]),
                                [index for index, _ in claims], len(summary.sentences))
        listed = [{"sentence": index, "claim": list(claim), "best_source_claim": best, "similarity": similarity}
                  for (index, claim), best, similarity in zip(claims, scores.best_source, scores.best_similarity)]
        return SummaryResult(
            key=summary.key, status=OK,
            dimensions={"faithfulness": scores.consistency, "completeness": scores.coverage, "conciseness": None,
                        "composite": scores.factsim},
            scores={"coverage": scores.coverage, "consistency": scores.consistency, "factsim": scores.factsim},
            details={"claims": listed, "n_source_claims": len(source_claims)},
            sentences=[SentenceResult(score=value, details={"claims": [c for c in listed if c["sentence"] == index]})
                       for index, value in enumerate(scores.sentence_scores)],
            calls=calls,
        )
