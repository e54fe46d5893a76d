"""Building HITs and their units for the three tasks (paper 3.3), and settling key-fact validation.

`build_hits` is idempotent: it creates what is missing and never touches a HIT that exists, except to fill the
display snapshot (highlights, AI judgment) of units nobody has labeled yet, so that running the assistance after
building the HITs still shows it. A unit somebody labeled keeps the snapshot that person saw.
"""

from collections import defaultdict
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import Count, Max, Q

from assist.models import ContextualMapping, PreLabel
from assist.prelabel import prelabel_backend
from corpus.models import Document, Job, KeyFact, Project, Summary, SummarySentence, job_start

from ..models import Hit, Label, Task, Unit
from ..models.assignment import counted_submission_q
from ..wording import describe_source


@dataclass
class BuildResult:
    task: str
    hits_created: int = 0
    units_created: int = 0
    units_refreshed: int = 0
    keyfacts_settled: dict[str, int] = field(default_factory=dict)


def build_hits(project: Project, task: str) -> BuildResult:
    """Create the missing HITs of `task` for `project`; KA only for documents whose key-fact validation is done."""
    builders = {Task.FACT_VERIFICATION: _build_fv, Task.KEYFACT_VALIDATION: _build_kv,
                Task.KEYFACT_ALIGNMENT: _build_ka}
    if task not in builders:
        raise ValueError(f"Unknown task {task!r}: use one of {', '.join(Task.values)}")
    result = BuildResult(task=task)
    with transaction.atomic():
        # One build per project at a time: a second manager (or task) building at the same moment waits here,
        # then finds the HITs built and creates none, instead of colliding with the first on the unique
        # constraints (an IntegrityError). NO KEY: rows that merely point at the project (an import's documents,
        # a job) are not held up. On SQLite, writers are serialised anyway.
        Project.objects.select_for_update(no_key=True).filter(pk=project.pk).values_list("pk", flat=True).first()
        builders[task](project, result)
        result.units_refreshed = refresh_snapshots(project, task)
        # Quality control: attention checks go into the HITs nobody holds yet.
        from ..quality.injection import inject_attention_checks
        result.units_created += inject_attention_checks(project, task)
    return result


def _next_position(project: Project, task: str) -> int:
    last = Hit.objects.filter(project=project, task=task).aggregate(last=Max("position"))["last"]
    return 0 if last is None else last + 1


def _in_rank_order(highlighted: list[int] | None, ranked: list[int]) -> list[int] | None:
    """The highlighted source sentences strongest first: the page numbers them by rank and opens at the best."""
    if highlighted is None:
        return None
    chosen = set(highlighted)
    return [index for index in ranked if index in chosen] or list(highlighted)


def _sentence_highlights(project: Project) -> dict[int, list[int]]:
    return {pk: _in_rank_order(highlighted, ranked) for pk, highlighted, ranked in ContextualMapping.objects.filter(
        summary_sentence__summary__document__project=project).values_list("summary_sentence_id", "highlighted",
                                                                          "ranked")}


def _keyfact_highlights(filter_: Q) -> dict[int, list[int]]:
    return {pk: _in_rank_order(highlighted, ranked) for pk, highlighted, ranked in ContextualMapping.objects.filter(
        filter_).values_list("keyfact_id", "highlighted", "ranked")}


def _prelabels(project: Project) -> dict[int, tuple[str, str, str]]:
    """The latest successful pre-label of the configured backend, per summary sentence."""
    rows = (PreLabel.objects.filter(summary_sentence__summary__document__project=project,
                                    status=PreLabel.Status.OK, backend=prelabel_backend())
            .order_by("summary_sentence_id", "created", "pk")
            .values_list("summary_sentence_id", "category", "reason", "backend", "model"))
    return {sid: (category, reason, describe_source(backend, model))
            for sid, category, reason, backend, model in rows}


def _fv_snapshot(sentence_id: int, highlights: dict, prelabels: dict) -> dict:
    category, reason, source = prelabels.get(sentence_id, ("", "", ""))
    return {"highlighted": highlights.get(sentence_id), "ai_category": category, "ai_reason": reason,
            "ai_source": source}


def _build_fv(project: Project, result: BuildResult) -> None:
    summaries = list(
        Summary.objects.filter(document__project=project)
        .exclude(hits__task=Task.FACT_VERIFICATION)
        .select_related("document")
        .order_by("document__domain", "document__uid", "model")
    )
    if not summaries:
        return
    position = _next_position(project, Task.FACT_VERIFICATION)
    hits = Hit.objects.bulk_create([
        Hit(project=project, task=Task.FACT_VERIFICATION, document=summary.document, summary=summary,
            position=position + offset)
        for offset, summary in enumerate(summaries)
    ])
    sentences = defaultdict(list)
    for sentence in SummarySentence.objects.filter(summary__in=summaries).order_by("summary_id", "index"):
        sentences[sentence.summary_id].append(sentence)
    highlights, prelabels = _sentence_highlights(project), _prelabels(project)
    units = [
        Unit(hit=hit, task=Task.FACT_VERIFICATION, position=position, summary_sentence=sentence,
             text=sentence.text, **_fv_snapshot(sentence.pk, highlights, prelabels))
        for hit in hits
        for position, sentence in enumerate(sentences[hit.summary_id])
    ]
    Unit.objects.bulk_create(units, batch_size=2000)
    result.hits_created, result.units_created = len(hits), len(units)


def _build_kv(project: Project, result: BuildResult) -> None:
    candidates = defaultdict(list)
    for fact in (KeyFact.objects.filter(document__project=project).exclude(origin=KeyFact.Origin.HUMAN)
                 .exclude(document__hits__task=Task.KEYFACT_VALIDATION).order_by("document_id", "index")):
        candidates[fact.document_id].append(fact)
    if not candidates:
        return
    documents = list(Document.objects.filter(pk__in=candidates).order_by("domain", "uid"))
    position = _next_position(project, Task.KEYFACT_VALIDATION)
    hits = Hit.objects.bulk_create([
        Hit(project=project, task=Task.KEYFACT_VALIDATION, document=document, position=position + offset)
        for offset, document in enumerate(documents)
    ])
    highlights = _keyfact_highlights(Q(keyfact__document__project=project))
    units = [
        Unit(hit=hit, task=Task.KEYFACT_VALIDATION, position=position, keyfact=fact, text=fact.text,
             highlighted=highlights.get(fact.pk))
        for hit in hits
        for position, fact in enumerate(candidates[hit.document_id])
    ]
    Unit.objects.bulk_create(units, batch_size=2000)
    result.hits_created, result.units_created = len(hits), len(units)


def _build_ka(project: Project, result: BuildResult) -> None:
    # Documents with key-facts and at least one summary without a KA HIT (a summary may be imported later).
    unaligned = Summary.objects.filter(document__project=project).exclude(hits__task=Task.KEYFACT_ALIGNMENT)
    waiting = (Document.objects.filter(pk__in=unaligned.values("document_id"), keyfacts__isnull=False)
               .select_related("project").distinct().order_by("domain", "uid"))
    for document in waiting:
        settled = settle_keyfact_validation(document)
        if settled is None:
            continue
        for status, count in settled.items():
            result.keyfacts_settled[status] = result.keyfacts_settled.get(status, 0) + count
        # Their checks come from build_hits' injection pass, for all new HITs at once.
        hits, units = create_alignment_hits(document, with_checks=False)
        result.hits_created += hits
        result.units_created += units


def keyfact_validation_is_complete(document: Document) -> bool:
    """Every candidate key-fact of `document` has N labels from counted submissions (vacuously true: none).

    A submission that failed its attention checks does not complete anything: its HIT is offered again until N
    submissions count (annotation.services.assignment), and only then are the key-facts settled.
    """
    needed = document.project.annotators_per_unit
    candidates = (KeyFact.objects.filter(document=document).exclude(origin=KeyFact.Origin.HUMAN)
                  .annotate(n=Count("units__labels", filter=Q(units__task=Task.KEYFACT_VALIDATION)
                                    & counted_submission_q("units__labels__assignment__")))
                  .values_list("n", flat=True))
    return all(n >= needed for n in candidates)


def settle_keyfact_validation(document: Document) -> dict[str, int] | None:
    """Accept or reject each candidate by the majority of its counted labels; None while labels are missing.

    Completion needs N counted labels per candidate, and the vote uses only those (a submission that failed its
    attention checks is graded before this runs: its labels neither complete nor vote).

    A candidate becomes a human key-fact when a strict majority of the valid labels say "useful". A tie is a
    rejection: half the annotators doubting a key-fact is reason enough to keep it out of the completeness
    denominator. Imported human key-facts never go through validation. Settling twice gives the same result.
    """
    if not keyfact_validation_is_complete(document):
        return None
    votes = defaultdict(list)
    from ..quality.selectors import counted_labels

    labels = counted_labels(Label.objects.filter(unit__keyfact__document=document, unit__task=Task.KEYFACT_VALIDATION))
    for keyfact_id, useful in labels.values_list("unit__keyfact_id", "useful"):
        votes[keyfact_id].append(useful)
    settled = {KeyFact.Status.ACCEPTED: [], KeyFact.Status.REJECTED: []}
    for fact in KeyFact.objects.filter(document=document).exclude(origin=KeyFact.Origin.HUMAN):
        answers = [vote for vote in votes[fact.pk] if vote is not None]
        accepted = sum(answers) * 2 > len(answers)
        settled[KeyFact.Status.ACCEPTED if accepted else KeyFact.Status.REJECTED].append(fact.pk)
    for status, ids in settled.items():
        KeyFact.objects.filter(pk__in=ids).update(status=status)
    return {str(status): len(ids) for status, ids in settled.items()}


def create_alignment_hits(document: Document, *, with_checks: bool = True) -> tuple[int, int]:
    """One KA HIT per summary of `document` that has none: every human key-fact against every sentence, and their
    attention checks unless the caller puts them in (`build_hits` does, for all its HITs at once)."""
    facts = list(document.keyfacts.filter(status=KeyFact.Status.ACCEPTED).order_by("index"))
    if not facts:
        return 0, 0
    summaries = list(document.summaries.exclude(hits__task=Task.KEYFACT_ALIGNMENT).order_by("model"))
    highlights = _keyfact_highlights(Q(keyfact__in=facts))
    sentences_of = defaultdict(list)
    for sentence in SummarySentence.objects.filter(summary__in=summaries).order_by("summary_id", "index"):
        sentences_of[sentence.summary_id].append(sentence)
    position = _next_position(document.project, Task.KEYFACT_ALIGNMENT)
    hits, units = [], []
    for offset, summary in enumerate(summaries):
        hit, created = Hit.objects.get_or_create(
            task=Task.KEYFACT_ALIGNMENT, summary=summary,
            defaults={"project": document.project, "document": document, "position": position + offset},
        )
        if not created:  # Built by a concurrent call in the meantime.
            continue
        hits.append(hit)
        sentences = sentences_of[summary.pk]
        units += [
            Unit(hit=hit, task=Task.KEYFACT_ALIGNMENT, position=row * len(sentences) + column, keyfact=fact,
                 summary_sentence=sentence, text=fact.text, sentence_text=sentence.text, row=row, column=column,
                 highlighted=highlights.get(fact.pk))
            for row, fact in enumerate(facts)
            for column, sentence in enumerate(sentences)
        ]
    Unit.objects.bulk_create(units, batch_size=2000)
    units_created = len(units)
    if with_checks and hits and document.project.attention_check_rate > 0:
        # Quality control: KA HITs are also created by the last KV submission, so they get their checks here,
        # from one injection for the document's HITs (the project's texts read once, their layouts written once).
        from ..quality.injection import Injection, inject_into_hit_of_project

        injection = Injection(document.project)
        units_created += sum(inject_into_hit_of_project(hit, injection) for hit in hits)
        injection.finish()
    return len(hits), units_created


def refresh_snapshots(project: Project, task: str) -> int:
    """Fill the snapshot of units nobody has labeled from the current mappings and pre-labels."""
    units = list(Unit.objects.filter(hit__project=project, task=task, labels__isnull=True)
                 .filter(Q(summary_sentence__isnull=False) | Q(keyfact__isnull=False)))
    if not units:
        return 0
    if task == Task.FACT_VERIFICATION:
        highlights, prelabels = _sentence_highlights(project), _prelabels(project)
        wanted = {unit.pk: _fv_snapshot(unit.summary_sentence_id, highlights, prelabels) for unit in units}
    else:
        highlights = _keyfact_highlights(Q(keyfact__document__project=project))
        wanted = {unit.pk: {"highlighted": highlights.get(unit.keyfact_id)} for unit in units}
    changed = []
    for unit in units:
        values = wanted[unit.pk]
        if any(getattr(unit, name) != value for name, value in values.items()):
            for name, value in values.items():
                setattr(unit, name, value)
            changed.append(unit)
    if changed:
        names = ["highlighted", "ai_category", "ai_reason", "ai_source"] if task == Task.FACT_VERIFICATION \
            else ["highlighted"]
        Unit.objects.bulk_update(changed, names, batch_size=1000)
    return len(changed)


def hits_build_start(*, project: Project, tasks: list[str], user=None) -> Job:
    """Build HITs for `tasks` in the background, in the protocol's order (KA after KV settles key-facts)."""
    from ..tasks import hits_build_task

    unknown = [task for task in tasks if task not in Task.values]
    if unknown or not tasks:
        raise ValueError(f"Unknown task(s) {unknown!r}: use {', '.join(Task.values)}")
    ordered = [task for task in Task.values if task in tasks]
    return job_start(kind=Job.Kind.HITS_BUILD, project=project, task=hits_build_task, user=user, total=len(ordered),
                     params={"tasks": ordered})


def hits_build_run(*, job_id: int) -> None:
    Job.objects.select_related("project").get(pk=job_id).run(_build_tasks)


def _build_tasks(job: Job) -> None:
    tasks = job.params["tasks"]
    job.begin(total=len(tasks))
    built = []
    for task in tasks:
        label = Task(task).label
        job.advance(0, f"building {label.lower()} HITs")
        # Each task is built (and committed) whole; a failure in a later one keeps the earlier ones.
        result = build_hits(job.project, task)
        built.append({"task": task, "label": label, "hits_created": result.hits_created,
                      "units_created": result.units_created, "units_refreshed": result.units_refreshed})
        job.advance(1, f"{label} built")
        job.result = {"built": built}
        Job.objects.filter(pk=job.pk).update(result=job.result)
    job.finish({"built": built})
