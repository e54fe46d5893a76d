"""Evaluator throughput: SBERTScore over a project (reading the documents, embedding, scoring, storing every summary
and sentence score) against raw `model.encode` of the same sentences, side by side in one run. Since no document is
embedded twice, SBERTScore should run near the raw encoding speed.

    python -m benchmarks.evaluator_bench [--scale 1.0]

Raw and SBERTScore run document by document, back to back in ABBA order, as the machine is shared. Then a second
pass with the scores deleted but the document embeddings kept (only the summary sentences are embedded again), and
a third with everything current (nothing is embedded: the run only checks what is stored).
"""

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="documents per domain = 25 x scale")
    args = parser.parse_args()
    os.environ["DATABASE_URL"] = f"sqlite:///{tempfile.mkdtemp()}/evaluators.sqlite3"
    os.environ.pop("CELERY_BROKER_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.core.management import call_command

    from assist import embeddings
    from assist.evaluators.runs import evaluate_document
    from assist.evaluators.sbertscore import SBERTScoreEvaluator
    from assist.models import DocumentEmbedding, EvaluatorScore, EvaluatorSentenceScore
    from benchmarks.synthetic import write
    from corpus.importing import import_dataset
    from corpus.models import Document, Project, SummarySentence

    call_command("migrate", verbosity=0)
    data = write(ROOT / "benchmarks" / "out" / f"evaluators-{args.scale}.jsonl", scale=args.scale)
    project = Project.objects.create(slug="bench", name="bench")
    import_dataset(project=project, data=data.read_bytes(), filename=data.name)
    documents = list(Document.objects.filter(project=project).order_by("pk"))
    evaluator = SBERTScoreEvaluator()

    # The sentences SBERTScore must embed, per document: its sentences, then its summaries' distinct sentences.
    per_document = []
    for document in documents:
        texts = list(document.sentences.order_by("index").values_list("text", flat=True))
        targets = SummarySentence.objects.filter(summary__document=document).order_by("summary__model", "index")
        per_document.append(texts + list(dict.fromkeys(targets.values_list("text", flat=True))))
    sentences = [text for texts in per_document for text in texts]
    model = embeddings.load_model()
    model.encode(sentences[:256], batch_size=64, show_progress_bar=False)  # warm-up

    calls: list[int] = []
    real_encode = embeddings.encode

    def counting(texts, *a, **k):
        calls.append(len(texts))
        return real_encode(texts, *a, **k)

    def raw(texts) -> float:
        started = time.perf_counter()
        model.encode(texts, batch_size=64, convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False)
        return time.perf_counter() - started

    def sbertscore(document) -> float:
        embeddings.encode = counting
        started = time.perf_counter()
        try:
            evaluate_document(document, evaluator)
        finally:
            embeddings.encode = real_encode
        return time.perf_counter() - started

    # ABBA: raw first on even documents, SBERTScore first on odd ones, so a busy minute slows both sides alike.
    raw_seconds = evaluator_seconds = 0.0
    for number, (document, texts) in enumerate(zip(documents, per_document)):
        if number % 2 == 0:
            raw_seconds += raw(texts)
            evaluator_seconds += sbertscore(document)
        else:
            evaluator_seconds += sbertscore(document)
            raw_seconds += raw(texts)
    embedded = sum(calls)
    scores = EvaluatorScore.objects.filter(evaluator="sbertscore", status="ok").count()
    sentence_scores = EvaluatorSentenceScore.objects.count()

    # Scores deleted, document embeddings kept: only the summary sentences are embedded again.
    EvaluatorScore.objects.all().delete()
    calls.clear()
    started = time.perf_counter()
    for document in documents:
        sbertscore(document)
    rescore_seconds, rescore_embedded = time.perf_counter() - started, sum(calls)

    # Everything current: nothing to embed or store.
    calls.clear()
    started = time.perf_counter()
    for document in documents:
        sbertscore(document)
    current_seconds, current_embedded = time.perf_counter() - started, sum(calls)

    summaries = sum(1 for _ in EvaluatorScore.objects.filter(evaluator="sbertscore").iterator())
    result = {
        "documents": len(documents), "summaries": summaries, "sentences": len(sentences),
        "sentences_embedded_by_sbertscore": embedded, "document_embeddings_stored": DocumentEmbedding.objects.count(),
        "summary_scores": scores, "sentence_scores": sentence_scores,
        "raw_seconds": round(raw_seconds, 2), "sbertscore_seconds": round(evaluator_seconds, 2),
        "raw_sentences_per_second": round(len(sentences) / raw_seconds, 1),
        "sbertscore_sentences_per_second": round(embedded / evaluator_seconds, 1),
        "ratio": round((embedded / evaluator_seconds) / (len(sentences) / raw_seconds), 3),
        "rescore_with_stored_embeddings_seconds": round(rescore_seconds, 2),
        "rescore_sentences_embedded": rescore_embedded,
        "all_current_seconds": round(current_seconds, 2), "all_current_sentences_embedded": current_embedded,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
