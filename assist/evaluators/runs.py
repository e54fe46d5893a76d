"""An evaluator run over a project: one Job row (status, progress, counts) and one unit of work per document.

Resumable: a summary whose stored score came from the same evaluator version, model(s) and prompt version(s), from
the same sentences (and key-facts), is skipped, so a re-run, or a task redelivered after a worker died, only does
what is missing or stale, and failed summaries are tried again. LLM answers come from the response cache when the
same request was answered before (assist.cache), exactly as for the pre-labels.
"""

import dataclasses
import math

import numpy as np
from django.db import transaction
from django.utils import timezone

from assist import embeddings
from assist.cache import DatabaseCache
from assist.config import backend_config
from assist.job_kinds import EVALUATOR
from assist.llm.base import RetryPolicy
from assist.models import EvaluatorDocumentResult, EvaluatorScore, EvaluatorSentenceScore
from assist.pipeline import StepReport, document_vectors, sentences_digest
from corpus.models import Document, Job, KeyFact, Project, job_start

from . import build_evaluator
from .base import OK, DocumentInput, DocumentOutcome, Evaluator, Identity, SummaryInput, Tools, inputs_digest

MAX_LISTED_FAILURES = 20  # Summary failures quoted on the Job row; the rest are counted (each score keeps its own).


@dataclasses.dataclass
class RunReport:
    scored: int = 0
    failed: int = 0
    current: int = 0  # Already scored with the same identity and inputs: skipped.
    embedded: bool = False
    failures: list[str] = dataclasses.field(default_factory=list)


def evaluator_config(*, project: Project, evaluator: str, backend: str = "", model_path: str = "") -> dict:
    """What a run uses, checked before anything is written: raises assist.config.ConfigError for an unknown evaluator
    or an unusable backend. The model is `model_path`, else the project's evaluator model, else the deployment's."""
    model_path = model_path or project.evaluator_model
    identity = build_evaluator(evaluator, backend=backend or None, model_path=model_path or None).identity()
    return {"evaluator": evaluator, "backend": backend, "model_path": model_path,
            "identity": dataclasses.asdict(identity)}


def _begin(config: dict) -> dict:
    """The row's result as the documents' tasks find it: the run's settings and counts at zero (job_record)."""
    return {**config, "scored": 0, "failed": 0, "current": 0, "embedded_documents": 0, "failures": [], "errors": []}


def evaluator_job_create(*, project: Project, evaluator: str, backend: str = "", model_path: str = "",
                         user=None) -> Job:
    """A running row for a run in this process (the run_evaluator command), without a task."""
    config = evaluator_config(project=project, evaluator=evaluator, backend=backend, model_path=model_path)
    return Job.objects.create(
        project=project, kind=EVALUATOR, status=Job.Status.RUNNING, total=project.documents.count(),
        started=timezone.now(), created_by=user if user is not None and user.is_authenticated else None,
        message=f"{evaluator} on {config['identity']['model']}", params=config, result=_begin(config))


def evaluator_run_start(*, project: Project, evaluator: str, backend: str = "", model_path: str = "",
                        user=None) -> Job:
    """Queue a run: its job's task queues one task per document, and the analytics page polls the row. Raises
    ConfigError before anything is written, and JobAlreadyOpen while a run of this evaluator is open."""
    config = evaluator_config(project=project, evaluator=evaluator, backend=backend, model_path=model_path)
    return job_start(kind=EVALUATOR, project=project, user=user, total=project.documents.count(), params=config,
                     exclusive=True, alike=("evaluator",))


def evaluator_run(*, job_id: int) -> None:
    Job.objects.select_related("project").get(pk=job_id).run(_queue_documents)


def _queue_documents(job: Job) -> None:
    job.result, job.message = _begin(job.params), f"{job.params['evaluator']} on {job.params['identity']['model']}"
    job.save(update_fields=["result", "message"])
    job.fan_out(list(job.project.documents.values_list("pk", flat=True)))


def evaluator_run_document(job_id: int, document_id: int) -> None:
    """The body of one task: idempotent, records its outcome on the Job row."""
    job = Job.objects.get(pk=job_id)
    if job.is_finished:
        return
    document = Document.objects.select_related("project").get(pk=document_id)
    config = job.result
    try:
        evaluator = build_evaluator(config["evaluator"], backend=config.get("backend") or None,
                                    model_path=config.get("model_path") or None)
        report = evaluate_document(document, evaluator, job=job, model_path=config.get("model_path") or None)
    except Exception as exc:  # one document's failure must not stop the run; it is reported on the job
        job_record(job_id, RunReport(), error=f"{document.uid}: {type(exc).__name__}: {exc}")
        raise
    else:
        job_record(job_id, report)
    finally:
        Job.part_done(job_id, document_id, f"{document.uid} done")


def keyfacts_for(document: Document) -> tuple[list[str], str]:
    """FineSurE's key-facts: the human ones (accepted by the validation majority), else the candidates not rejected."""
    facts = list(document.keyfacts.order_by("index").values_list("text", "status"))
    human = [text for text, status in facts if status == KeyFact.Status.ACCEPTED]
    if human:
        return human, "human"
    candidates = [text for text, status in facts if status != KeyFact.Status.REJECTED]
    return candidates, "candidates" if candidates else ""


def evaluate_document(document: Document, evaluator: Evaluator, *, job: Job | None = None,
                      model_path: str | None = None) -> RunReport:
    """Score the document's summaries that lack a current score from this evaluator; store the results."""
    report = RunReport()
    identity = evaluator.identity()
    source = list(document.sentences.order_by("index").values_list("text", flat=True))
    summaries = list(document.summaries.order_by("model").prefetch_related("sentences"))
    sentence_ids = {summary.pk: [s.pk for s in sorted(summary.sentences.all(), key=lambda s: s.index)]
                    for summary in summaries}
    uses_keyfacts = evaluator.uses_keyfacts
    keyfacts, origin = keyfacts_for(document) if uses_keyfacts else ([], "")
    inputs = DocumentInput(
        key=document.pk, source_sentences=source, keyfacts=keyfacts, keyfact_origin=origin,
        summaries=[SummaryInput(key=summary.pk, sentences=[s.text for s in sorted(summary.sentences.all(),
                                                                                  key=lambda s: s.index)])
                   for summary in summaries])
    digests = {summary.key: inputs_digest(inputs, summary, keyfacts=uses_keyfacts) for summary in inputs.summaries}
    stored = {
        row.summary_id: (row.identity(), row.inputs_sha256)
        for row in EvaluatorScore.objects.filter(evaluator=identity.evaluator, summary__document=document,
                                                 status=EvaluatorScore.Status.OK)
        .only("summary_id", "evaluator_version", "backend", "model", "embedding_model", "prompt_version",
              "inputs_sha256")
    }
    pending = [summary for summary in inputs.summaries
               if stored.get(summary.key) != (identity.stored(), digests[summary.key])]
    report.current = len(inputs.summaries) - len(pending)
    if not pending:
        return report
    config = backend_config()
    step = StepReport()
    known: dict[str, np.ndarray] = {}  # Texts embedded in this document's run, so none is embedded twice.

    def encode(texts: list[str]) -> np.ndarray:
        missing = [text for text in dict.fromkeys(texts) if text not in known]
        if missing:
            known.update(zip(missing, embeddings.encode(missing, model_path=model_path)))
        return np.stack([known[text] for text in texts]) if texts else np.zeros((0, 0), dtype=np.float32)

    tools = Tools(
        source_vectors=lambda extra=(): document_vectors(document, source, step, targets=list(extra), known=known,
                                                         model_path=model_path),
        encode=encode,
        backend=getattr(evaluator, "backend", None), cache=DatabaseCache(),
        policy=RetryPolicy(max_retries=config.llm_max_retries), concurrency=config.llm_concurrency,
    )
    outcome = evaluator.evaluate_document(dataclasses.replace(inputs, summaries=pending), tools)
    store_outcome(document=document, job=job, identity=identity, outcome=outcome, digests=digests,
                  sentence_ids=sentence_ids, inputs=inputs)
    report.embedded = step.embedded
    for result in outcome.summaries:
        if result.status == OK:
            report.scored += 1
        else:
            report.failed += 1
            report.failures.append(f"{document.uid}: {result.error}")
    return report


def _number(value) -> float | None:
    """JSON and PostgreSQL take no NaN: an undefined score is None."""
    return None if value is None or not math.isfinite(value) else float(value)


# What a stored score takes from a new run of the same evaluator on the same summary (all but its key and when it
# was first made).
SCORE_FIELDS = ("project", "origin", "job", "evaluator_version", "backend", "model", "embedding_model",
                "prompt_version", "inputs_sha256", "status", "error", *EvaluatorScore.DIMENSIONS, "scores", "details",
                "calls", "latency_ms", "input_tokens", "output_tokens", "updated")


@transaction.atomic
def store_outcome(*, document: Document, job: Job | None, identity: Identity, outcome: DocumentOutcome,
                  digests: dict, sentence_ids: dict, inputs: DocumentInput) -> None:
    """The document's scores in a few statements whatever its number of summaries and sentences: the scores
    written over the earlier ones, their sentence scores replaced."""
    summarizers = dict(document.summaries.values_list("pk", "model"))
    scores = []
    for result in outcome.summaries:
        calls = [call.as_dict() for call in result.calls]
        scores.append(EvaluatorScore(
            evaluator=identity.evaluator, summary_id=result.key,
            project_id=document.project_id, origin=EvaluatorScore.Origin.RUN, job=job,
            evaluator_version=identity.evaluator_version, backend=identity.backend, model=identity.model,
            embedding_model=identity.embedding_model, prompt_version=identity.prompt_version,
            inputs_sha256=digests[result.key], status=result.status, error=result.error,
            **{name: _number(result.dimensions.get(name)) for name in EvaluatorScore.DIMENSIONS},
            scores={name: _number(value) for name, value in result.scores.items()},
            details={"summarizer": summarizers.get(result.key, ""), **result.details}, calls=calls,
            latency_ms=sum(call["latency_ms"] for call in calls),
            input_tokens=sum(call["input_tokens"] for call in calls),
            output_tokens=sum(call["output_tokens"] for call in calls),
        ))
    # The primary keys come back, those of the rows written over included (PostgreSQL and SQLite return them).
    EvaluatorScore.objects.bulk_create(scores, update_conflicts=True, unique_fields=["evaluator", "summary"],
                                       update_fields=list(SCORE_FIELDS))
    EvaluatorSentenceScore.objects.filter(evaluator_score__in=[score.pk for score in scores]).delete()
    EvaluatorSentenceScore.objects.bulk_create([
        EvaluatorSentenceScore(evaluator_score=score, summary_sentence_id=sentence_id,
                               score=_number(sentence.score), error=sentence.error, category=sentence.category,
                               reason=sentence.reason, details=sentence.details)
        for score, result in zip(scores, outcome.summaries)
        for sentence_id, sentence in zip(sentence_ids[result.key], result.sentences)
    ])
    if outcome.document_details is not None:
        EvaluatorDocumentResult.objects.update_or_create(
            document=document, evaluator=identity.evaluator,
            defaults=dict(evaluator_version=identity.evaluator_version, backend=identity.backend, model=identity.model,
                          prompt_version=identity.prompt_version, sentences_sha256=sentences_digest(
                              inputs.source_sentences), details=outcome.document_details,
                          calls=[call.as_dict() for call in outcome.document_calls]))


@transaction.atomic
def job_record(job_id: int, report: RunReport, error: str = "") -> None:
    job = Job.objects.select_for_update().get(pk=job_id)
    result = job.result
    result["scored"] += report.scored
    result["failed"] += report.failed
    result["current"] += report.current
    result["embedded_documents"] += int(report.embedded)
    room = MAX_LISTED_FAILURES - len(result["failures"])
    result["failures"] += report.failures[:max(room, 0)]
    if error:
        result["errors"].append(error)
    job.save(update_fields=["result"])
