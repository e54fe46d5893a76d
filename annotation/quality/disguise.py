"""Making an attention check look like a real unit (paper G.3): its highlights and its AI judgment.

Highlights come from the same embedding model and ranking as contextual mapping (assist.contextual_mapping), cut at
the number of sentences the HIT's real units highlight, so a check highlights as many source sentences as its
neighbours, chosen by the same rule.

The AI judgment is what the configured backend says of the check's sentence, in every detail:
- The offline labeler is public and deterministic (the bundled model, a documented threshold, a reason that states
  its similarity figure): anybody can recompute what it says of a sentence, so a check shows exactly its genuine
  judgment (`offline_judgments`, the same call the assist pipeline makes for real sentences), never one the
  platform set. Which kind of FV check a sentence makes follows from that judgment; annotation.quality.injection
  chooses the sentences so that both kinds are made where the labeler's judgments allow.
- With an LLM backend the category is set by the platform (paper G.3) and the same LLM words the reason
  (`backend_reasons`, assist.prompts.judgment_reason_messages), as it worded the reasons of the real units: a fixed
  wording would stand out among them. The templates in `ai_judgment` stand in only where the backend fails.
"""

import logging
import random

import numpy as np

from assist.config import ConfigError
from assist.contextual_mapping import similarity_matrix
from assist.models import Category
from assist.parsing import NO_ERROR
from assist.prelabel import prelabel_backend
from corpus.models import Document

logger = logging.getLogger(__name__)


class DocumentVectors:
    """A document's sentences and their embeddings, computed (and stored) once per document per build; many
    documents and texts at once with `prefetch_documents` and `prefetch`. With a project, texts' vectors are the
    ones its contextual mapping kept (assist.text_vectors), embedded only when it has none."""

    def __init__(self, project_id: int | None = None):
        self.project_id = project_id
        self._documents: dict[int, tuple[list[str], np.ndarray]] = {}
        self._texts: dict[str, np.ndarray] = {}
        self._judgments: dict[int, dict[str, tuple[str, str]]] = {}

    def prefetch(self, texts) -> None:
        """Read or embed the texts not seen yet in one batch (one model call for a whole build at most, not one per
        check)."""
        from assist import embeddings
        from assist.pipeline import backend_model_path
        from assist.text_vectors import text_vectors

        missing = sorted({text for text in texts if text not in self._texts})
        if not missing:
            return
        if self.project_id is not None:
            self._texts.update(text_vectors(self.project_id, missing, model_path=backend_model_path()))
            return
        for text, vector in zip(missing, embeddings.encode(missing, model_path=backend_model_path())):
            self._texts[text] = vector

    def prefetch_documents(self, documents) -> None:
        """Read many documents' sentences and vectors at once: the stored vectors in one query, the documents
        without current ones embedded in one model call and stored (as assist.pipeline.document_vectors does)."""
        from assist import embeddings
        from assist.models import DocumentEmbedding
        from assist.pipeline import backend_model_path, sentences_digest
        from corpus.models import DocumentSentence

        wanted = list(dict.fromkeys(document.pk for document in documents if document.pk not in self._documents))
        if not wanted:
            return
        model_path = backend_model_path()
        identity = embeddings.model_identity(model_path)
        source: dict[int, list[str]] = {pk: [] for pk in wanted}
        stored = {}
        for start in range(0, len(wanted), 500):  # Under SQLite's limit on query parameters.
            chunk = wanted[start:start + 500]
            for document_id, text in (DocumentSentence.objects.filter(document_id__in=chunk)
                                      .order_by("document_id", "index").values_list("document_id", "text")):
                source[document_id].append(text)
            stored.update((row.document_id, row) for row in DocumentEmbedding.objects.filter(
                document_id__in=chunk, model_name=identity.name, model_version=identity.version))
        missing = []
        for pk in wanted:
            row = stored.get(pk)
            if row is not None and row.sentences_sha256 == sentences_digest(source[pk]):
                self._documents[pk] = (source[pk], row.matrix())
            else:
                missing.append(pk)
        if not missing:
            return
        encoded = embeddings.encode([text for pk in missing for text in source[pk]], model_path=model_path)
        start, rows = 0, []
        for pk in missing:
            vectors = encoded[start:start + len(source[pk])]
            start += len(source[pk])
            rows.append(DocumentEmbedding(document_id=pk, model_name=identity.name, model_version=identity.version,
                                          sentences_sha256=sentences_digest(source[pk]), dim=vectors.shape[1],
                                          vectors=vectors.tobytes()))
            self._documents[pk] = (source[pk], vectors)
        # A document's stale embedding (its sentences changed) is written over, as the pipeline does.
        DocumentEmbedding.objects.bulk_create(rows, batch_size=100, update_conflicts=True,
                                              unique_fields=["document", "model_name", "model_version"],
                                              update_fields=["sentences_sha256", "dim", "vectors"])

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

    def closest(self, document: Document, texts: list[str]) -> list[float]:
        """Each text's best cosine similarity to a source sentence of `document` (0 for a document without any)."""
        source, vectors = self.get(document)
        if not source or not texts:
            return [0.0] * len(texts)
        self.prefetch(texts)
        return [float(best) for best in similarity_matrix(np.stack([self._texts[t] for t in texts]), vectors)
                .max(axis=1)]

    def offline_judgments(self, labeler, document: Document, texts: list[str]) -> list[tuple[str, str]]:
        """(category, reason) the offline labeler gives each text as a summary sentence of `document`: its own
        `judge`, called with the document's stored embeddings exactly as the assist pipeline calls it for real
        summary sentences (assist.pipeline.prelabel_document). Remembered for the build."""
        cache = self._judgments.setdefault(document.pk, {})
        missing = [text for text in dict.fromkeys(texts) if text not in cache]
        if missing:
            source, vectors = self.get(document)
            self.prefetch(missing)
            judged = labeler.judge(source, missing, vectors, np.stack([self._texts[t] for t in missing]))
            for text, judgement in zip(missing, judged):
                cache[text] = (judgement.category, judgement.reason)
        return [cache[text] for text in texts]


def highlights_for(vectors: DocumentVectors, document: Document, text: str, count: int | None) -> list[int] | None:
    """The `count` source sentences most similar to `text`, strongest first as a real unit's (ties keep document
    order)."""
    if count is None:
        return None
    _, scores = vectors.similarities(document, text)
    order = np.argsort(-scores, kind="stable")
    return [int(i) for i in order[:count]]


def says_error(category: str) -> bool:
    """Whether an AI judgment says the sentence has an error (any category but "no error")."""
    return category != NO_ERROR


def offline_labeler():
    """The configured pre-labeling backend when it is the offline labeler, else None."""
    if not prelabel_backend().startswith("offline"):
        return None
    from assist.llm import get_backend
    from assist.llm.offline import OfflineSimilarityBackend

    backend = get_backend()
    return backend if isinstance(backend, OfflineSimilarityBackend) else None


def ai_judgment(vectors: DocumentVectors, document: Document, text: str, *, says_error: bool,
                rng: random.Random) -> tuple[str, str]:
    """(category, reason) for a foreign sentence under an LLM backend: the platform-set category (paper G.3), "no
    error" (wrong, the annotator must disagree) or "out-of-article" (right: the sentence comes from another
    document), with a template reason that stands in when the LLM cannot word one (`backend_reasons`)."""
    source, scores = vectors.similarities(document, text)
    category = Category.OUT_OF_ARTICLE if says_error else Category.NO_ERROR
    best = int(scores.argmax()) if len(source) else 0
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
    if not judged or prelabel_backend().startswith("offline"):
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
