"""Reads of the annotation work that pages, the API and the services share; the writes are in annotation.services.

`available_hits` and `current_assignment`: the work an annotator may still be given (never, for a crowd worker, two
HITs that show the same text), and the reservation they hold.
`hit_units`, `unit_at`, `assignment_labels`, `labels_in_order`, `assignment_flags`: what the HIT page, saving an
answer and the API read of one HIT, compiled once per process (corpus.internals): every annotator request does.
`started_hits`: the HITs somebody works or worked on (their assistance level may no longer change).
`task_progress`: how far the annotation of a project has come, per task and domain (the manager's progress page). A
unit is done when it has N labels from counted submissions; a HIT is done when N of its submissions count; the
counted submissions are split into real and simulated ones (simulated work fills places as real work does). A
submission that failed its attention checks (and was not overridden to pass) is shown apart as "failed": its HIT is
offered again until N count (annotation.services.assignment). The counts read HITs and assignments, a few rows per
HIT, never every label: the page is polled while people work.
"""

from collections import Counter, defaultdict

from django.db import connection
from django.db.models import (
    BooleanField,
    Case,
    Count,
    Exists,
    ExpressionWrapper,
    F,
    FloatField,
    IntegerField,
    Max,
    OuterRef,
    Q,
    Subquery,
    Sum,
    Value,
    When,
)
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from corpus.internals import MARKER_ID, MARKER_INT, MARKER_OTHER_ID, CompiledQuery
from corpus.models import Project, RedundancyPolicy

from .models import (
    Adjudication,
    Annotator,
    Assignment,
    AttentionCheck,
    Decision,
    Hit,
    ItemFlag,
    Label,
    LedgerEntry,
    SplitUnit,
    SplitUnitLabel,
    Task,
    Unit,
    UnitState,
)
from .models.assignment import counted_submission_q, failed_submission_q
from .redundancy import Verdict, redundancy_of

# --- One HIT's items as the HIT page and the answers read them (every annotator request makes one of these).

_HIT_UNITS = CompiledQuery(lambda hit_id: Unit.objects.filter(hit_id=hit_id).order_by("position"), hit_id=MARKER_ID)
_UNIT_AT = CompiledQuery(lambda hit_id, position: Unit.objects.filter(hit_id=hit_id, position=position).order_by()[:1],
                         hit_id=MARKER_ID, position=MARKER_INT)
_ASSIGNMENT_LABELS = CompiledQuery(lambda assignment_id: Label.objects.filter(assignment_id=assignment_id).order_by(),
                                   assignment_id=MARKER_ID)
_LABEL_OF = CompiledQuery(lambda assignment_id, unit_id: Label.objects.filter(assignment_id=assignment_id,
                                                                              unit_id=unit_id).order_by(),
                          assignment_id=MARKER_ID, unit_id=MARKER_OTHER_ID)
_LABELS_IN_ORDER = CompiledQuery(lambda assignment_id: Label.objects.filter(assignment_id=assignment_id)
                                 .select_related("unit", "annotator").order_by("unit__position"),
                                 assignment_id=MARKER_ID)
_ASSIGNMENT_FLAGS = CompiledQuery(lambda assignment_id: ItemFlag.objects.filter(assignment_id=assignment_id)
                                  .order_by().values_list("unit_id", "comment"), assignment_id=MARKER_ID)


def hit_units(hit_id: int) -> list[Unit]:
    """The HIT's units in their order."""
    return _HIT_UNITS(hit_id=hit_id)


def unit_at(hit_id: int, position: int) -> Unit | None:
    found = _UNIT_AT(hit_id=hit_id, position=position)
    return found[0] if found else None


def assignment_labels(assignment_id: int, unit_ids: list[int] | None = None) -> dict[int, Label]:
    """The assignment's labels by unit id: all of them, or those of `unit_ids` (one item's answer reads one)."""
    if unit_ids is None:
        labels = _ASSIGNMENT_LABELS(assignment_id=assignment_id)
    elif len(unit_ids) == 1:
        labels = _LABEL_OF(assignment_id=assignment_id, unit_id=unit_ids[0])
    else:
        labels = Label.objects.filter(assignment_id=assignment_id, unit_id__in=unit_ids)
    return {label.unit_id: label for label in labels}


def labels_in_order(assignment_id: int) -> list[Label]:
    """The assignment's labels in the order of their items, with their unit and annotator (the API shows both)."""
    return _LABELS_IN_ORDER(assignment_id=assignment_id)


def assignment_flags(assignment_id: int) -> dict[int, str]:
    """The comments the annotator left on items of the assignment, by unit id."""
    return dict(_ASSIGNMENT_FLAGS(assignment_id=assignment_id))


def count_of(queryset, outer: str):
    """How many rows of `queryset` point at the outer row through `outer`, as a subquery (no join fan-out)."""
    return Coalesce(Subquery(queryset.filter(**{outer: OuterRef("pk")}).order_by().values(outer)
                             .annotate(n=Count("pk")).values("n"), output_field=IntegerField()), 0)


def _places_taken(now):
    return (Assignment.objects.holding_a_place(now).filter(hit=OuterRef("pk")).order_by()
            .values("hit").annotate(n=Count("pk")).values("n"))


# Crowd workers are paid per HIT and unknown to the project: they are never given two HITs that show the same text.
KEPT_APART = (Annotator.Provider.MTURK, Annotator.Provider.PROLIFIC, Annotator.Provider.LINK)


def had_by(annotator: Annotator):
    """The assignments that make a HIT the annotator's: all but expired ones and discarded claims (a discarded
    claim was never the annotator's own, e.g. a forged worker id)."""
    return Assignment.objects.filter(annotator=annotator).exclude(
        status__in=[Assignment.Status.EXPIRED, Assignment.Status.DISCARDED])


def overlaps_what_they_had(annotator: Annotator, hit: Hit) -> bool:
    """Whether `hit` shows what a HIT the annotator has had shows (`overlapping`)."""
    return (Hit.objects.filter(pk=hit.pk).alias(overlaps=overlapping(had_by(annotator), hit.task))
            .filter(overlaps=True).exists())


def overlapping(had, task: str):
    """A condition on a HIT of `task` (the outer row): one of the assignments `had` is for a HIT showing the same
    summary sentences or key-facts. Comparing two such HITs would show their attention checks as the lines one has
    and the other lacks: the FV and KA HITs of a summary; the KV HIT of a document and its KA HITs, which show its
    key-facts; two KA HITs of a document (the same key-fact rows, each with its own checks)."""
    if task == Task.FACT_VERIFICATION:
        return Exists(had.filter(hit__task=Task.KEYFACT_ALIGNMENT, hit__summary=OuterRef("summary")))
    if task == Task.KEYFACT_VALIDATION:
        return Exists(had.filter(hit__task=Task.KEYFACT_ALIGNMENT, hit__document=OuterRef("document")))
    return Exists(had.filter(Q(hit__task=Task.FACT_VERIFICATION, hit__summary=OuterRef("summary"))
                             | Q(hit__task__in=[Task.KEYFACT_VALIDATION, Task.KEYFACT_ALIGNMENT],
                                 hit__document=OuterRef("document"))))


def available_hits(annotator: Annotator, project: Project, task: str, now=None):
    """HITs of `task` that still need annotators and that `annotator` has not had (an expired one may come back),
    with `overlaps`: whether it shows what a HIT they have had shows (`overlapping`). Crowd workers never get such a
    HIT; in-house and simulated annotators, a known team that must often label every HIT, get them last.

    A HIT needs annotators while fewer than N assignments hold a place: a failed submission holds none, so its HIT
    comes back for others; its own annotator has had it and never gets it again.
    """
    now = now or timezone.now()
    had = had_by(annotator)
    hits = (Hit.objects.filter(project=project, task=task)
            .annotate(taken=Coalesce(Subquery(_places_taken(now)), 0))
            .filter(taken__lt=hit_places(project))
            .exclude(Exists(had.filter(hit=OuterRef("pk"))))
            .exclude(labelled_before(project, had))
            .alias(overlaps=overlapping(had, task)))
    return hits.filter(overlaps=False) if annotator.provider in KEPT_APART else hits


def hit_places(project: Project):
    """A HIT's places as an expression on Hit rows (`Hit.places`): the first round's labels per unit, or one in a
    top-up HIT, plus the places added in review."""
    first = redundancy_of(project).first_round
    return Case(When(round=0, then=Value(first)), default=Value(1)) + F("extra_places")


def labelled_before(project: Project, had) -> Q:
    """A condition on a HIT: it shows a unit the annotator labelled in another HIT (a top-up of a unit they had, or
    the first HIT of a unit they had in a top-up). An item's labels must come from different people (paper 3.4)."""
    if project.redundancy_policy == RedundancyPolicy.FIXED:
        return Q(pk__in=[])
    roots = (Unit.objects.filter(hit__in=had.values("hit_id")).annotate(root=Coalesce("origin_id", "pk"))
             .values("root"))
    return Q(Exists(Unit.objects.filter(Q(pk__in=roots) | Q(origin__in=roots), hit=OuterRef("pk"))))


def count_available_hits(annotator: Annotator, project: Project, task: str, now=None) -> int:
    """How many HITs `available_hits` gives, counted for a page: the HITs whose places are all held are found in one
    grouped pass over the task's assignments, not by counting each HIT's (most HITs are full once the work is
    under way, and `available_hits` looks at each in turn)."""
    now = now or timezone.now()
    first = redundancy_of(project).first_round
    full = (Assignment.objects.holding_a_place(now).filter(hit__project=project, hit__task=task).order_by()
            .values("hit").annotate(n=Count("pk"), extra=Max("hit__extra_places"), round=Max("hit__round"))
            .filter(n__gte=Case(When(round=0, then=Value(first)), default=Value(1)) + F("extra")).values("hit"))
    had = had_by(annotator)
    hits = (Hit.objects.filter(project=project, task=task).exclude(pk__in=full)
            .exclude(Exists(had.filter(hit=OuterRef("pk")))).exclude(labelled_before(project, had)))
    if annotator.provider in KEPT_APART:
        hits = hits.alias(overlaps=overlapping(had, task)).filter(overlaps=False)
    return hits.count()


def current_assignment(annotator: Annotator, project: Project, task: str, now=None) -> Assignment | None:
    now = now or timezone.now()
    return (Assignment.objects.filter(annotator=annotator, hit__project=project, hit__task=task,
                                      status=Assignment.Status.RESERVED, expires_at__gt=now)
            .order_by("reserved_at").first())


def started_hits(hits):
    """The HITs somebody holds (an unexpired reservation), submitted, or answered."""
    now = timezone.now()
    active = Assignment.objects.filter(hit=OuterRef("pk")).filter(
        Q(status=Assignment.Status.SUBMITTED) | Q(status=Assignment.Status.RESERVED, expires_at__gt=now))
    answered = Label.objects.filter(unit__hit=OuterRef("pk"))
    return hits.filter(Exists(active) | Exists(answered))


def task_progress(project: Project) -> list[dict]:
    """One entry per task: its per-domain rows and a total row, each with unit and HIT counts.

    Read from HITs and their assignments, not from labels: a unit has a label from each submission of its HIT that
    labelled every unit (`Assignment.labelled_every_unit`), so the units of a HIT with N such counted submissions
    are all done. Only a HIT whose N counted submissions need others (restored ones, without labels on the checks)
    has its units' labels counted.
    """
    needed = redundancy_of(project).first_round  # labels per unit a first-round HIT asks for
    now = timezone.now()
    counted = counted_submission_q()
    # Confirmed ones only: an unconfirmed crowd submission is nobody's yet (annotation/crowd/claims.py).
    failed = failed_submission_q()
    per_hit = (Assignment.objects.filter(hit__project=project,
                                         status__in=[Assignment.Status.SUBMITTED, Assignment.Status.RESERVED])
               .order_by().values("hit")
               .annotate(counted=Count("pk", filter=counted),
                         complete=Count("pk", filter=counted & Q(labelled_every_unit=True)),
                         # Simulated work (a pilot, simulate_annotations) fills places like real work, but is shown
                         # apart from it.
                         simulated=Count("pk", filter=counted & Q(annotator__provider=Annotator.Provider.SIMULATED)),
                         failed=Count("pk", filter=failed),
                         open=Count("pk", filter=Q(status=Assignment.Status.RESERVED, expires_at__gt=now))))
    hits = Hit.objects.filter(project=project).order_by().values("pk", "task", "extra_places", "round",
                                                                 "unit_count", "document__domain")
    rows: dict[str, dict[str, dict]] = defaultdict(dict)
    for task, domain, *counts in _per_task_and_domain(hits, per_hit, needed):
        rows[task][domain] = dict(zip(PROGRESS_COUNTS, counts))
    # HITs with N counted submissions of which fewer than N labelled every unit: their units with N counted labels,
    # counted per task and domain in one query. None unless labels were restored from an export (the index
    # "assignment_partly_labelled" says so at once).
    if Assignment.objects.filter(counted, labelled_every_unit=False, hit__project=project).exists():
        partial = (Hit.objects.filter(project=project)
                   .alias(counted_count=count_of(Assignment.objects.counted(), "hit"),
                          complete_count=count_of(Assignment.objects.counted().filter(labelled_every_unit=True),
                                                  "hit"))
                   .filter(counted_count__gte=needed + F("extra_places"),
                           complete_count__lt=needed + F("extra_places")))
        labels = count_of(Label.objects.filter(counted_submission_q("assignment__")), "unit")
        for task, domain, n in (Unit.objects.filter(hit__in=partial.values("pk")).alias(counted_labels=labels)
                                .filter(counted_labels__gte=needed + F("hit__extra_places")).order_by()
                                .values_list("hit__task", "hit__document__domain").annotate(n=Count("pk"))):
            rows[task][domain]["units_done"] += n
    return progress_entries(rows, needed)


PROGRESS_COUNTS = ("units", "units_done", "hits", "hits_done", "submissions", "simulated", "failed", "open")


def progress_entries(rows: dict[str, dict[str, dict]], needed: int) -> list[dict]:
    """The progress page's entries from the PROGRESS_COUNTS of each task and domain: per task, its domains in
    order, a total row, and the shares and needs derived from the counts."""
    result = []
    for task in (Task.FACT_VERIFICATION, Task.KEYFACT_VALIDATION, Task.KEYFACT_ALIGNMENT):
        domains = [{"domain": domain, **counts} for domain, counts in sorted(rows[task].items())]
        total = {name: sum(row[name] for row in domains) for name in PROGRESS_COUNTS}
        for row in (*domains, total):
            row["percent"] = int(100 * row["units_done"] / row["units"]) if row["units"] else 0
            row["submissions_needed"] = row["hits"] * needed
            row["real"] = row["submissions"] - row["simulated"]
        result.append({"task": task, "label": task.label, "domains": domains, "total": total})
    return result


def _per_task_and_domain(hits, per_hit, needed: int) -> list[tuple]:
    """(task, domain, units, units done, HITs, HITs done, submissions, simulated, failed, open) per task and domain,
    from the HITs (`hits`: pk, task, extra_places, unit_count, domain) and their assignment counts (`per_hit`: hit,
    counted, complete, simulated, failed, open), added up by the database: a row per HIT never reaches Python."""
    hits_sql, hits_params = hits.query.sql_with_params()
    per_hit_sql, per_hit_params = per_hit.query.sql_with_params()
    sql = f"""
        WITH h AS ({hits_sql}), a AS ({per_hit_sql})
        SELECT h.task, h.document__domain, SUM(CASE WHEN h.round = 0 THEN h.unit_count ELSE 0 END),
               SUM(CASE WHEN h.round = 0 AND COALESCE(a.complete, 0) >= %s + h.extra_places
                        THEN h.unit_count ELSE 0 END),
               COUNT(*), SUM(CASE WHEN COALESCE(a.counted, 0) >= (CASE WHEN h.round = 0 THEN %s ELSE 1 END)
                                                                 + h.extra_places THEN 1 ELSE 0 END),
               COALESCE(SUM(a.counted), 0), COALESCE(SUM(a.simulated), 0), COALESCE(SUM(a.failed), 0),
               COALESCE(SUM(a.open), 0)
        FROM h LEFT JOIN a ON a.hit = h.pk
        GROUP BY h.task, h.document__domain"""
    with connection.cursor() as cursor:
        cursor.execute(sql, (*hits_params, *per_hit_params, needed, needed))
        return [(task, domain, *(int(value) for value in counts)) for task, domain, *counts in cursor.fetchall()]


def simulated_submissions(progress: list[dict]) -> int:
    """How many counted submissions of the project are simulated (a pilot): the progress page then shows them apart."""
    return sum(entry["total"]["simulated"] for entry in progress)


def is_finished(progress: list[dict]) -> bool:
    """Every task that has units has all of them done (and, under a redundancy policy, settled), and there is work
    at all."""
    totals = [entry["total"] for entry in progress]
    return any(t["units"] for t in totals) and all(t["units_done"] == t["units"] for t in totals) and all(
        entry.get("settling") is None or entry["settling"]["settled"] + entry["settling"]["escalated"]
        == entry["total"]["units"] for entry in progress)


def add_settling(project: Project, progress: list[dict]) -> list[dict]:
    """Give each task's progress entry, under a policy other than the fixed design, its units' verdicts
    (annotation.redundancy): a first-round HIT with its labels in may still leave a unit waiting for more."""
    counts = defaultdict(Counter)
    if project.redundancy_policy != RedundancyPolicy.FIXED:
        for task, verdict, n in (UnitState.objects.filter(project=project).order_by()
                                 .values_list("task", "verdict").annotate(n=Count("pk"))):
            counts[task][verdict] += n
    for entry in progress:
        found = counts.get(entry["task"])
        entry["settling"] = None if project.redundancy_policy == RedundancyPolicy.FIXED else {
            "settled": (found or {}).get(Verdict.SETTLED, 0), "escalated": (found or {}).get(Verdict.ESCALATED, 0),
            "needs_more": (found or {}).get(Verdict.NEEDS_MORE, 0)}
    return progress


HISTORY_LENGTH = 50


def work_history(annotator: Annotator, project: Project) -> dict:
    """The annotator's own past HITs in `project` (latest first, at most HISTORY_LENGTH) with their state in words,
    how many they submitted and how many count, and, for crowd workers, what the provider has paid. Nothing per item:
    which units were checks stays on the server."""
    own = (Assignment.objects.filter(annotator=annotator, hit__project=project)
           .exclude(status__in=[Assignment.Status.RESERVED, Assignment.Status.DISCARDED]))
    # In the order of the index "assignment_history": the latest are read first, not all of them sorted.
    # Whether each counts, read on its own row (its grade joined), not looked up among every counted one.
    past = (own.select_related("hit").annotate(counts=ExpressionWrapper(counted_submission_q(),
                                                                        output_field=BooleanField()))
            .order_by(F("submitted_at").desc(nulls_last=True), F("reserved_at").desc(), F("pk").desc()))
    rows = list(past[:HISTORY_LENGTH])
    decisions = dict(Decision.objects.filter(assignment__in=rows, status=Decision.Status.DONE,
                                             kind__in=[Decision.Kind.APPROVE, Decision.Kind.REJECT])
                     .values_list("assignment_id", "kind"))
    crowd = annotator.provider in (Annotator.Provider.MTURK, Annotator.Provider.PROLIFIC)
    provider = Annotator.Provider(annotator.provider).label
    for assignment in rows:
        assignment.state = _state_words(assignment, decisions.get(assignment.pk), crowd, provider)
    submitted = Q(status=Assignment.Status.SUBMITTED)
    totals = own.aggregate(submitted=Count("pk", filter=submitted),
                           counted=Count("pk", filter=submitted & counted_submission_q()), past=Count("pk"))
    earned = None
    if crowd:
        earned = LedgerEntry.objects.filter(annotator=annotator, project=project, kind__in=[
            LedgerEntry.Kind.REWARD, LedgerEntry.Kind.BONUS]).aggregate(total=Sum("amount_usd"))["total"] or 0
    return {"rows": rows, "submitted": totals["submitted"], "counted": totals["counted"], "earned": earned,
            "more": totals["past"] > HISTORY_LENGTH}


def _state_words(assignment: Assignment, decision: str | None, crowd: bool, provider: str) -> str:
    if assignment.status == Assignment.Status.RETURNED:
        return "Returned"
    if assignment.status == Assignment.Status.EXPIRED:
        return "Time ran out"
    if decision == "reject":
        return "Submitted · rejected"
    if crowd and assignment.confirmed_at is None:
        return f"Submitted · waiting for {provider} to confirm it"
    state = "Submitted · counted" if assignment.counts else "Submitted · not counted (attention checks)"
    return state + (" · approved" if decision == "approve" else "")


# --- Review: units whose counted labels disagree.

REVIEW_QUESTION = {Task.FACT_VERIFICATION: "has_error", Task.KEYFACT_VALIDATION: "useful",
                   Task.KEYFACT_ALIGNMENT: "aligned"}
# The reviewer's filter on where a split unit stands under the project's redundancy policy.
REVIEW_STATES = {"escalated": Verdict.ESCALATED, "waiting": Verdict.NEEDS_MORE}


def voted_units(project: Project, task: str):
    """The task's real units (no checks) with `votes` (counted answers to the task's question) and `yes` (how many
    say yes)."""
    field = REVIEW_QUESTION[task]
    counted = Label.objects.filter(counted_submission_q("assignment__"), **{f"{field}__isnull": False})
    return (Unit.objects.filter(hit__project=project, task=task, attention_check__isnull=True)
            .annotate(votes=count_of(counted, "unit"), yes=count_of(counted.filter(**{field: True}), "unit")))


def counted_votes(project: Project, task: str):
    """`votes` and `yes` per real unit of `task` that has counted answers, as one grouped query: the same numbers as
    `voted_units`, without two subqueries per unit of the task."""
    field = REVIEW_QUESTION[task]
    # NOT EXISTS, not a LEFT JOIN ... IS NULL, for the checks: PostgreSQL estimates the join at one row and loops.
    checks = AttentionCheck.objects.filter(unit=OuterRef("unit"))
    return (Label.objects.filter(counted_submission_q("assignment__"), ~Exists(checks), unit__hit__project=project,
                                 unit__task=task, **{f"{field}__isnull": False})
            .order_by().values("unit").annotate(votes=Count("pk"), yes=Count("pk", filter=Q(**{field: True}))))


def standing_flag_q(prefix: str = "") -> Q:
    """An ItemFlag that stands, as a Q: its annotator has left the HIT (submitted it, returned it, or let the
    reservation lapse), so it can no longer be withdrawn. A flag on open work is a draft; a discarded claim's was
    never the annotator's own (annotation/crowd/sync.py)."""
    return ~Q(**{f"{prefix}assignment__status__in": [Assignment.Status.RESERVED, Assignment.Status.DISCARDED]})


def flagged_units_q(outer: str = "pk") -> Exists:
    """The unit named by `outer` (or one of its top-ups, which are the same item) has a standing flag."""
    return Exists(ItemFlag.objects.filter(standing_flag_q()).filter(
        Q(unit_id=OuterRef(outer)) | Q(unit__origin_id=OuterRef(outer))))


def unit_flags(units: list[Unit]) -> dict[int, list[ItemFlag]]:
    """The standing flags of `units` and of their top-ups, by unit id, oldest first, with their annotators."""
    found: dict[int, list[ItemFlag]] = {}
    for flag in (ItemFlag.objects.filter(standing_flag_q(), Q(unit__in=units) | Q(unit__origin__in=units))
                 .select_related("assignment__annotator__user", "unit").order_by("created", "pk")):
        found.setdefault(flag.unit.origin_id or flag.unit_id, []).append(flag)
    return found


def disagreements(project: Project, task: str, *, domain: str = "", summarizer: str = "", annotator=None,
                  most_agreement: float | None = None, settled: str = "", checks: str = "", flagged: str = ""):
    """Units of `task` with at least two counted answers that are not all the same, or with a standing flag (an
    annotator's note that the item is broken or unclear needs a reviewer even where the labels agree), most split
    first; filtered by the document's domain, the summarizer, an annotator who labelled them, the share of the
    majority (at most `most_agreement`), whether a reviewer settled them ("yes"/"no"), the outcome of the attention
    checks of the submissions behind their labels (`checks`: "missed": some counted label comes from a submission
    that missed a check and counts by the project's tolerance or a manager's override; "clean": none does), and
    whether they are flagged ("yes"/"no")."""
    units = voted_units(project, task).alias(flagged=flagged_units_q()).filter(
        Q(votes__gte=2, yes__gt=0, yes__lt=F("votes")) | Q(flagged=True))
    if domain:
        units = units.filter(hit__document__domain=domain)
    if summarizer:
        units = units.filter(hit__summary__model=summarizer)
    if annotator is not None:
        units = units.filter(Exists(Label.objects.filter(counted_submission_q("assignment__"), unit=OuterRef("pk"),
                                                         annotator=annotator)))
    if settled in ("yes", "no"):
        units = units.filter(adjudication__isnull=settled == "no")
    if checks in ("missed", "clean"):
        missed = Exists(Label.objects.filter(counted_submission_q("assignment__"), unit=OuterRef("pk"),
                                             assignment__grade__checks_failed__gt=0))
        units = units.filter(missed) if checks == "missed" else units.exclude(missed)
    if flagged in ("yes", "no"):
        units = units.filter(flagged=flagged == "yes")
    # A flagged unit without a counted label is not split at all.
    majority = Case(When(votes=0, then=Value(1.0)),
                    default=Greatest(F("yes"), F("votes") - F("yes")) * 1.0 / F("votes"), output_field=FloatField())
    units = units.annotate(majority=ExpressionWrapper(majority, output_field=FloatField()))
    if most_agreement is not None:
        units = units.filter(majority__lte=most_agreement)
    return (units.select_related("hit__document", "hit__summary", "hit__project", "adjudication__reviewer",
                                 "summary_sentence", "keyfact")
            .order_by("majority", "hit__position", "position"))


def split_units(project: Project, task: str, *, domain: str = "", summarizer: str = "", annotator=None,
                most_agreement: float | None = None, settled: str = "", checks: str = "", state: str = "",
                flagged: str = ""):
    """`disagreements` read from the stored tally (annotation.services.review_tally): the same units in the same
    order, as SplitUnit rows (SplitUnitLabel rows of the annotator when one is chosen); whether a unit is settled is
    read live from the adjudications, where it stands under the redundancy policy (`state`: "escalated", sent to
    review; "waiting", for labels a top-up will bring) live from its UnitState, and whether it is flagged
    (`flagged`: "yes"/"no") live from the standing flags."""
    if annotator is not None:
        units = SplitUnitLabel.objects.filter(project=project, task=task, annotator=annotator)
    else:
        units = SplitUnit.objects.filter(project=project, task=task)
    if domain:
        units = units.filter(domain=domain)
    if summarizer:
        units = units.filter(summarizer=summarizer)
    if settled in ("yes", "no"):
        # EXISTS on the adjudications alone (a join would go through every split unit's Unit row).
        adjudicated = Exists(Adjudication.objects.filter(unit=OuterRef("unit_id")))
        units = units.filter(adjudicated if settled == "yes" else ~adjudicated)
    if checks in ("missed", "clean"):
        units = units.filter(missed_check=checks == "missed")
    if flagged in ("yes", "no"):
        units = units.filter(flagged_units_q("unit_id") if flagged == "yes" else ~flagged_units_q("unit_id"))
    if state in REVIEW_STATES:
        standing = UnitState.objects.filter(unit_id=OuterRef("unit_id"), verdict=REVIEW_STATES[state])
        units = units.filter(Exists(standing))
    if most_agreement is not None:
        units = units.filter(majority__lte=most_agreement)
    return units.order_by("majority", "hit_position", "position", "unit_id")


def units_of(split: list[SplitUnit]) -> list[Unit]:
    """The units of a page of `split_units`, in its order, with what the reviewer's cards show, `majority` and
    `votes`."""
    units = (Unit.objects.filter(pk__in=[row.unit_id for row in split])
             .select_related("hit__document", "hit__summary", "hit__project", "adjudication__reviewer",
                             "summary_sentence", "keyfact").in_bulk())
    for row in split:
        units[row.unit_id].majority = row.majority
        units[row.unit_id].votes = row.votes
    return [units[row.unit_id] for row in split]


def agreement_summary(project: Project, task: str, *, among: list[int] | None = None) -> dict:
    """How far the annotators agree among themselves (pairs of counted answers on the same unit that agree) and
    with the adjudications (counted answers on adjudicated units that equal the adjudicated label). `among`:
    [pairs, agreeing pairs] as the stored review tally has them, instead of a pass over every counted label; the part
    about adjudications is read live (one row per adjudicated unit's counted label)."""
    pairs = agreeing = 0
    if among is not None:
        pairs, agreeing = among
    else:
        for votes, yes in counted_votes(project, task).filter(votes__gte=2).values_list("votes", "yes").iterator():
            no = votes - yes
            pairs += votes * (votes - 1) // 2
            agreeing += yes * (yes - 1) // 2 + no * (no - 1) // 2
    field = REVIEW_QUESTION[task]
    adjudicated = Adjudication.objects.filter(unit__hit__project=project, unit__task=task).values("unit")
    labels = Label.objects.filter(counted_submission_q("assignment__"), unit__in=adjudicated,
                                  **{f"{field}__isnull": False})
    with_adjudication = labels.count()
    matching = labels.filter(**{field: F(f"unit__adjudication__{field}")}).count()
    return {"pairs": pairs, "among": agreeing / pairs if pairs else None,
            "adjudicated": adjudicated.count(),
            "labels": with_adjudication, "with_adjudication": matching / with_adjudication if with_adjudication
            else None}
