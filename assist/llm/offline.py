"""The default backend: pre-labels without any network or LLM, by sentence similarity.

In the spirit of SBERTScore's precision (papers/002, eq. 1): a summary sentence is scored by its best cosine
similarity to any source sentence. A sentence with no source sentence close to it is likely to bring in outside
content, so below the threshold it is labeled "out_of_article", otherwise "no_error". It cannot see intrinsic errors
(a wrong name or number in an otherwise copied sentence scores high); the reason says plainly that it comes from this
labeler, so annotators weigh it accordingly.

The default threshold (0.35, FINEGRAIN_OFFLINE_THRESHOLD) was measured with the bundled all-MiniLM-L6-v2 on 42
hand-written summary sentences over four short documents (news, booking dialogue, medical, sport): faithful
paraphrases and fused, abstractive sentences scored 0.415-0.968; unsupported additions and off-topic sentences
scored -0.011-0.552. No threshold separates them all; every threshold from 0.32 to 0.41 flagged none of the 24
faithful sentences and 15 of the 18 unsupported ones (all off-topic ones; the three misses are on-topic inventions such
as a price that is not in the text, up to 0.552). 0.35 sits in that band with more room on the faithful side, since
real summaries compress several source sentences into one.
"""

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np

from assist import embeddings
from assist.config import DEFAULT_OFFLINE_THRESHOLD
from assist.contextual_mapping import similarity_matrix
from assist.parsing import NO_ERROR, OUT_OF_ARTICLE, SentenceJudgement

from .base import ChatBackend, Completion, Message, NotSupported

PROMPT_VERSION = "offline-similarity/v1"
QUOTE_WORDS = 12
_DOCUMENTS_KEPT = 16  # A document's vectors are reused for its other summaries, which usually come next.


def quote(text: str, words: int = QUOTE_WORDS) -> str:
    parts = text.split()
    return " ".join(parts[:words]) + (" ..." if len(parts) > words else "")


class OfflineSimilarityBackend(ChatBackend):
    name = "offline-similarity"
    prompt_version = PROMPT_VERSION

    def __init__(
        self,
        *,
        threshold: float = DEFAULT_OFFLINE_THRESHOLD,
        model_path: str | None = None,
        encode: Callable[[Sequence[str]], np.ndarray] | None = None,
        identity: str | None = None,
    ) -> None:
        self.threshold = threshold
        self.model_path = model_path
        self._encode = encode
        # Stored with every pre-label: which embedding model, which release, decided it.
        self.model = identity or str(embeddings.model_identity(model_path))
        self._documents: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def complete(self, messages: list[Message], *, max_tokens: int, temperature: float) -> Completion:
        raise NotSupported(
            "The offline backend has no language model: it cannot generate or vote on key-facts or write "
            "paraphrases. Import key-facts with the dataset, or set FINEGRAIN_LLM_BACKEND to openai or bedrock."
        )

    def encode(self, sentences: Sequence[str]) -> np.ndarray:
        if self._encode is not None:
            return self._encode(sentences)
        return embeddings.encode(sentences, model_path=self.model_path)

    def _source_vectors(self, source_sentences: Sequence[str]) -> np.ndarray:
        key = hashlib.sha256("\x1e".join(source_sentences).encode()).hexdigest()
        with self._lock:
            if key in self._documents:
                self._documents.move_to_end(key)
                return self._documents[key]
        vectors = self.encode(source_sentences)
        with self._lock:
            self._documents[key] = vectors
            while len(self._documents) > _DOCUMENTS_KEPT:
                self._documents.popitem(last=False)
        return vectors

    def label_summary(self, source_sentences: list[str], summary_sentences: list[str]) -> list[SentenceJudgement]:
        """One judgement per summary sentence, from its best match among the source sentences."""
        if not summary_sentences or not source_sentences:
            return self.judge(source_sentences, summary_sentences, None, None)
        return self.judge(
            source_sentences, summary_sentences, self._source_vectors(source_sentences), self.encode(summary_sentences)
        )

    def judge(
        self,
        source_sentences: Sequence[str],
        summary_sentences: Sequence[str],
        source_vectors: np.ndarray | None,
        summary_vectors: np.ndarray | None,
    ) -> list[SentenceJudgement]:
        """Label from vectors already computed, so that the assist pipeline embeds each document only once."""
        if not summary_sentences:
            return []
        if not source_sentences:
            reason = "Offline similarity labeler: the document has no sentences to compare this sentence with."
            return [SentenceJudgement(i, OUT_OF_ARTICLE, reason) for i in range(len(summary_sentences))]
        similarities = similarity_matrix(summary_vectors, source_vectors)
        best = similarities.argmax(axis=1)
        judgements = []
        for index, source_index in enumerate(best):
            score = float(similarities[index, source_index])
            closest = f'the closest source sentence is S{source_index + 1} ("{quote(source_sentences[source_index])}")'
            if score < self.threshold:
                category = OUT_OF_ARTICLE
                verdict = f"below the threshold {self.threshold:.2f}, so it may state something the document does not"
            else:
                category = NO_ERROR
                verdict = f"at or above the threshold {self.threshold:.2f}"
            reason = f"Offline similarity labeler (no LLM): {closest} with cosine similarity {score:.2f}, {verdict}."
            judgements.append(SentenceJudgement(index=index, category=category, reason=reason))
        return judgements
