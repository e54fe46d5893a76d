"""Contextual-mapping throughput (paper 3.4): sentences embedded per second by the whole pipeline (embedding,
ranking, storing mappings in the database) divided by raw `model.encode` throughput on the same sentences, in the
same run. Target: >= 0.85, with each document embedded exactly once.

    python -m benchmarks.mapping_bench [--scale 1.0]

Raw and pipeline run document by document, back to back in ABBA order, as the machine is shared; one raw call
over the whole set is reported as well.
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
    os.environ["DATABASE_URL"] = f"sqlite:///{tempfile.mkdtemp()}/mapping.sqlite3"
    os.environ.pop("CELERY_BROKER_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.core.management import call_command

    from assist import embeddings
    from assist.models import ContextualMapping, DocumentEmbedding
    from assist.pipeline import assist_document
    from benchmarks.synthetic import write
    from corpus.importing import import_dataset
    from corpus.models import Document, KeyFact, Project, SummarySentence

    call_command("migrate", verbosity=0)
    data = write(ROOT / "benchmarks" / "out" / f"mapping-{args.scale}.jsonl", scale=args.scale)
    project = Project.objects.create(slug="bench", name="bench")
    import_dataset(project=project, data=data.read_bytes(), filename=data.name)
    documents = list(Document.objects.filter(project=project).order_by("pk"))

    # The same sentences the pipeline embeds, per document: its sentences, then its summary sentences and key-facts.
    per_document = []
    for document in documents:
        texts = list(document.sentences.order_by("index").values_list("text", flat=True))
        targets = list(SummarySentence.objects.filter(summary__document=document).values_list("text", flat=True))
        targets += list(KeyFact.objects.filter(document=document).values_list("text", flat=True))
        per_document.append(texts + list(dict.fromkeys(targets)))
    sentences = [text for texts in per_document for text in texts]
    model = embeddings.load_model()
    model.encode(sentences[:256], batch_size=64)  # warm-up

    calls: list[int] = []
    real_encode = embeddings.encode

    def counting(texts, *a, **k):
        calls.append(len(texts))
        return real_encode(texts, *a, **k)

    def raw(texts) -> float:
        started = time.perf_counter()
        model.encode(texts, batch_size=64, convert_to_numpy=True, normalize_embeddings=True)
        return time.perf_counter() - started

    def pipeline(document) -> float:
        embeddings.encode = counting
        started = time.perf_counter()
        try:
            assist_document(document, steps=("mapping",))
        finally:
            embeddings.encode = real_encode
        return time.perf_counter() - started

    # Document by document, raw and pipeline back to back, in ABBA order (raw first on even documents, pipeline
    # first on odd ones): the machine is shared, and this way a slow minute slows both sides alike.
    raw_seconds = pipeline_seconds = 0.0
    for number, (document, texts) in enumerate(zip(documents, per_document)):
        if number % 2 == 0:
            raw_seconds += raw(texts)
            pipeline_seconds += pipeline(document)
        else:
            pipeline_seconds += pipeline(document)
            raw_seconds += raw(texts)
    # The whole set in one call, as a check that per-document raw encoding is not handicapped by smaller batches.
    raw_whole = raw(sentences)

    embedded = sum(calls)
    result = {
        "documents": len(documents), "sentences": len(sentences), "sentences_embedded_by_pipeline": embedded,
        "document_embeddings_stored": DocumentEmbedding.objects.count(),
        "mappings": ContextualMapping.objects.count(),
        "raw_seconds": round(raw_seconds, 2), "pipeline_seconds": round(pipeline_seconds, 2),
        "raw_whole_set_one_call_seconds": round(raw_whole, 2),
        "raw_sentences_per_second": round(len(sentences) / raw_seconds, 1),
        "pipeline_sentences_per_second": round(embedded / pipeline_seconds, 1),
        "ratio": round((embedded / pipeline_seconds) / (len(sentences) / raw_seconds), 3),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
