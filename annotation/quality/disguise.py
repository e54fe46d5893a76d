"""Making an attention check look like a real unit (BRIEF step 7): its highlights and its AI judgment.

Highlights come from the same embedding model and ranking as contextual mapping (assist.contextual_mapping), cut at
the number of sentences the HIT's real units highlight, so a check highlights as many source sentences as its
neighbours, chosen by the same rule. The AI judgment reads like a pre-label of the configured backend: the offline
labeler's reason names the closest source sentence and a similarity on the side of the threshold its category
needs (its own format, assist/llm/offline.py); with an LLM backend, the same LLM words the reason for the
platform-set category (`backend_reasons`, assist.prompts.judgment_reason_messages), as it worded the reasons of the
real units: a fixed wording would stand out among them. The templates in `ai_judgment` stand in only where the
backend fails.
"""

import logging
import random

import numpy as np

from assist.config import ConfigError, backend_config
from assist.contextual_mapping import similarity_matrix
from assist.llm.offline import quote
from assist.models import Category

from ..models import Document

logger = logging.getLogger(__name__)


def configured_prelabel_backend() -> str:
    from ..services.hits import prelabel_backend  # services.hits calls into this package: import late.

    return prelabel_backend()


class DocumentVectors:
    """A document's sentences and their embeddings, computed (and stored) once per document per build."""

    def __init__(self):
        self._documents: dict[int, tuple[list[str], np.ndarray]] = {}
        self._texts: dict[str, np.ndarray] = {}

    def prefetch(self, texts) -> None:
        """Embed the texts not seen yet in one batch (one model call for a whole build, not one per check)."""
        from assist import embeddings
        from assist.pipeline import backend_model_path

        missing = sorted({text for text in texts if text not in self._texts})
        if missing:
            for text, vector in zip(missing, embeddings.encode(missing, model_path=backend_model_path())):
                self._texts[text] = vector

    def get(self, document: Document) -> tuple[list[str], np.ndarray]:
        if document.pk not in self._documents:
            from assist.pipeline import StepReport, document_vectors

            source = list(document.sentences.order_by("index").values_list("text", flat=True))
            self._documents[document.pk] = (source, document_vectors(document, source, StepReport()))
        return self._documents[document.pk]

    def similarities(self, document: Document, text: str) -> tuple[list[str], np.ndarray]:
        source, vectors = self.get(document)
        if not source:
            return source, np.zeros(0, dtype=np.float32)
        self.prefetch([text])
        return source, similarity_matrix(self._texts[text][None, :], vectors)[0]


def highlights_for(vectors: DocumentVectors, document: Document, text: str, count: int | None) -> list[int] | None:
    """The `count` source sentences most similar to `text`, in document order (ties keep document order)."""
    if count is None:
        return None
    _, scores = vectors.similarities(document, text)
    order = np.argsort(-scores, kind="stable")
    return sorted(int(i) for i in order[:count])


def ai_judgment(vectors: DocumentVectors, document: Document, text: str, *, says_error: bool,
                rng: random.Random) -> tuple[str, str]:
    """(category, reason) for a foreign sentence, as the configured backend would word it.

    The category is platform-set (paper G.3): "no error" (wrong, the annotator must disagree) or "out-of-article"
    (right: the sentence comes from another document). With an LLM backend the reason here is the fallback for
    when the LLM cannot word it (`backend_reasons`).
    """
    source, scores = vectors.similarities(document, text)
    category = Category.OUT_OF_ARTICLE if says_error else Category.NO_ERROR
    best = int(scores.argmax()) if len(source) else 0
    closest_text = source[best] if source else ""
    if configured_prelabel_backend().startswith("offline"):
        threshold = backend_config().offline_threshold
        actual = float(scores[best]) if len(source) else 0.0
        closest = f'the closest source sentence is S{best + 1} ("{quote(closest_text)}")'
        if says_error:
            score = min(actual, threshold - rng.uniform(0.04, 0.25))
            verdict = f"below the threshold {threshold:.2f}, so it may state something the document does not"
        else:
            score = max(actual, min(0.97, threshold + rng.uniform(0.08, 0.45)))
            verdict = f"at or above the threshold {threshold:.2f}"
        return category, (f"Offline similarity labeler (no LLM): {closest} with cosine similarity {score:.2f}, "
                          f"{verdict}.")
    if says_error:
        reasons = (
            "The document never mentions this; no source sentence supports it, so it adds outside information.",
            f"Nothing in the document supports this claim; the closest passage, S{best + 1}, is about something "
            "else.",
            "This information does not appear anywhere in the source text, so the sentence is not grounded in it.",
        )
    else:
        reasons = (
            f"The sentence is consistent with the document, which states the same in S{best + 1}.",
            f"S{best + 1} of the document supports this sentence; nothing in it is contradicted.",
            f"The claim matches the source text (S{best + 1}) and adds no unsupported detail.",
        )
    return category, rng.choice(reasons)


def backend_reasons(vectors: DocumentVectors, judged: list[tuple[Document, str, str]]) -> list[str]:
    """The configured LLM's reason for each (document, sentence, category), in one concurrent batch; "" where
    there is no LLM (the offline labeler's reasons are already in its own format) or the backend failed."""
    if not judged or configured_prelabel_backend().startswith("offline"):
        return [""] * len(judged)
    from assist.cache import DatabaseCache
    from assist.llm import BackendError, get_backend
    from assist.prelabel import ReasonJob, reasons_for_judgments

    jobs = [ReasonJob(source_sentences=vectors.get(document)[0], sentence=text, category=category)
            for document, text, category in judged]
    try:
        return reasons_for_judgments(get_backend(), jobs, cache=DatabaseCache())
    except (BackendError, ConfigError) as error:  # NotSupported, or a backend that cannot be built
        logger.warning("Attention-check reasons fall back to templates: %s", error)
        return [""] * len(judged)
