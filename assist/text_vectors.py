"""Embeddings of summary sentences and key-facts, kept per project and model.

The contextual mapping embeds every summary sentence and key-fact of a project (paper 3.4). An attention check is
made of such a text, and disguising it needs the same vector (its highlights, the offline labeler's judgment: paper
G.3); a HIT build used to embed every check's text again, which at UniSumEval scale was most of an FV build's time
and needed the model in the worker's memory. A vector depends only on the text and the model, so it is kept by the
text's digest: the mapping stores what it embeds, and a build reads it back, embedding only texts nobody has yet.
"""

import hashlib
import os
from collections.abc import Iterable

import numpy as np

from . import embeddings
from .embeddings import ModelIdentity
from .models import TextEmbedding

# Under SQLite's limit on query parameters.
BATCH = 500


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def stored_vectors(project_id: int, identity: ModelIdentity, texts: Iterable[str]) -> dict[str, np.ndarray]:
    """The kept vectors of those `texts` that have one."""
    by_digest = {text_digest(text): text for text in texts}
    digests, found = list(by_digest), {}
    for start in range(0, len(digests), BATCH):
        for digest, vector in TextEmbedding.objects.filter(
                project_id=project_id, model_name=identity.name, model_version=identity.version,
                text_sha256__in=digests[start:start + BATCH]).values_list("text_sha256", "vector"):
            found[by_digest[digest]] = np.frombuffer(bytes(vector), dtype=np.float32)
    return found


def store_vectors(project_id: int, identity: ModelIdentity, pairs: Iterable[tuple[str, np.ndarray]]) -> None:
    """Keep (text, vector) pairs; a text kept already (by a mapping or a build running at the same time) is left as
    it is: the same model made the same vector."""
    rows = {text_digest(text): np.asarray(vector, dtype=np.float32).tobytes() for text, vector in pairs}
    TextEmbedding.objects.bulk_create(
        [TextEmbedding(project_id=project_id, model_name=identity.name, model_version=identity.version,
                       text_sha256=digest, vector=vector) for digest, vector in rows.items()],
        batch_size=BATCH, ignore_conflicts=True)


def text_vectors(project_id: int, texts: Iterable[str], *,
                 model_path: str | os.PathLike | None = None) -> dict[str, np.ndarray]:
    """Each distinct text's vector: the kept ones read, the others embedded in one model call and kept."""
    wanted = list(dict.fromkeys(texts))
    identity = embeddings.model_identity(model_path)
    found = stored_vectors(project_id, identity, wanted)
    missing = [text for text in wanted if text not in found]
    if missing:
        encoded = embeddings.encode(missing, model_path=model_path)
        found.update(zip(missing, encoded))
        store_vectors(project_id, identity, zip(missing, encoded))
    return found
