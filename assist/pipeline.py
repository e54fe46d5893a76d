"""The assist run for one document: embeddings, contextual mapping, pre-labels, key-facts (paper 3.4, B.2-B.3).

Every step skips what is already computed and current, so a re-run (or a task redelivered after a worker died)
does only the missing work. A document's sentences are embedded once per model and kept in DocumentEmbedding.
"""

import hashlib
import time
from dataclasses import dataclass, field

import numpy as np
from django.db import transaction

from corpus.models import Document, KeyFact, SummarySentence

from . import embeddings, text_vectors
from .cache import DatabaseCache
from .contextual_mapping import map_targets
from .keyfacts import generate_keyfacts, vote_keyfacts
from .llm.base import ChatBackend, NotSupported
from .llm.offline import OfflineSimilarityBackend
from .llm.registry import get_backend, get_voter_backends
from .models import ContextualMapping, DocumentEmbedding, KeyFactVote, PreLabel
from .prelabel import SummaryJob, prelabel_many
from .prompts import FACT_CHECK_VERSION

STEPS = ("mapping", "prelabels", "keyfacts")


@dataclass
class StepReport:
    mapped: int = 0
    prelabeled: int = 0
    prelabel_failures: int = 0
    keyfacts_generated: int = 0
    embedded: bool = False
    notes: list[str] = field(default_factory=list)

    def add(self, other: "StepReport") -> None:
        self.mapped += other.mapped
        self.prelabeled += other.prelabeled
        self.prelabel_failures += other.prelabel_failures
        self.keyfacts_generated += other.keyfacts_generated
        self.notes += [note for note in other.notes if note not in self.notes]


def sentences_digest(sentences: list[str]) -> str:
    return hashlib.sha256("\x1e".join(sentences).encode("utf-8")).hexdigest()


def document_vectors(document: Document, source: list[str], report: StepReport, *, targets: list[str] = (),
                     known: dict | None = None, model_path: str | None = None) -> np.ndarray:
    """The document's sentence embeddings: from the database when current, else computed once and stored.

    When they must be computed, `targets` (texts the run will map) are embedded in the same call and put in
    `known`: one call fills the model's batches better than two (benchmarks/mapping_bench.py).
    `model_path` names another model than the configured one (an evaluator run may choose its own).
    """
    model_path = model_path or backend_model_path()
    identity = embeddings.model_identity(model_path)
    digest = sentences_digest(source)
    stored = DocumentEmbedding.objects.filter(
        document=document, model_name=identity.name, model_version=identity.version
    ).first()
    if stored is not None and stored.sentences_sha256 == digest:
        return stored.matrix()
    known = {} if known is None else known
    extra = [text for text in dict.fromkeys(targets) if text not in known]
    if extra:
        known.update(text_vectors.stored_vectors(document.project_id, identity, extra))
        extra = [text for text in extra if text not in known]
    encoded = embeddings.encode(source + extra, model_path=model_path)
    vectors = encoded[:len(source)]
    known.update(zip(extra, encoded[len(source):]))
    text_vectors.store_vectors(document.project_id, identity, zip(extra, encoded[len(source):]))
    DocumentEmbedding.objects.update_or_create(
        document=document, model_name=identity.name, model_version=identity.version,
        defaults={"sentences_sha256": digest, "dim": vectors.shape[1], "vectors": vectors.tobytes()},
    )
    report.embedded = True
    return vectors


def backend_model_path() -> str | None:
    from .config import backend_config

    return backend_config().embedding_model or None


def _current_mapping(document: Document) -> dict:
    identity = embeddings.model_identity(backend_model_path())
    return dict(model_name=identity.name, model_version=identity.version, fraction=document.project.highlight_fraction)


def unmapped_targets(document: Document) -> tuple[list[SummarySentence], list[KeyFact]]:
    """The summary sentences and key-facts whose mapping is missing or stale."""
    current = _current_mapping(document)
    sentences = list(SummarySentence.objects.filter(summary__document=document).exclude(
        pk__in=ContextualMapping.objects.filter(summary_sentence__summary__document=document, **current)
        .values("summary_sentence_id")
    ))
    keyfacts = list(document.keyfacts.exclude(
        pk__in=ContextualMapping.objects.filter(keyfact__document=document, **current).values("keyfact_id")
    ))
    return sentences, keyfacts


def map_document(document: Document, report: StepReport, vectors: dict) -> None:
    """Rank source sentences for every summary sentence and key-fact whose mapping is missing or stale."""
    current = _current_mapping(document)
    fraction = current["fraction"]
    sentences, keyfacts = unmapped_targets(document)
    if not sentences and not keyfacts:
        return
    source_vectors = vectors["source"]
    target_vectors = encode_targets([s.text for s in sentences] + [k.text for k in keyfacts], vectors)
    mappings = map_targets(source_vectors, target_vectors, fraction)
    rows = []
    for target, mapping in zip([*sentences, *keyfacts], mappings):
        is_sentence = isinstance(target, SummarySentence)
        rows.append(ContextualMapping(
            summary_sentence=target if is_sentence else None, keyfact=None if is_sentence else target,
            ranked=[int(i) for i in mapping.ranked], scores=[round(float(s), 4) for s in mapping.scores],
            highlighted=[int(i) for i in mapping.highlighted], **current,
        ))
    with transaction.atomic():
        ContextualMapping.objects.filter(summary_sentence__in=sentences).delete()
        ContextualMapping.objects.filter(keyfact__in=keyfacts).delete()
        ContextualMapping.objects.bulk_create(rows)
    report.mapped += len(rows)


def encode_targets(texts: list[str], vectors: dict) -> np.ndarray:
    """Summary sentences and key-facts in one batch (kept for the project's HIT builds, assist.text_vectors);
    remembered for the offline labeler in the same run."""
    known = vectors.setdefault("targets", {})
    missing = [text for text in dict.fromkeys(texts) if text not in known]
    if missing:
        known.update(text_vectors.text_vectors(vectors["project"], missing, model_path=backend_model_path()))
    if not texts:
        return np.zeros((0, vectors["source"].shape[1]), dtype=np.float32)
    return np.stack([known[text] for text in texts])


def prelabel_document(document: Document, backend: ChatBackend, report: StepReport, vectors: dict) -> None:
    """Pre-label the summaries that lack a successful pre-label from this backend, model and prompt version.

    LLM requests for the document's summaries run on FINEGRAIN_LLM_CONCURRENCY threads (the backend itself keeps
    the requests-per-minute budget); the database writes happen here, in this thread.
    """
    offline = isinstance(backend, OfflineSimilarityBackend)
    version = backend.prompt_version if offline else FACT_CHECK_VERSION
    done = set(PreLabel.objects.filter(
        summary_sentence__summary__document=document, backend=backend.name, model=backend.model,
        prompt_version=version, status=PreLabel.Status.OK,
    ).values_list("summary_sentence_id", flat=True))
    source = vectors["source_text"]
    pending: list[list[SummarySentence]] = []
    for summary in document.summaries.prefetch_related("sentences"):
        sentences = list(summary.sentences.all())
        if sentences and not all(s.pk in done for s in sentences):
            pending.append(sentences)
    # The document's pre-labels are stored together, in one statement.
    labelled: list[SummarySentence] = []
    results: list[dict] = []
    if offline:
        for sentences in pending:
            texts = [s.text for s in sentences]
            started = time.perf_counter()
            judgements = backend.judge(source, texts, vectors["source"], encode_targets(texts, vectors),
                                       speakers=vectors["speakers"])
            latency = int((time.perf_counter() - started) * 1000)
            for sentence, j in zip(sentences, judgements):
                labelled.append(sentence)
                results.append(dict(category=j.category, reason=j.reason, status="ok", error="", raw_response="",
                                    latency_ms=latency, input_tokens=0, output_tokens=0, attempts=1,
                                    model=backend.model))
        store_prelabels(labelled, backend.name, version, results, report)
        return
    jobs = [SummaryJob(key=position, source_sentences=source, summary_sentences=[s.text for s in sentences])
            for position, sentences in enumerate(pending)]
    outcomes = prelabel_many(backend, jobs, cache=DatabaseCache())
    for sentences, outcome in zip(pending, outcomes):
        for sentence, r in zip(sentences, outcome):
            labelled.append(sentence)
            results.append(dict(category=r.category or "", reason=r.reason or "", status=r.status,
                                error=r.error or "", raw_response=r.raw_response or "", latency_ms=r.latency_ms or 0,
                                input_tokens=r.input_tokens or 0, output_tokens=r.output_tokens or 0,
                                attempts=r.attempts or 0, model=r.model or backend.model))
    store_prelabels(labelled, backend.name, version, results, report)


# What a stored pre-label takes from a new result of the same backend, model and prompt version (all but its key).
PRELABEL_RESULT_FIELDS = ("category", "reason", "status", "error", "raw_response", "latency_ms", "input_tokens",
                          "output_tokens", "attempts")


def store_prelabels(sentences: list[SummarySentence], backend_name: str, version: str, results: list[dict],
                    report: StepReport) -> None:
    """The pre-labels of `sentences` (the i-th result is the i-th sentence's) in one statement: a sentence's earlier
    one of the same backend, model and prompt version (a failure being retried) takes the new result."""
    if not sentences:
        return
    rows = [PreLabel(summary_sentence=sentence, backend=backend_name, prompt_version=version, **result)
            for sentence, result in zip(sentences, results)]
    PreLabel.objects.bulk_create(rows, update_conflicts=True,
                                 unique_fields=["summary_sentence", "backend", "model", "prompt_version"],
                                 update_fields=list(PRELABEL_RESULT_FIELDS))
    ok = sum(row.status == PreLabel.Status.OK for row in rows)
    report.prelabeled += ok
    report.prelabel_failures += len(rows) - ok


OFFLINE_KEYFACTS_NOTE = (
    "The offline backend cannot write key-facts: import them with the dataset (pred_keyfact / keyfact), "
    "or ask the site's operators to configure a language model (OpenAI or Bedrock)."
)


def generate_document_keyfacts(document: Document, backend: ChatBackend, report: StepReport, vectors: dict) -> None:
    """Paper B.3: one LLM proposes up to 20 key-facts, the voter LLMs keep those a majority does not reject."""
    if document.keyfacts.exists():
        return  # imported (or generated before): generation is skipped
    try:
        generation = generate_keyfacts(backend, vectors["source_text"], cache=DatabaseCache())
    except NotSupported:
        report.notes.append(OFFLINE_KEYFACTS_NOTE)
        return
    if not generation.candidates:
        report.notes.append(f"{document.uid}: key-fact generation failed ({generation.error or 'no candidates'})")
        return
    voters = get_voter_backends()
    verdicts = (vote_keyfacts(voters, vectors["source_text"], generation.candidates, cache=DatabaseCache())
                if voters else [])
    chosen = [verdicts[index] if verdicts else None for index in range(len(generation.candidates))]
    with transaction.atomic():
        facts = KeyFact.objects.bulk_create([
            KeyFact(document=document, index=index, text=candidate, origin=KeyFact.Origin.GENERATED,
                    status=KeyFact.Status.CANDIDATE if verdict is None or verdict.accepted else KeyFact.Status.REJECTED)
            for index, (candidate, verdict) in enumerate(zip(generation.candidates, chosen))])
        KeyFactVote.objects.bulk_create([
            KeyFactVote(keyfact=fact, backend=vote.backend, model=vote.model, accept=vote.accept,
                        reason=vote.reason or vote.error or "")
            for fact, verdict in zip(facts, chosen) for vote in (verdict.votes if verdict else [])])
    report.keyfacts_generated += len(generation.candidates)
    if not voters:
        report.notes.append("No voter backends configured (FINEGRAIN_LLM_VOTER_BACKENDS): "
                            "candidates were not voted on.")


def project_backend(project, backend: ChatBackend | None = None) -> ChatBackend:
    """The pre-labeling backend for `project` (default: the configured one). The offline labeler takes the project's
    threshold when it has one (Project.offline_threshold, set by calibrate_offline): every judgment of the project's
    sentences, pre-labels and attention checks alike, should come from this backend."""
    backend = backend or get_backend()
    if isinstance(backend, OfflineSimilarityBackend) and project.offline_threshold is not None:
        return backend.with_threshold(float(project.offline_threshold))
    return backend


def document_speakers(document: Document) -> list[str]:
    """Each sentence's speaker label in document order ("" where none), for the offline labeler: a summary names
    the speakers, and says who said what."""
    speakers = list(document.sentences.order_by("index").values_list("speaker", flat=True))
    return speakers if any(speakers) else []


def assist_document(document: Document, steps: tuple[str, ...] = STEPS,
                    backend: ChatBackend | None = None) -> StepReport:
    report = StepReport()
    source = list(document.sentences.order_by("index").values_list("text", flat=True))
    vectors: dict = {"source_text": source, "speakers": document_speakers(document), "project": document.project_id}
    backend = project_backend(document.project, backend)
    needs_vectors = "mapping" in steps or isinstance(backend, OfflineSimilarityBackend)
    if needs_vectors:
        sentences, keyfacts = unmapped_targets(document) if "mapping" in steps else ([], [])
        vectors["source"] = document_vectors(document, source, report,
                                             targets=[target.text for target in [*sentences, *keyfacts]],
                                             known=vectors.setdefault("targets", {}))
    # Key-facts first: new candidates then get their mappings in the same run.
    if "keyfacts" in steps:
        generate_document_keyfacts(document, backend, report, vectors)
    if "mapping" in steps:
        map_document(document, report, vectors)
    if "prelabels" in steps:
        prelabel_document(document, backend, report, vectors)
    return report
