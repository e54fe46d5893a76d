"""SBERTScore (paper 002, eq. 1-2) with the bundled all-MiniLM-L6-v2, and evaluator runs over a project."""

import math
from pathlib import Path

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from assist import embeddings
from assist.evaluators.runs import evaluator_run_start
from assist.evaluators.sbertscore import VERSION, sbertscore
from assist.llm.registry import clear_backends
from assist.models import DocumentEmbedding, EvaluatorScore, EvaluatorSentenceScore
from corpus.importing import DatasetError, import_dataset
from corpus.models import Job, SummarySentence
from exports.evaluators import import_evaluator_scores

SOURCE = [
    "The Harbour Street Library opened in 1928 next to the old fish market.",
    "It holds about forty thousand books, including a large collection of maritime maps.",
    "Last year the city council approved money to repair its leaking roof.",
    "Work on the roof is expected to finish in March.",
    "During the repairs, the reading room on the first floor stays closed.",
]
SUMMARY = [
    "The library opened in 1928 beside the fish market.",
    "Its collection includes many maritime maps.",
    "The roof repairs should be finished in March.",
]
SMALL_JSONL = Path(__file__).resolve().parents[1] / "fixtures" / "import" / "small.jsonl"


def cosine(a, b) -> float:
    """By hand, from the raw (unnormalised) model outputs."""
    dot = sum(float(x) * float(y) for x, y in zip(a, b))
    return dot / (math.sqrt(sum(float(x) ** 2 for x in a)) * math.sqrt(sum(float(y) ** 2 for y in b)))


def test_it_matches_a_hand_computation_with_the_bundled_model():
    model = embeddings.load_model()  # the bundled model: FINEGRAIN_EMBEDDING_MODEL is not set in tests
    raw_source = model.encode(SOURCE, normalize_embeddings=False)
    raw_summary = model.encode(SUMMARY, normalize_embeddings=False)
    matrix = [[cosine(s, d) for d in raw_source] for s in raw_summary]
    best = [max(range(len(SOURCE)), key=lambda j, row=row: row[j]) for row in matrix]
    precision = sum(row[j] for row, j in zip(matrix, best)) / len(SUMMARY)
    recall = sum(max(matrix[i][j] for i in range(len(SUMMARY))) for j in range(len(SOURCE))) / len(SOURCE)

    result = sbertscore(embeddings.encode(SOURCE), embeddings.encode(SUMMARY))

    assert result.best_source == best == [0, 1, 3]  # each summary sentence finds the sentence it restates
    assert result.best_cosine == pytest.approx([row[j] for row, j in zip(matrix, best)], abs=1e-5)
    assert result.precision == pytest.approx(precision, abs=1e-5)
    assert result.recall == pytest.approx(recall, abs=1e-5)
    assert result.f1 == pytest.approx(2 * precision * recall / (precision + recall), abs=1e-5)
    # Three close restatements of a five-sentence source: precise, but it leaves two source sentences out.
    assert result.precision > 0.7 and result.recall < result.precision


def test_ties_go_to_the_first_source_sentence_and_empty_inputs_are_refused():
    source = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    result = sbertscore(source, np.array([[2.0, 0.0]], dtype=np.float32))
    assert result.best_source == [0] and result.best_cosine == [1.0]
    assert result.recall == pytest.approx(2 / 3)
    with pytest.raises(ValueError):
        sbertscore(source[:0], source)


@pytest.fixture
def imported(project):
    import_dataset(project=project, data=SMALL_JSONL.read_bytes(), filename="small.jsonl")
    return project


@pytest.fixture(autouse=True)
def fresh_backends():
    clear_backends()
    yield
    clear_backends()



def run(*args, slug="alpha", evaluator="sbertscore"):
    call_command("run_evaluator", "--project", slug, "--evaluator", evaluator, *args, verbosity=0)


def test_run_evaluator_stores_every_score_with_what_made_it(imported, capsys):
    run()

    scores = EvaluatorScore.objects.filter(evaluator="sbertscore").select_related("job")
    assert scores.count() == 4 and {s.status for s in scores} == {"ok"}
    score = scores.get(summary__document__uid="t-news-1", summary__model="m-good")
    identity = str(embeddings.model_identity())
    assert (score.origin, score.evaluator_version, score.model, score.embedding_model, score.backend) == (
        "run", VERSION, identity, identity, "")
    assert score.job.kind == "evaluator" and score.job.status == Job.Status.DONE
    assert (score.faithfulness, score.completeness, score.composite) == (
        score.scores["precision"], score.scores["recall"], score.scores["f1"])
    assert score.conciseness is None
    sentences = list(EvaluatorSentenceScore.objects.filter(evaluator_score=score)
                     .order_by("summary_sentence__index"))
    assert len(sentences) == 2
    assert np.mean([s.score for s in sentences]) == pytest.approx(score.faithfulness)
    # "The council voted 7-2 to rebuild the pier." restates the document's first sentence.
    document = list(score.summary.document.sentences.order_by("index").values_list("text", flat=True))
    best = sentences[0].details["best_source"]
    assert "7-2" in document[best] and sentences[0].details["cosine"] == pytest.approx(sentences[0].score)
    assert "4 summaries scored, 0 already current, 0 failed" in capsys.readouterr().out


def test_each_document_is_embedded_once_and_a_rerun_skips_current_scores(imported, encode_calls, capsys):
    run()
    assert DocumentEmbedding.objects.count() == 2
    # One call per document carries its sentences and, with them, all its summaries' sentences.
    assert len(encode_calls) == 2
    for document in imported.documents.all():
        source = list(document.sentences.order_by("index").values_list("text", flat=True))
        [call] = [call for call in encode_calls if call[:len(source)] == source]
        summaries = SummarySentence.objects.filter(summary__document=document).values_list("text", flat=True)
        assert call[len(source):] == list(dict.fromkeys(summaries.order_by("summary__model", "index")))
    capsys.readouterr()

    run()

    assert len(encode_calls) == 2 and "0 summaries scored, 4 already current" in capsys.readouterr().out
    # A changed summary sentence makes its score stale: only that summary is scored again, from the stored
    # document embeddings (no source sentence is encoded again).
    sentence = SummarySentence.objects.get(summary__model="m-bad", summary__document__uid="t-news-1")
    sentence.text = "The council voted to rebuild the pier."
    sentence.save()
    run()
    assert encode_calls[2:] == [["The council voted to rebuild the pier."]]
    assert "1 summaries scored, 3 already current" in capsys.readouterr().out


def test_the_scores_come_from_the_stored_document_embeddings(imported):
    run()
    stored = DocumentEmbedding.objects.get(document__uid="t-news-1")
    matrix = stored.matrix()
    stored.vectors = matrix[::-1].copy().tobytes()  # the same vectors in reverse order, digest unchanged
    stored.save()
    EvaluatorScore.objects.all().delete()

    run()

    sentence = EvaluatorSentenceScore.objects.get(summary_sentence__summary__model="m-good",
                                                  summary_sentence__summary__document__uid="t-news-1",
                                                  summary_sentence__index=0)
    assert "7-2" in imported.documents.get(uid="t-news-1").sentences.get(
        index=len(matrix) - 1 - sentence.details["best_source"]).text


def test_a_run_started_from_a_service_records_its_progress(imported, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        job = evaluator_run_start(project=imported, evaluator="sbertscore")  # tasks run in-process in tests
    job.refresh_from_db()
    assert (job.kind, job.status, job.progress, job.total) == ("evaluator", "done", 2, 2)
    assert (job.result["scored"], job.result["failed"], job.result["evaluator"]) == (4, 0, "sbertscore")
    assert EvaluatorScore.objects.filter(job=job).count() == 4


def test_run_evaluator_refuses_bad_input_with_a_clear_error(imported, tmp_path):
    with pytest.raises(CommandError, match="no project"):
        run(slug="nope")
    with pytest.raises(CommandError, match="invalid choice"):
        run(evaluator="rouge")
    with pytest.raises(CommandError, match="finesure needs a language model"):
        run(evaluator="finesure")  # the default backend is the offline labeler
    with pytest.raises(CommandError, match="not a local sentence-transformers model directory"):
        run("--model", str(tmp_path))
    assert not EvaluatorScore.objects.exists() and not Job.objects.exists()


def test_scores_cannot_be_imported_under_a_built_in_or_unusable_evaluator_name(imported):
    data = b"uid,model,faithfulness\nt-news-1,m-good,0.5\n"
    with pytest.raises(DatasetError, match="built-in evaluator"):
        import_evaluator_scores(project=imported, evaluator="sbertscore", data=data, filename="s.csv")
    with pytest.raises(DatasetError, match="holds a control character"):
        import_evaluator_scores(project=imported, evaluator="two\nlines", data=data, filename="s.csv")
    with pytest.raises(DatasetError, match="is 101 characters; the limit is 100"):
        import_evaluator_scores(project=imported, evaluator="x" * 101, data=data, filename="s.csv")
    with pytest.raises(DatasetError, match="contains a NUL character"):
        import_evaluator_scores(project=imported, evaluator="judge\x00", data=data, filename="s.csv")
    assert import_evaluator_scores(project=imported, evaluator="g-eval_gpt-4o:v2", data=data, filename="s.csv") == 1
