"""SBERTScore (paper 002, section 3): sentence-embedding similarity between a summary and its source. Offline.

precision = mean over summary sentences of the best cosine to any source sentence (eq. 1);
recall = mean over source sentences of the best cosine to any summary sentence (eq. 2);
F1 = their harmonic mean, as BERTScore combines its precision and recall.
Sentence granularity on both sides ("Sent-Sent"), the setting the paper found best (table 4). Precision is the one
that tracks factuality (paper 5.1), so it stands for faithfulness; recall measures how much of the source the summary
covers, so it stands for completeness; F1 is benchmarked against the composite.

The document's sentences come from its stored embeddings (assist.models.DocumentEmbedding): a document is embedded
once, whatever the number of its summaries, and the summaries' sentences are embedded in one batch per document.
"""

from dataclasses import dataclass

import numpy as np

from assist.contextual_mapping import similarity_matrix
from assist.embeddings import model_identity

from .base import (
    DocumentInput,
    DocumentOutcome,
    Evaluator,
    Identity,
    SentenceResult,
    SummaryResult,
    Tools,
    harmonic_mean,
)

NAME = "sbertscore"
VERSION = "sbertscore/1"


@dataclass(frozen=True)
class SBERTScore:
    precision: float
    recall: float
    f1: float | None
    best_source: list[int]  # Per summary sentence: the most similar source sentence (first in document order on ties).
    best_cosine: list[float]


def sbertscore(source_vectors: np.ndarray, summary_vectors: np.ndarray) -> SBERTScore:
    """Eq. 1-2 on two embedding matrices (one row per sentence); both must be non-empty."""
    if len(source_vectors) == 0 or len(summary_vectors) == 0:
        raise ValueError("SBERTScore needs at least one source sentence and one summary sentence")
    cosines = similarity_matrix(summary_vectors, source_vectors).astype(np.float64)  # (summary, source)
    best_source = cosines.argmax(axis=1)
    best_cosine = cosines[np.arange(len(cosines)), best_source]
    precision = float(best_cosine.mean())
    recall = float(cosines.max(axis=0).mean())
    return SBERTScore(precision=precision, recall=recall, f1=harmonic_mean(precision, recall),
                      best_source=[int(i) for i in best_source], best_cosine=[float(c) for c in best_cosine])


class SBERTScoreEvaluator(Evaluator):
    name = NAME
    version = VERSION
    uses_llm = False
    dimension_sources = {"faithfulness": "precision", "completeness": "recall", "composite": "F1"}

    def __init__(self, *, model_path: str | None = None) -> None:
        self.model_path = model_path

    def identity(self) -> Identity:
        model = str(model_identity(self.model_path))
        return Identity(evaluator=NAME, evaluator_version=VERSION, model=model, embedding_model=model)

    def evaluate_document(self, document: DocumentInput, tools: Tools) -> DocumentOutcome:
        texts = list(dict.fromkeys(text for summary in document.summaries for text in summary.sentences))
        source = tools.source_vectors(texts) if document.source_sentences else None
        vectors = dict(zip(texts, tools.encode(texts))) if texts else {}
        results = []
        for summary in document.summaries:
            if source is None or not summary.sentences:
                results.append(SummaryResult.failed(summary.key, "the document or the summary has no sentences"))
                continue
            score = sbertscore(source, np.stack([vectors[text] for text in summary.sentences]))
            results.append(SummaryResult(
                key=summary.key,
                dimensions={"faithfulness": score.precision, "completeness": score.recall, "conciseness": None,
                            "composite": score.f1},
                scores={"precision": score.precision, "recall": score.recall, "f1": score.f1},
                sentences=[SentenceResult(score=cosine, details={"best_source": index, "cosine": cosine})
                           for index, cosine in zip(score.best_source, score.best_cosine)],
            ))
        return DocumentOutcome(summaries=results)
