"""The offline verifier: the passage it reads, the shipped weights (what trained them, that they load whole, that a
score does not depend on the other sentences scored with it), its place in the labeler's decision, and the training
script (held-out sets refused; weights it writes load back)."""

import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

from assist.llm import offline_verifier
from assist.llm.offline import Findings, OfflineSimilarityBackend, decide
from assist.llm.offline_verifier import Verifier, passage
from assist.llm.offline_weighing import Weighing, shipped
from assist.parsing import ENTITY, NO_ERROR, OUT_OF_ARTICLE, RELATION
from benchmarks.offline_judge import HELD_OUT, TUNING

SOURCE = [
    "The council approved the new bus depot on Tuesday.",
    "Work will start in March and take eighteen months.",
    "The depot will hold 120 electric buses.",
    "Councillor Ruth Abara said the site had been empty since 2019.",
    "Residents had asked for a noise barrier along Mill Lane.",
]


def test_the_passage_is_the_three_closest_sentences_in_document_order():
    similarities = np.array([0.1, 0.9, 0.2, 0.8, 0.7])
    assert passage(SOURCE, similarities) == " ".join([SOURCE[1], SOURCE[3], SOURCE[4]])


def test_the_shipped_verifier_was_trained_on_tuning_sets_only():
    verifier = offline_verifier.shared()
    assert verifier.available
    sets = set(verifier.meta["sets"])
    assert sets and sets <= set(TUNING)
    assert not sets & HELD_OUT


def test_the_shipped_weights_load_whole_and_score_each_pair_alone():
    verifier = offline_verifier.shared()
    pair = (" ".join(SOURCE[:3]), "The council turned down the new bus depot on Tuesday.")
    other = (" ".join(SOURCE[2:]), "Residents wanted a noise barrier.")
    [alone] = verifier.scores([pair])
    together = verifier.scores([other, pair])
    assert 0.0 < alone < 1.0
    assert together[1] == pytest.approx(alone, abs=1e-5)
    assert verifier.scores([pair])[0] == alone


def test_weights_that_lack_a_trained_layer_are_refused(tmp_path):
    from safetensors.torch import load_file, save_file

    state = load_file(str(offline_verifier.WEIGHTS))
    dropped = next(name for name in state if ".layer." in name)
    del state[dropped]
    save_file(state, str(tmp_path / "verifier.safetensors"))
    (tmp_path / "meta.json").write_text(offline_verifier.META.read_text())
    broken = Verifier(tmp_path / "verifier.safetensors", tmp_path / "meta.json")
    with pytest.raises(ValueError, match="lacks 1 trained parameters"):
        broken.scores([("A passage.", "A sentence.")])


def findings(dialogue: bool = False, **changes) -> Findings:
    """Findings weighed with the shipped weights, as the labeler weighs them where the verifier runs."""
    base = dict(best=0, score=0.8, closest=(2, 0, 1), checked=(), absent=(), conflicts=(), opposites=())
    found = Findings(**{**base, **changes})
    return replace(found, weighed=shipped().probability(found, dialogue)) if found.verifier is not None else found


def test_the_verifier_alone_flags_a_relation_error_and_says_it_can_be_wrong():
    category, reason = decide(findings(verifier=0.95), SOURCE, 0.55)
    assert category == RELATION
    assert reason.startswith("Offline labeler (not an LLM): the verifier model finds it unsupported by its closest "
                             "source sentences S1, S2, S3 (score 0.95 for unsupported, chance of an error 0.")
    assert "can be wrong" in reason


def test_the_verifiers_category_follows_the_sentences_details():
    assert decide(findings(verifier=0.95, unknown_names=("Oslo",)), SOURCE, 0.55)[0] == OUT_OF_ARTICLE
    assert decide(findings(verifier=0.95, outside=True), SOURCE, 0.55)[0] == ENTITY


def test_a_low_verifier_score_and_no_check_flag_nothing():
    assert decide(findings(verifier=0.3), SOURCE, 0.55)[0] == NO_ERROR
    assert decide(findings(verifier=None), SOURCE, 0.55)[0] == NO_ERROR


def test_the_weighing_adds_the_evidence_as_its_weights_say():
    weighing = shipped()
    assert set(weighing.sets) == {"train9", "train10", "train15", "train16", "train17", "train18"}
    # Every check and a higher verifier score raise the chance of an error; a dialogue lowers it (both flag more
    # of a dialogue's faithful sentences, which retell turns in other words).
    checks = ("absent", "conflicts", "far_detail", "name_probe", "opposites", "reversed", "opposite_probe")
    assert all(weighing.weights[name] > 0 for name in (*checks, "verifier_log_odds"))
    assert weighing.weights["dialogue"] < 0
    found = findings(verifier=0.5, score=0.7)
    expected = weighing.bias + weighing.weights["cosine"] * 0.7  # log-odds of 0.5 are 0; no check, no dialogue
    assert found.weighed == pytest.approx(1 / (1 + np.exp(-expected)))
    assert findings(verifier=0.5, score=0.7, dialogue=True).weighed < found.weighed


def test_a_check_that_names_a_detail_comes_before_the_verifier():
    category, reason = decide(findings(verifier=0.9, opposites=(("turned down", "approved"),)), SOURCE, 0.55)
    assert category == RELATION
    assert "says 'turned down' where" in reason
    chance = findings(verifier=0.9, opposites=(("a", "b"),)).weighed
    assert reason.endswith(f"; weighed with the verifier model, it is flagged (score 0.90 for unsupported, chance of "
                           f"an error {chance:.2f}).")


def test_a_checks_finding_the_weighing_overrules_stays_in_the_reason():
    found = findings(verifier=0.02, opposites=(("turned down", "approved"),))
    category, reason = decide(found, SOURCE, 0.55)
    assert category == NO_ERROR and not found.content_flag
    assert reason == ("Offline labeler (not an LLM): the verifier model finds it supported by its closest source "
                      f"sentences (score 0.02 for unsupported, chance of an error {found.weighed:.2f}), so it is not "
                      "flagged; a check noted: it says 'turned down' where the closest source sentence S1 says "
                      "'approved'.")
    # Where the verifier did not run, the check decides alone.
    assert decide(findings(verifier=None, opposites=(("turned down", "approved"),)), SOURCE, 0.55)[0] == RELATION
    assert findings(verifier=0.6, opposites=(("turned down", "approved"),)).content_flag


def test_the_verifier_is_on_by_default_and_the_setting_turns_it_off(settings):
    from assist.config import backend_config
    from assist.llm.registry import build_backend

    default = build_backend("offline", backend_config())
    assert default.verifier is offline_verifier.shared()
    assert default.prompt_version == "offline-checks/v7 threshold=0.4"
    [found] = default.findings(SOURCE, ["The depot will hold 120 buses."], default.encode(SOURCE),
                               default.encode(["The depot will hold 120 buses."]))
    assert 0.0 < found.verifier < 1.0 and 0.0 < found.weighed < 1.0
    settings.FINEGRAIN_OFFLINE_VERIFIER = False
    settings.FINEGRAIN_OFFLINE_THRESHOLD = 0.55
    checks = build_backend("offline", backend_config())
    assert checks.verifier is None and checks.prompt_version == "offline-checks/v4.2 threshold=0.55"
    [found] = checks.findings(SOURCE, ["The depot will hold 120 buses."], default.encode(SOURCE),
                              default.encode(["The depot will hold 120 buses."]))
    assert found.verifier is None


def test_the_similarity_threshold_follows_the_verifier_setting_unless_it_is_set():
    from types import SimpleNamespace

    from assist.config import backend_config

    assert backend_config(SimpleNamespace(FINEGRAIN_OFFLINE_VERIFIER=True)).offline_threshold == 0.4
    assert backend_config(SimpleNamespace(FINEGRAIN_OFFLINE_VERIFIER=False)).offline_threshold == 0.55
    assert backend_config(SimpleNamespace(FINEGRAIN_OFFLINE_VERIFIER=True,
                                          FINEGRAIN_OFFLINE_THRESHOLD="0.5")).offline_threshold == 0.5


def test_with_the_verifier_a_sentence_gets_the_same_judgment_alone_or_inside_a_summary():
    backend = OfflineSimilarityBackend(model_path="", threshold=0.4, verifier=offline_verifier.shared())
    summary = ["The council approved a depot for 120 electric buses.", "Work starts in March.",
               "Ruth Abara said the site had been empty since 2015."]
    together = backend.label_summary(SOURCE, summary)
    alone = [backend.label_summary(SOURCE, [sentence])[0] for sentence in summary]
    assert [(j.category, j.reason) for j in together] == [(j.category, j.reason) for j in alone]


def test_the_training_script_refuses_held_out_sets():
    held_out = sorted(HELD_OUT)[0]
    result = subprocess.run([sys.executable, "-m", "benchmarks.train_verifier", "--sets", f"dev,{held_out}"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert f"held-out sets never train or tune the verifier: {held_out}" in result.stderr


def test_the_training_script_names_a_set_it_cannot_find():
    result = subprocess.run([sys.executable, "-m", "benchmarks.train_verifier", "--sets", "dev,tune99"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert "no such set in " in result.stderr and result.stderr.rstrip().endswith(": tune99")
    assert "Traceback" not in result.stderr


def test_weights_the_training_writes_load_back(tmp_path, monkeypatch):
    from benchmarks import train_verifier

    data = [(" ".join(SOURCE[:3]), "The council approved the depot.", 0),
            (" ".join(SOURCE[:3]), "The council rejected the depot.", 1)] * 4
    monkeypatch.setattr(train_verifier, "BATCH", 4)
    model, _ = train_verifier.train(data, epochs=1, log=lambda line: None)
    train_verifier.save(model, tmp_path, {"trained_from": train_verifier.TRAINED_FROM, "sets": ["dev"]})
    reloaded = Verifier(tmp_path / "verifier.safetensors", tmp_path / "meta.json")
    import torch

    with torch.inference_mode():
        expected = torch.sigmoid(model(train_verifier_tokenized(data[:1]))).numpy()
    # Stored in half precision: the reloaded model agrees to a few thousandths.
    assert reloaded.scores([data[0][:2]])[0] == pytest.approx(float(expected[0]), abs=5e-3)


def train_verifier_tokenized(data):
    from transformers import AutoTokenizer

    from assist.embeddings import bundled_model_path
    from assist.llm.offline_verifier import tokenize

    tokenizer = AutoTokenizer.from_pretrained(str(bundled_model_path()), local_files_only=True)
    return tokenize(tokenizer, [(p, s) for p, s, _ in data])


def test_the_weighing_script_refuses_sets_that_trained_the_verifier_or_are_held_out(tmp_path):
    for sets in ("train1", sorted(HELD_OUT)[0]):
        result = subprocess.run([sys.executable, "-m", "benchmarks.fit_weighing", "--sets", sets,
                                 "--out", str(tmp_path / "w.json")], capture_output=True, text=True, timeout=120)
        assert result.returncode == 2 and "trained the verifier or are held out" in result.stderr, result.stderr
    assert not (tmp_path / "w.json").exists()


def test_the_weighing_script_writes_weights_the_labeler_reads(tmp_path):
    out = tmp_path / "weighing.json"
    result = subprocess.run([sys.executable, "-m", "benchmarks.fit_weighing", "--sets", "train9,train10",
                             "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "| train9 | 224 |" in result.stdout and "| train10 | 221 |" in result.stdout
    weighing = Weighing.read(out)
    assert weighing.sets == ("train9", "train10")
    assert weighing.weights["verifier_log_odds"] > 0


def test_weights_without_every_feature_are_refused(tmp_path):
    path = tmp_path / "weighing.json"
    path.write_text('{"weights": {"absent": 1.0}, "bias": 0.0}', encoding="utf-8")
    with pytest.raises(ValueError, match="has no weight for conflicts, far_detail"):
        Weighing.read(path)
