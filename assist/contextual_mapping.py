"""Contextual mapping (paper 3.4): highlight the source sentences most similar to the target being judged.

A target is a summary sentence in fact verification or a key-fact in key-fact validation. The paper highlights the
top 30% of source sentences by similarity: a deliberately generous cut, so the relevant sentences are almost always
among the highlighted ones. Inputs are embedding matrices (see assist.embeddings); a document is embedded once and
all its targets are scored with one matrix product.
"""

import math
from dataclasses import dataclass

import numpy as np

DEFAULT_FRACTION = 0.3  # Paper 3.4: "top 30%".


@dataclass(frozen=True)
class TargetMapping:
    """Source sentences for one target: all of them by rank, their scores, and those to highlight."""

    ranked: list[int]  # Source indices, most similar first; ties keep document order.
    scores: list[float]  # Cosine similarity of each ranked source sentence, same order.
    highlighted: list[int]  # The top `highlight_count` sentences, in document order for display.


def highlight_count(n_source: int, fraction: float = DEFAULT_FRACTION) -> int:
    """ceil(fraction * n), at least 1 for a non-empty source: every target gets some context."""
    if not 0 < fraction <= 1:
        raise ValueError(f"The highlight fraction must be in (0, 1], got {fraction}")
    if n_source <= 0:
        return 0
    # Round first: 0.3 * 10 is 3.0000000000000004 in floating point, and must give 3, not 4.
    return max(1, min(n_source, math.ceil(round(fraction * n_source, 9))))


def _unit_rows(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim != 2:
        raise ValueError(f"Expected a 2-D array of vectors, got shape {vectors.shape}")
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


def similarity_matrix(target_vectors: np.ndarray, source_vectors: np.ndarray) -> np.ndarray:
    """Cosine similarities, shape (targets, sources); vectors are re-normalised so any embedding works."""
    targets, sources = _unit_rows(target_vectors), _unit_rows(source_vectors)
    if targets.shape[0] and sources.shape[0] and targets.shape[1] != sources.shape[1]:
        raise ValueError(f"Target and source vectors differ in dimension ({targets.shape[1]} != {sources.shape[1]})")
    if targets.shape[0] == 0 or sources.shape[0] == 0:
        return np.zeros((targets.shape[0], sources.shape[0]), dtype=np.float32)
    return targets @ sources.T


def rank_source_sentences(
    target_vectors: np.ndarray, source_vectors: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """For each target, source indices by decreasing similarity and the matching scores (both (targets, sources))."""
    similarities = similarity_matrix(target_vectors, source_vectors)
    # A stable sort on the negated scores keeps document order between equal scores.
    order = np.argsort(-similarities, axis=1, kind="stable")
    return order, np.take_along_axis(similarities, order, axis=1)


def map_targets(
    source_vectors: np.ndarray, target_vectors: np.ndarray, fraction: float = DEFAULT_FRACTION
) -> list[TargetMapping]:
    """Rank and highlight the source sentences for every target of one document."""
    order, scores = rank_source_sentences(target_vectors, source_vectors)
    count = highlight_count(order.shape[1], fraction)
    return [
        TargetMapping(
            ranked=[int(i) for i in ranked],
            scores=[float(s) for s in row_scores],
            highlighted=sorted(int(i) for i in ranked[:count]),
        )
        for ranked, row_scores in zip(order, scores)
    ]
