"""Contextual-mapping throughput (issue 3): sentences embedded per second by the whole pipeline (embedding,
ranking, storing mappings in the database) divided by raw `model.encode` throughput on the same sentences, in the
same run. Target: >= 0.85, with each document embedded exactly once.

    python -m benchmarks.mapping_bench [--scale 1.0]

The raw pass runs before and after the pipeline; the ratio uses their mean, as the machine is shared.
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

    from annotation.importing import import_dataset
    from annotation.models import Document, KeyFact, Project, SummarySentence
    from assist import embeddings
    from assist.models import ContextualMapping, DocumentEmbedding
    from assist.pipeline import assist_document
    from benchmarks.synthetic import write

    call_command("migrate", verbosity=0)
    data = write(ROOT / "benchmarks" / "out" / f"mapping-{args.scale}.jsonl", scale=args.scale)
    project = Project.objects.create(slug="bench", name="bench")
    import_dataset(project=project, data=data.read_bytes(), filename=data.name)
    documents = list(Document.objects.filter(project=project).order_by("pk"))

    # The same sentences the pipeline embeds: every document's sentences, then its summary sentences and key-facts.
    sentences = []
    for document in documents:
        sentences += list(document.sentences.order_by("index").values_list("text", flat=True))
        targets = list(SummarySentence.objects.filter(summary__document=document).values_list("text", flat=True))
        targets += list(KeyFact.objects.filter(document=document).values_list("text", flat=True))
        sentences += list(dict.fromkeys(targets))
    model = embeddings.load_model()
    model.encode(sentences[:256], batch_size=64)  # warm-up

    def raw() -> float:
        started = time.perf_counter()
        model.encode(sentences, batch_size=64, convert_to_numpy=True, normalize_embeddings=True)
        return time.perf_counter() - started

    raw_before = raw()
    calls: list[int] = []
    real_encode = embeddings.encode

    def counting(texts, *a, **k):
        calls.append(len(texts))
        return real_encode(texts, *a, **k)

    embeddings.encode = counting
    started = time.perf_counter()
    for document in documents:
        assist_document(document, steps=("mapping",))
    pipeline_seconds = time.perf_counter() - started
    embeddings.encode = real_encode
    raw_after = raw()

    embedded = sum(calls)
    raw_seconds = (raw_before + raw_after) / 2
    result = {
        "documents": len(documents), "sentences": len(sentences), "sentences_embedded_by_pipeline": embedded,
        "document_embeddings_stored": DocumentEmbedding.objects.count(),
        "mappings": ContextualMapping.objects.count(),
        "raw_seconds_before": round(raw_before, 2), "raw_seconds_after": round(raw_after, 2),
        "pipeline_seconds": round(pipeline_seconds, 2),
        "raw_sentences_per_second": round(len(sentences) / raw_seconds, 1),
        "pipeline_sentences_per_second": round(embedded / pipeline_seconds, 1),
        "ratio": round((embedded / pipeline_seconds) / (len(sentences) / raw_seconds), 3),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
