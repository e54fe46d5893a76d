"""The offline verifier: a small model that reads a summary sentence together with the passage it retells and says
how likely the passage is not to support it.

Similarity and the rule-based checks see details (a number, a name, an opposite word) but not meaning: a reversed
cause and effect, a wrong verb or a conclusion the document does not draw pass them. The verifier is a cross-encoder
(the summary sentence and its passage in one input, so that every word of one attends to every word of the other),
the bundled all-MiniLM-L6-v2 with its layers fine-tuned and a one-number head on top. It was trained on the
project's hand-written sets (benchmarks/data/offline_judge_*.jsonl: documents with faithful summary sentences and
planted errors, by people who had not seen the labeler), plus copies of document sentences labeled faithful, so that
a sentence is not suspect merely for keeping the document's wording. `benchmarks/train_verifier.py` trains it and
writes the weights beside this module; `meta.json` there records what it was trained on.

The passage is the PASSAGE_SENTENCES document sentences most similar to the summary sentence, in document order, as
the offline labeler ranks them; the same function builds it in training and in use. Only the fine-tuned layers and
the head are shipped (the word embeddings are the bundled model's), in half precision: 21.6 MB per member.

Three members, their log-odds averaged. The first was trained in two stages (meta.json): on sets whose writers
reworded their faithful sentences and copied their errors closely, which taught it to suspect sentences that keep
the document's wording; then on sets whose writers mixed both, with made examples that break the same link
(benchmarks/synthetic_errors.py). The second continued the first for a third stage on more sets of mixed writing
(meta_continued.json): alone it ranked the newer writers' errors better and the older ones' worse; weighed with the
checks, their average did better than either member on both (benchmarks/RESULTS.md). The third continued the
second for a fourth stage on sets whose writers planted twice as many relation errors (meta_relations.json); with it
the weighed labeler did a little better on the calibration sets left out of the fit. The labeler uses the verifier
beside the checks, its score weighed with theirs (assist/llm/offline_weighing.py). On by default
(FINEGRAIN_OFFLINE_VERIFIER).
"""

import json
import threading
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path

import numpy as np

PASSAGE_SENTENCES = 3
MAX_TOKENS = 256  # The passage is cut (never the summary sentence) to fit.
BATCH = 32
HERE = Path(__file__).resolve().with_name("verifier")
WEIGHTS = HERE / "verifier.safetensors"
META = HERE / "meta.json"
# The same verifier continued for a third stage on more sets of mixed writing.
CONTINUED_WEIGHTS = HERE / "verifier_continued.safetensors"
CONTINUED_META = HERE / "meta_continued.json"
# That one continued for a fourth stage on sets whose writers planted twice as many relation errors (who did what,
# cause and effect, a wrong verb); the three members' log-odds are averaged.
RELATIONS_WEIGHTS = HERE / "verifier_relations.safetensors"
RELATIONS_META = HERE / "meta_relations.json"
MEMBERS = ((WEIGHTS, META), (CONTINUED_WEIGHTS, CONTINUED_META), (RELATIONS_WEIGHTS, RELATIONS_META))


def passage(source_sentences: Sequence[str], similarities: np.ndarray) -> str:
    """The PASSAGE_SENTENCES source sentences most similar to the summary sentence, in document order."""
    closest = sorted(int(i) for i in np.argsort(-similarities, kind="stable")[:PASSAGE_SENTENCES])
    return " ".join(source_sentences[i] for i in closest)


def build_model(trained_from: int):
    """The cross-encoder: the bundled encoder, layers below `trained_from` (and the embeddings) kept as they are."""
    import torch
    from transformers import AutoModel

    from assist.embeddings import bundled_model_path

    class CrossEncoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = AutoModel.from_pretrained(str(bundled_model_path()), local_files_only=True)
            self.head = torch.nn.Linear(self.encoder.config.hidden_size, 1)
            for name, parameter in self.encoder.named_parameters():
                parameter.requires_grad = trained(name, trained_from)

        def forward(self, batch):
            hidden = self.encoder(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            return self.head((hidden * mask).sum(1) / mask.sum(1)).squeeze(-1)

    return CrossEncoder()


def trained(name: str, trained_from: int) -> bool:
    """Whether an encoder parameter is fine-tuned (and shipped): the layers from `trained_from` up, and the pooler."""
    parts = name.split(".")
    if parts[0] == "encoder" and parts[1] == "layer":
        return int(parts[2]) >= trained_from
    return parts[0] == "pooler"


def tokenize(tokenizer, pairs: Sequence[tuple[str, str]]):
    return tokenizer([p for p, _ in pairs], [s for _, s in pairs], truncation="only_first",
                     max_length=MAX_TOKENS, padding=True, return_tensors="pt")


class Verifier:
    """The shipped verifier, its members loaded on first use, once per process."""

    def __init__(self, members: Sequence[tuple[Path, Path]] = MEMBERS) -> None:
        if not members:
            raise ValueError("a verifier needs at least one member (weights and their meta.json)")
        self.members = tuple((Path(weights), Path(meta)) for weights, meta in members)
        self._lock = threading.Lock()

    @cached_property
    def meta(self) -> dict:
        """Each member's meta.json, and the sets that trained any of them."""
        metas = [json.loads(meta.read_text(encoding="utf-8")) for _, meta in self.members]
        return {"sets": list(dict.fromkeys(name for meta in metas for name in meta["sets"])), "members": metas}

    @property
    def available(self) -> bool:
        return all(weights.is_file() and meta.is_file() for weights, meta in self.members)

    @cached_property
    def _loaded(self):
        import torch
        from safetensors.torch import load_file
        from transformers import AutoTokenizer

        from assist.embeddings import bundled_model_path

        with self._lock:
            models = []
            for (weights, _), meta in zip(self.members, self.meta["members"]):
                model = build_model(meta["trained_from"])
                state = {name: tensor.float() for name, tensor in load_file(str(weights)).items()}
                missing = [name for name, _ in model.named_parameters() if _needs(name, meta["trained_from"])
                           and name not in state]
                if missing:
                    raise ValueError(f"{weights} lacks {len(missing)} trained parameters, e.g. {missing[0]}")
                model.load_state_dict(state, strict=False)
                model.eval()
                models.append(model)
            tokenizer = AutoTokenizer.from_pretrained(str(bundled_model_path()), local_files_only=True)
            return models, tokenizer, torch

    def scores(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """For each (passage, summary sentence), the probability that the passage does not support the sentence: the
        members' log-odds averaged."""
        if not pairs:
            return np.zeros(0)
        models, tokenizer, torch = self._loaded
        out = []
        with torch.inference_mode():
            for start in range(0, len(pairs), BATCH):
                batch = tokenize(tokenizer, pairs[start:start + BATCH])
                logits = torch.stack([model(batch) for model in models]).mean(0)
                out.append(torch.sigmoid(logits).numpy())
        return np.concatenate(out).astype(float)


def _needs(name: str, trained_from: int) -> bool:
    return name.startswith("head.") or (name.startswith("encoder.") and trained(name[len("encoder."):], trained_from))


_shared: Verifier | None = None


def shared() -> Verifier:
    """The process-wide verifier (its weights are loaded once, on first use)."""
    global _shared
    if _shared is None:
        _shared = Verifier()
    return _shared
