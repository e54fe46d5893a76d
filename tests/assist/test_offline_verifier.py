"""The offline verifier: the passage it reads, the shipped weights (what trained them, that they load whole, that a
score does not depend on the other sentences scored with it, that its members are averaged), its place in the
labeler's decision, the weighing's trees, and the training and fitting scripts (held-out sets refused; what they write
loads back)."""

import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

from assist.llm import offline_verifier
from assist.llm.offline import Findings, OfflineSimilarityBackend, decide
from assist.llm.offline_verifier import Verifier, passage
from assist.llm.offline_weighing import CHECKS, FEATURES, Weighing, shipped
from assist.parsing import ENTITY, NO_ERROR, OUT_OF_ARTICLE, RELATION
from benchmarks.offline_judge import CALIBRATION, HELD_OUT, TUNING

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
    assert not sets & set(CALIBRATION)
    assert len(verifier.meta["members"]) == 3


def test_each_member_records_the_stages_that_trained_it():
    # A continued member's meta.json holds the one it continued from, read beside its starting weights; its sets are
    # those of every stage, so the held-out and calibration checks above see them all.
    from benchmarks.train_verifier import meta_of

    for weights, meta in offline_verifier.MEMBERS:
        assert meta_of(weights) == meta
    metas = offline_verifier.shared().meta["members"]
    for earlier, later in zip(metas, metas[1:]):
        assert later["continued_from"]["sets"] == earlier["sets"]
        assert later["sets"] == list(dict.fromkeys([*earlier["sets"], *later["stage_sets"]]))


def test_the_verifier_averages_its_members_log_odds():
    pair = (" ".join(SOURCE[:3]), "The council turned down the new bus depot on Tuesday.")
    members = [Verifier([member]).scores([pair])[0] for member in offline_verifier.MEMBERS]
    logit = np.mean([np.log(p / (1 - p)) for p in members])
    assert offline_verifier.shared().scores([pair])[0] == pytest.approx(1 / (1 + np.exp(-logit)), abs=1e-6)


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
    broken = Verifier([(tmp_path / "verifier.safetensors", tmp_path / "meta.json")])
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


def test_the_shipped_weighing_was_fitted_on_the_calibration_sets():
    assert set(shipped().sets) == set(CALIBRATION)


@pytest.mark.parametrize("verifier", [0.05, 0.3, 0.6, 0.9])
@pytest.mark.parametrize("dialogue", [False, True])
def test_a_check_that_fires_or_a_higher_verifier_score_never_lowers_the_chance_of_an_error(verifier, dialogue):
    from assist.llm.offline import FarDetail
    from assist.llm.offline_checks import Item

    item = Item(kind="name", text="Abara", values=frozenset({"abara"}))
    fired = {"absent": {"absent": (item,)}, "conflicts": {"conflicts": ((item, 1, "Okafor"),)},
             "far_detail": {"far": FarDetail(item, 4, 0.1)}, "opposites": {"opposites": (("rise", "fall"),)}}
    for score in (0.45, 0.7, 0.9):
        plain = findings(dialogue, verifier=verifier, score=score)
        for check, changes in fired.items():
            assert findings(dialogue, verifier=verifier, score=score, **changes).weighed >= plain.weighed, check
        assert findings(dialogue, verifier=min(verifier + 0.09, 0.99), score=score).weighed >= plain.weighed


def test_the_weighing_walks_its_trees_as_written():
    at = FEATURES.index
    # One stump on the verifier's log-odds, one tree on a check and the cosine: by hand, 0.2 + 0.7 - 0.3 = 0.6.
    weighing = Weighing(0.2, (
        ((at("verifier_log_odds"), 0.0, 1, 2, 0.0), (-1, 0.0, 0, 0, -0.5), (-1, 0.0, 0, 0, 0.7)),
        ((at("opposites"), 0.5, 1, 2, 0.0), (at("cosine"), 0.6, 3, 4, 0.0), (-1, 0.0, 0, 0, 1.1),
         (-1, 0.0, 0, 0, 0.4), (-1, 0.0, 0, 0, -0.3)),
    ))
    found = Findings(best=0, score=0.8, closest=(0,), checked=(), absent=(), conflicts=(), opposites=(),
                     verifier=0.9)
    assert weighing.probability(found, False) == pytest.approx(1 / (1 + np.exp(-0.6)))
    assert weighing.probability(replace(found, verifier=0.1), False) == pytest.approx(1 / (1 + np.exp(-(0.2 - 0.5 - 0.3))))
    assert weighing.probability(replace(found, opposites=(("a", "b"),)), False) == pytest.approx(
        1 / (1 + np.exp(-(0.2 + 0.7 + 1.1))))
    assert len(CHECKS) == 7 and FEATURES[:7] == CHECKS


def test_a_check_that_names_a_detail_comes_before_the_verifier():
    category, reason = decide(findings(verifier=0.9, opposites=(("turned down", "approved"),)), SOURCE, 0.55)
    assert category == RELATION
    assert "says 'turned down' where" in reason
    chance = findings(verifier=0.9, opposites=(("a", "b"),)).weighed
    assert reason.endswith(f"; weighed with the verifier model, it is flagged (score 0.90 for unsupported, chance of "
                           f"an error {chance:.2f}).")


def test_a_checks_finding_the_weighing_overrules_stays_in_the_reason():
    # The chance is set by hand below one half: the shipped trees weigh an opposite word heavily.
    found = replace(findings(verifier=0.02, opposites=(("turned down", "approved"),)), weighed=0.3)
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
    assert default.prompt_version == "offline-checks/v9 threshold=0.4"
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
    reloaded = Verifier([(tmp_path / "verifier.safetensors", tmp_path / "meta.json")])
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


def test_the_weighing_script_writes_trees_the_labeler_reads(tmp_path):
    out = tmp_path / "weighing.json"
    result = subprocess.run([sys.executable, "-m", "benchmarks.fit_weighing", "--sets", "train9,train10",
                             "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "| train9 | 224 |" in result.stdout and "| train10 | 221 |" in result.stdout
    weighing = Weighing.read(out)
    assert weighing.sets == ("train9", "train10") and weighing.trees


def test_the_trees_written_give_scikit_learns_probabilities():
    """fit_weighing reads the fitted trees from scikit-learn's private attributes: the walk must agree with
    predict_proba, on the features of sentences like the labeler's."""
    from benchmarks.fit_weighing import fit, weighing_of

    rng = np.random.default_rng(7)
    data = []
    for _ in range(600):
        x = [float(rng.random() < 0.2) for _ in CHECKS] + [rng.uniform(0.3, 1.0), rng.normal(0, 2),
                                                          float(rng.random() < 0.3), rng.uniform(0, 0.5),
                                                          float(rng.random() < 0.2), float(rng.integers(0, 3)),
                                                          float(rng.integers(0, 2)), float(rng.integers(0, 6)),
                                                          rng.uniform(-1, 0.2), rng.uniform(-1, 0.2)]
        error = x[8] + 2 * sum(x[:7]) - 3 * (x[7] - 0.6) + rng.normal(0, 1) > 0.5
        data.append({"x": x, "error": bool(error)})
    model = fit(data)
    weighing = weighing_of(model)
    expected = model.predict_proba(np.array([row["x"] for row in data]))[:, 1]
    assert [weighing.probability_of(row["x"]) for row in data] == pytest.approx(list(expected), abs=1e-9)


def test_a_weighing_of_other_features_is_refused(tmp_path):
    path = tmp_path / "weighing.json"
    path.write_text('{"features": ["absent"], "baseline": 0.0, "trees": []}', encoding="utf-8")
    with pytest.raises(ValueError, match="weighs other features than the labeler computes"):
        Weighing.read(path)


def test_a_tree_that_points_outside_itself_is_refused(tmp_path):
    import json

    path = tmp_path / "weighing.json"
    path.write_text(json.dumps({"features": list(FEATURES), "baseline": 0.0,
                                "trees": [[[0, 0.5, 1, 7, 0.0], [-1, 0, 0, 0, 0.1]]]}), encoding="utf-8")
    with pytest.raises(ValueError, match="points outside its tree"):
        Weighing.read(path)
