"""Building HITs and their units for the three tasks (paper 3.3), and settling key-fact validation.

`build_hits` is idempotent: it creates what is missing and never touches a HIT that exists, except to fill the
display snapshot (highlights, AI judgment) of units nobody has labeled yet, so that running the assistance after
building the HITs still shows it. A unit somebody labeled keeps the snapshot that person saw.
"""

from collections import defaultdict
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import Count, F, IntegerField, Max, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce

from assist.models import ContextualMapping, DocumentEmbedding, PreLabel, TextEmbedding
from assist.prelabel import prelabel_backend
from corpus.bulk import cycle_collection_paused, refresh_stale_statistics, update_rows
from corpus.models import Document, DocumentSentence, Job, KeyFact, Project, Summary, SummarySentence, job_start

from ..job_kinds import HITS_BUILD
from ..models import Hit, Label, Task, Unit
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
    # What an import and a mapping just wrote, read before autovacuum has looked at it.
    refresh_stale_statistics(DocumentSentence, SummarySentence, KeyFact, ContextualMapping, DocumentEmbedding,
                             TextEmbedding, PreLabel, Hit, Unit)
    with cycle_collection_paused(), transaction.atomic():
        # One build per project at a time: a second manager (or task) building at the same moment waits here,
        # then finds the HITs built and creates none, instead of colliding with the first on the unique
        # constraints (an IntegrityError). NO KEY: rows that merely point at the project (an import's documents,
        # a job) are not held up. On SQLite, writers are serialised anyway.
        Project.objects.select_for_update(no_key=True).filter(pk=project.pk).values_list("pk", flat=True).first()
        new = builders[task](project, result)
        result.units_refreshed = refresh_snapshots(project, task)
        # Quality control: attention checks go into the HITs nobody holds yet. The new HITs' units are written
        # there, laid out around their checks, so that none is written twice.
        from ..quality.injection import inject_attention_checks
        result.units_created += inject_attention_checks(project, task, new=new)
        recount_units(Hit.objects.filter(project=project, task=task))
    return result


def recount_units(hits) -> int:
    """Write `Hit.unit_count` where it differs from the units `hits` have; only those rows are locked (a HIT
    somebody holds has units that no longer change). Returns how many HITs changed."""
    units = Unit.objects.filter(hit=OuterRef("pk")).order_by().values("hit").annotate(n=Count("pk")).values("n")
    actual = Coalesce(Subquery(units, output_field=IntegerField()), 0)
    stale = hits.alias(actual=actual).exclude(unit_count=F("actual")).values("pk")
    return Hit.objects.filter(pk__in=stale).update(unit_count=actual)


# The HITs a builder created, each with its units in position order, not yet written.
NewHits = list[tuple[Hit, list[Unit]]]


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


def _build_fv(project: Project, result: BuildResult) -> NewHits:
    without_hit = Summary.objects.filter(document__project=project).exclude(hits__task=Task.FACT_VERIFICATION)
    summaries = list(without_hit.order_by("document__domain", "document__uid", "model"))
    if not summaries:
        return []
    # One instance per document, shared by its summaries' HITs: joined to every summary, a document's text was
    # held once per summary (9 copies in UniSumEval).
    documents = {document.pk: document
                 for document in Document.objects.filter(pk__in=without_hit.values("document_id"))}
    for summary in summaries:
        summary.document = documents[summary.document_id]
    sentences = defaultdict(list)
    # A subquery, not a list of ids: a project has more summaries than SQLite takes parameters in one statement.
    # Read before the HITs exist, while it still selects these summaries.
    # (id, text) pairs, not model instances: at 10x UniSumEval a build holds 80,000 sentences.
    for pk, summary_id, text in (SummarySentence.objects.filter(summary__in=without_hit)
                                 .order_by("summary_id", "index").values_list("pk", "summary_id", "text")):
        sentences[summary_id].append((pk, text))
    position = _next_position(project, Task.FACT_VERIFICATION)
    hits = Hit.objects.bulk_create([
        Hit(project=project, task=Task.FACT_VERIFICATION, document=summary.document, summary=summary,
            position=position + offset)
        for offset, summary in enumerate(summaries)
    ])
    highlights, prelabels = _sentence_highlights(project), _prelabels(project)
    new = [(hit, [Unit(hit=hit, task=Task.FACT_VERIFICATION, position=position, summary_sentence_id=pk,
                       text=text, **_fv_snapshot(pk, highlights, prelabels))
                  for position, (pk, text) in enumerate(sentences[hit.summary_id])])
           for hit in hits]
    result.hits_created, result.units_created = len(hits), sum(len(units) for _, units in new)
    return new


def _build_kv(project: Project, result: BuildResult) -> NewHits:
    candidates = defaultdict(list)
    for fact in (KeyFact.objects.filter(document__project=project).exclude(origin=KeyFact.Origin.HUMAN)
                 .exclude(document__hits__task=Task.KEYFACT_VALIDATION).order_by("document_id", "index")):
        candidates[fact.document_id].append(fact)
    if not candidates:
        return []
    documents = list(Document.objects.filter(pk__in=candidates).order_by("domain", "uid"))
    position = _next_position(project, Task.KEYFACT_VALIDATION)
    hits = Hit.objects.bulk_create([
        Hit(project=project, task=Task.KEYFACT_VALIDATION, document=document, position=position + offset)
        for offset, document in enumerate(documents)
    ])
    highlights = _keyfact_highlights(Q(keyfact__document__project=project))
    new = [(hit, [Unit(hit=hit, task=Task.KEYFACT_VALIDATION, position=position, keyfact=fact, text=fact.text,
                       highlighted=highlights.get(fact.pk))
                  for position, fact in enumerate(candidates[hit.document_id])])
           for hit in hits]
    result.hits_created, result.units_created = len(hits), sum(len(units) for _, units in new)
    return new


def _build_ka(project: Project, result: BuildResult) -> NewHits:
    # Documents with key-facts and at least one summary without a KA HIT (a summary may be imported later).
    unaligned = Summary.objects.filter(document__project=project).exclude(hits__task=Task.KEYFACT_ALIGNMENT)
    waiting = list(Document.objects.filter(pk__in=unaligned.values("document_id"), keyfacts__isnull=False)
                   .select_related("project").distinct().order_by("domain", "uid"))
    settled = settle_keyfact_validation_of(waiting)
    for counts in settled.values():
        for status, count in (counts or {}).items():
            result.keyfacts_settled[status] = result.keyfacts_settled.get(status, 0) + count
    # Their checks and their writing come from build_hits' injection pass, for all new HITs at once.
    new = _alignment_hits(project, [document for document in waiting if settled[document.pk] is not None])
    result.hits_created, result.units_created = len(new), sum(len(units) for _, units in new)
    return new


def _chunks(ids: list[int], size: int = 10_000):
    """`ids` in slices that stay under SQLite's limit on parameters per statement."""
    for start in range(0, len(ids), size):
        yield ids[start:start + size]


def keyfact_validation_is_complete(document: Document) -> bool:
    """Every candidate key-fact of `document` is settled under the project's redundancy policy (N counted labels in
    the fixed design; fewer where they decide the majority, `adaptive`); vacuously true with none.

    A submission that failed its attention checks does not complete anything: its HIT is offered again until N
    submissions count (annotation.services.assignment), and only then are the key-facts settled.
    """
    return not _incomplete([document])


def _incomplete(documents: list[Document]) -> set[int]:
    """The documents among `documents` with a candidate key-fact its counted labels do not settle yet."""
    from ..quality.selectors import counted_labels
    from ..redundancy import Verdict, redundancy_of

    policy = {document.pk: redundancy_of(document.project) for document in documents}
    incomplete = set()
    for ids in _chunks(list(policy)):
        answers = defaultdict(list)
        labels = counted_labels(Label.objects.filter(unit__keyfact__document__in=ids,
                                                     unit__task=Task.KEYFACT_VALIDATION))
        for keyfact_id, useful in (labels.order_by("assignment__submitted_at", "assignment_id")
                                   .values_list("unit__keyfact_id", "useful")):
            if useful is not None:
                answers[keyfact_id].append(useful)
        for pk, document_id in (KeyFact.objects.filter(document__in=ids).exclude(origin=KeyFact.Origin.HUMAN)
                                .values_list("pk", "document_id")):
            if policy[document_id].verdict(answers[pk]) in (Verdict.COLLECTING, Verdict.NEEDS_MORE):
                incomplete.add(document_id)
    return incomplete


def settle_keyfact_validation(document: Document) -> dict[str, int] | None:
    """Accept or reject each candidate by the majority of its counted labels; None while labels are missing.

    Completion needs N counted labels per candidate, and the vote uses only those (a submission that failed its
    attention checks is graded before this runs: its labels neither complete nor vote).

    A candidate becomes a human key-fact when a strict majority of the valid labels say "useful". A tie is a
    rejection: half the annotators doubting a key-fact is reason enough to keep it out of the completeness
    denominator. Imported human key-facts never go through validation. Settling twice gives the same result.
    """
    return settle_keyfact_validation_of([document])[document.pk]


def settle_keyfact_validation_of(documents: list[Document]) -> dict[int, dict[str, int] | None]:
    """`settle_keyfact_validation` for many documents in a few queries: per document id, the counts settled, or
    None while its labels are missing."""
    if not documents:
        return {}
    incomplete = _incomplete(documents)
    complete = [document.pk for document in documents if document.pk not in incomplete]
    from ..quality.selectors import counted_labels

    votes = defaultdict(list)
    for ids in _chunks(complete):
        labels = counted_labels(Label.objects.filter(unit__keyfact__document__in=ids,
                                                     unit__task=Task.KEYFACT_VALIDATION))
        for keyfact_id, useful in labels.values_list("unit__keyfact_id", "useful"):
            votes[keyfact_id].append(useful)
    statuses = (KeyFact.Status.ACCEPTED, KeyFact.Status.REJECTED)
    settled = {document_id: {str(status): 0 for status in statuses} for document_id in complete}
    decided = {status: [] for status in statuses}
    for ids in _chunks(complete):
        facts = KeyFact.objects.filter(document__in=ids).exclude(origin=KeyFact.Origin.HUMAN)
        for pk, document_id in facts.values_list("pk", "document_id"):
            answers = [vote for vote in votes[pk] if vote is not None]
            status = KeyFact.Status.ACCEPTED if sum(answers) * 2 > len(answers) else KeyFact.Status.REJECTED
            decided[status].append(pk)
            settled[document_id][str(status)] += 1
    for status, ids in decided.items():
        for chunk in _chunks(ids):
            KeyFact.objects.filter(pk__in=chunk).update(status=status)
    return {document.pk: settled.get(document.pk) for document in documents}


@transaction.atomic
def create_alignment_hits(document: Document, *, with_checks: bool = True) -> tuple[int, int]:
    """One KA HIT per summary of `document` that has none: every human key-fact against every sentence, and their
    attention checks unless the caller puts them in (`build_hits` does, for all its HITs at once). Returns (HITs,
    units) created."""
    project = document.project
    new = _alignment_hits(project, [document])
    units_created = sum(len(units) for _, units in new)
    if with_checks and new and project.attention_check_rate > 0:
        # Quality control: KA HITs are also created by the last KV submission, so they get their checks here,
        # from one injection for the document's HITs.
        from ..quality.injection import Injection, write_new_hits

        injection = Injection(project)
        units_created += write_new_hits(new, injection)
        injection.finish()
    else:
        Unit.objects.bulk_create([unit for _, units in new for unit in units], batch_size=2000)
    recount_units(Hit.objects.filter(pk__in=[hit.pk for hit, _ in new]))
    return len(new), units_created


def _alignment_hits(project: Project, documents: list[Document]) -> NewHits:
    """One KA HIT per summary without one of `documents` (in their order) that have accepted key-facts, created;
    their units (every human key-fact against every sentence) made but not written. A few queries whatever the
    number of documents."""
    if not documents:
        return []
    # The lock `build_hits` takes: the last KV submission of a document (which lands here) and a build running at
    # the same moment take turns, so neither creates a KA HIT the other has just created.
    Project.objects.select_for_update(no_key=True).filter(pk=project.pk).values_list("pk", flat=True).first()
    document_ids = [document.pk for document in documents]
    facts_of, summaries_of, sentences_of, highlights = defaultdict(list), defaultdict(list), defaultdict(list), {}
    for ids in _chunks(document_ids):
        for fact in KeyFact.objects.filter(document__in=ids, status=KeyFact.Status.ACCEPTED).order_by("index"):
            facts_of[fact.document_id].append(fact)
        with_facts = [pk for pk in ids if facts_of[pk]]
        for summary in (Summary.objects.filter(document__in=with_facts)
                        .exclude(hits__task=Task.KEYFACT_ALIGNMENT).order_by("model")):
            summaries_of[summary.document_id].append(summary)
        for pk, summary_id, text in (SummarySentence.objects.filter(summary__document__in=with_facts)
                                     .order_by("summary_id", "index").values_list("pk", "summary_id", "text")):
            sentences_of[summary_id].append((pk, text))
        highlights.update(_keyfact_highlights(Q(keyfact__document__in=with_facts,
                                                keyfact__status=KeyFact.Status.ACCEPTED)))
    position = _next_position(project, Task.KEYFACT_ALIGNMENT)
    hits = []
    for document in documents:
        for summary in summaries_of[document.pk]:
            hits.append(Hit(project=project, task=Task.KEYFACT_ALIGNMENT, document=document, summary=summary,
                            position=position))
            position += 1
    new = []
    for hit in Hit.objects.bulk_create(hits):
        facts, sentences = facts_of[hit.document_id], sentences_of[hit.summary_id]
        new.append((hit, [
            Unit(hit=hit, task=Task.KEYFACT_ALIGNMENT, position=row * len(sentences) + column, keyfact=fact,
                 summary_sentence_id=sentence_id, text=fact.text, sentence_text=sentence_text, row=row,
                 column=column, highlighted=highlights.get(fact.pk))
            for row, fact in enumerate(facts)
            for column, (sentence_id, sentence_text) in enumerate(sentences)
        ]))
    return new


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
        update_rows(changed, names)
    return len(changed)


def hits_build_start(*, project: Project, tasks: list[str], user=None) -> Job:
    """Build HITs for `tasks` in the background, in the protocol's order (KA after KV settles key-facts)."""
    unknown = [task for task in tasks if task not in Task.values]
    if unknown or not tasks:
        raise ValueError(f"Unknown task(s) {', '.join(unknown) or '(none given)'}: use {', '.join(Task.values)}")
    ordered = [task for task in Task.values if task in tasks]
    return job_start(kind=HITS_BUILD, project=project, user=user, total=len(ordered), params={"tasks": ordered})


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
