"""The benchmark export: simulated labels in, release rows out, scores recomputed by hand from the labels."""

import json
import tracemalloc
from collections import defaultdict

import pytest
from django.urls import reverse

from annotation.models import Annotator, Label
from assist.models import EvaluatorScore, EvaluatorSentenceScore
from corpus.models import KeyFact, Project, Summary
from exports import aggregation
from exports.aggregation import RELEASE_FIELDS
from exports.export import ExportOptions, export_benchmark
from exports.restore import import_benchmark
from exports.selectors import check_labels
from exports.simulate import simulate_annotations
from tests.work import add_assistance, import_generated

pytestmark = pytest.mark.usefixtures("numbers_worker")


@pytest.fixture
def simulated(project):
    import_generated(project, documents=4, summarizers=3, sentences=3)
    add_assistance(project)
    simulate_annotations(project=project, annotators=3, accuracy=0.8, seed=3)
    return project


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def majority(votes, tie):
    """None when no counted label exists: the export then leaves the score empty rather than guess."""
    if not votes:
        return None
    yes, no = sum(1 for v in votes if v), sum(1 for v in votes if not v)
    return tie if yes == no else yes > no


def share(flags, wanted):
    if not flags or any(flag is None for flag in flags):
        return None
    return flags.count(wanted) / len(flags)


def any_of(flags):
    return True if any(flag is True for flag in flags) else (None if None in flags else False)


def hand_scores(project):
    """Faithfulness, completeness, conciseness per (uid, model), from the Label rows, by hand (no exports.scores).

    Counted labels: submitted, not on an attention-check unit, grade passed or none. Ties: fv error, ka not aligned.
    """
    fv, ka = defaultdict(list), defaultdict(list)
    labels = Label.objects.filter(unit__hit__project=project, assignment__status="submitted",
                                  unit__attention_check__isnull=True).select_related("unit", "assignment")
    for label in labels:
        grade = getattr(label.assignment, "grade", None)
        if grade is not None and not (grade.passed if grade.override_passed is None else grade.override_passed):
            continue
        if label.unit.task == "fv":
            fv[label.unit.summary_sentence_id].append(label.has_error)
        elif label.unit.task == "ka":
            ka[label.unit.keyfact_id, label.unit.summary_sentence_id].append(label.aligned)
    scores = {}
    for document in project.documents.all():
        facts = list(document.keyfacts.filter(status=KeyFact.Status.ACCEPTED).order_by("index"))
        for summary in document.summaries.all():
            sentences = list(summary.sentences.order_by("index"))
            errors = [majority(fv[s.pk], True) for s in sentences]
            aligned = {(f.pk, s.pk): majority(ka[f.pk, s.pk], False) for f in facts for s in sentences}
            covered = [any_of([aligned[f.pk, s.pk] for s in sentences]) for f in facts]
            used = [any_of([aligned[f.pk, s.pk] for f in facts]) for s in sentences]
            scores[document.uid, summary.model] = (
                share(errors, False), share(covered, True) if facts else None, share(used, True) if facts else None)
    return scores


def test_it_exports_every_release_field_and_the_hand_computed_scores(simulated, tmp_path):
    result = export_benchmark(project=simulated, out=tmp_path / "bench.jsonl",
                              options=ExportOptions(annotator_labels=True, assistance=True, checks=True,
                                                    tables="csv", card=True))
    rows = read_jsonl(tmp_path / "bench.jsonl")
    assert result.rows == len(rows) == 12
    assert result.label_source == "simulated"
    expected = hand_scores(simulated)
    assert sum(faith is not None for faith, _, _ in expected.values()) >= 8
    assert sum(complete is not None for _, complete, _ in expected.values()) >= 4
    for row in rows:
        assert set(RELEASE_FIELDS) <= set(row)
        assert len(row["fact_verification_label"]) == len(row["sentences"]) == len(row["sentence_label"])
        assert len(row["keyfact_validation_label"]) == len(row["pred_keyfact"])
        assert len(row["keyfact_label"]) == len(row["keyfact"])
        faith, complete, concise = expected[row["uid"], row["model"]]
        assert (row["faithfulness_score"], row["completeness"], row["conciseness"]) == pytest.approx(
            (faith, complete, concise)), (row["uid"], row["model"])
        # The composite is the mean of all three or empty: never faithfulness alone (no human key-fact).
        if None in (faith, complete, concise):
            assert row["composite"] is None, (row["uid"], row["model"])
        else:
            assert row["composite"] == pytest.approx((faith + complete + concise) / 3)
        names = {item["annotator"] for items in row["annotator_labels"].values() for item in items}
        assert names and all(name.startswith("ann-") for name in names)
    names = {path.name for path in result.files}
    assert names == {"bench.jsonl", "bench.attention_checks.jsonl", "bench.summaries.csv", "bench.labels.csv",
                     "bench.agreement.csv", "bench.score_table.csv", "bench.card.md"}
    checks = read_jsonl(tmp_path / "bench.attention_checks.jsonl")
    assert len(checks) == check_labels(simulated).count()
    assert all({"expected", "answer", "correct", "kind"} <= set(check) for check in checks)
    card = (tmp_path / "bench.card.md").read_text()
    assert "SIMULATED" in card and "Inter-annotator agreement" in card


def test_a_document_without_human_key_facts_has_no_composite(simulated, tmp_path, client, manager):
    document = simulated.documents.order_by("uid").first()
    # Every annotator found every candidate key-fact of this document not useful: no human key-fact.
    Label.objects.filter(unit__task="kv", unit__keyfact__document=document).update(useful=False)
    KeyFact.objects.filter(document=document).update(status=KeyFact.Status.REJECTED)
    export_benchmark(project=simulated, out=tmp_path / "bench.jsonl", options=ExportOptions(card=True))
    rows = [row for row in read_jsonl(tmp_path / "bench.jsonl") if row["uid"] == document.uid]
    assert rows and all(row["keyfact"] == [] for row in rows)
    for row in rows:
        assert row["faithfulness_score"] is not None
        assert (row["completeness"], row["conciseness"], row["composite"]) == (None, None, None)
    card = (tmp_path / "bench.card.md").read_text()
    assert "never faithfulness alone" in card
    client.force_login(manager)
    page = client.get(reverse("exports_analytics", args=[simulated.slug])).content.decode()
    assert "have no composite (a dash here, empty in the export), never faithfulness alone" in page


def test_worker_ids_never_leave_the_platform(simulated, tmp_path):
    export_benchmark(project=simulated, out=tmp_path / "b.json",
                     options=ExportOptions(format="json", annotator_labels=True, checks=True, tables="parquet"))
    text = "".join(path.read_text(errors="ignore") for path in tmp_path.iterdir())
    for external_id in Annotator.objects.values_list("external_id", flat=True):
        assert external_id not in text
    assert len(json.loads((tmp_path / "b.json").read_text())) == 12


def test_a_round_trip_reproduces_the_scores(simulated, tmp_path):
    # Dawid-Skene's fields ride along: the import knows them as the export's own and reads nothing from them.
    # An evaluator's scores come back, per summary and per sentence.
    summary = Summary.objects.filter(document__project=simulated).order_by("pk").first()
    score = EvaluatorScore.objects.create(project=simulated, summary=summary, evaluator="SummaC Conv",
                                          faithfulness=0.25, composite=0.5)
    sentence = summary.sentences.order_by("index").last()
    EvaluatorSentenceScore.objects.create(evaluator_score=score, summary_sentence=sentence, score=0.1, error=True,
                                          category="entity")
    export_benchmark(project=simulated, out=tmp_path / "first.jsonl",
                     options=ExportOptions(annotator_labels=True, dawid_skene=True))
    fresh = Project.objects.create(slug="fresh", name="Fresh")
    import_benchmark(project=fresh, data=(tmp_path / "first.jsonl").read_bytes())
    export_benchmark(project=fresh, out=tmp_path / "second.jsonl", options=ExportOptions())
    first, second = read_jsonl(tmp_path / "first.jsonl"), read_jsonl(tmp_path / "second.jsonl")
    fields = ("faithfulness_score", "completeness", "conciseness", "fact_verification_label",
              "fact_verification_error_type", "keyfact_validation_label", "keyfact", "keyfact_label", "sentence_label")
    key = lambda row: (row["uid"], row["model"])  # noqa: E731
    assert [[row[f] for f in fields] for row in sorted(first, key=key)] == \
        [[row[f] for f in fields] for row in sorted(second, key=key)]
    back = EvaluatorScore.objects.get(project=fresh, evaluator="SummaC Conv")
    assert (back.summary.document.uid, back.summary.model) == (summary.document.uid, summary.model)
    assert (back.faithfulness, back.completeness, back.composite) == (0.25, None, 0.5)
    assert list(back.sentences.values_list("summary_sentence__index", "score", "error", "category")) == [
        (sentence.index, 0.1, True, "entity")]


def _peak_export(project, path) -> int:
    tracemalloc.start()
    export_benchmark(project=project, out=path, options=ExportOptions(annotator_labels=True))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


@pytest.mark.slow
def test_export_memory_does_not_grow_with_the_number_of_rows(db, tmp_path, monkeypatch):
    monkeypatch.setattr(aggregation, "DOCUMENT_CHUNK", 4)
    small, large = (Project.objects.create(slug=slug, name=slug) for slug in ("small", "large"))
    for target, documents in ((small, 8), (large, 32)):
        import_generated(target, documents=documents, summarizers=4, sentences=3)
        simulate_annotations(project=target, annotators=3, accuracy=0.9, seed=1)
    n_small = Label.objects.filter(unit__hit__project=small).count()
    n_large = Label.objects.filter(unit__hit__project=large).count()
    assert n_large >= 3.5 * n_small and n_large > 3000
    _peak_export(small, tmp_path / "warm.jsonl")  # imports and caches outside the measurement
    peak_small = _peak_export(small, tmp_path / "small.jsonl")
    peak_large = _peak_export(large, tmp_path / "large.jsonl")
    assert (tmp_path / "large.jsonl").stat().st_size > 3.5 * (tmp_path / "small.jsonl").stat().st_size
    assert peak_large < 1.5 * peak_small, (peak_small, peak_large)
