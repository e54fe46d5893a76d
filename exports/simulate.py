"""A pilot simulation: synthetic annotators label a whole project, all three tasks, under its redundancy policy
(README, "Analytics and the benchmark export" and "How many labels per item").

HITs are built by the real services: the first round by annotation.services.hits.build_hits (KV before KA, so
that key-fact validation is settled by the same rule as real work), top-ups by annotation.services.topups
.topups_build. A task runs in passes: every HIT with places left (its round's places, `Hit.places`) gets its
submissions, their units are settled by annotation.services.settling.settle_units, and the top-ups that settling
asks for are built; until a pass gives nothing and builds nothing (every unit settled, escalated, or waiting for
real work that holds a place). Answers are written with bulk inserts rather than through reserve/save/submit one HIT
at a time: at UniSumEval scale (~335,000 labels) the services take hours, the bulk path minutes. The invariants of
the services hold here too:
- one Assignment per (HIT, annotator), never more assignments holding a place than the HIT's places: beside real
  work, only the places it left are filled;
- nobody labels an item twice: a HIT goes only to a simulated annotator annotation.selectors.available_hits offers
  it to (which keeps a top-up from whoever labelled one of its items, and the reverse);
- one Label per (annotator, unit), every question of the unit answered (ai_right when the AI label was shown,
  error types when the sentence has an error);
- attention-check units are answered like the others, and a submission with checks is graded by quality control's
  grade_assignment, as a real one is: a failed one frees its place for the next annotator.

Two crowds answer:
- `paper` (the default of the command): the crowd model of exports.label_streams, calibrated to the paper's
  agreement: 60 people (careful, careless, one answering at random, one always giving the common answer), hard
  units, and an AI pre-label that some follow whatever it says (FV). The model is asked for every person's answer
  on every unit (`generate` with the whole pool as each unit's stream), so an annotator answers an item the same way
  in its first HIT and in a top-up. Each first-round HIT goes to the pool in a random order of its own, and its
  top-ups to the next people in that order: without attention checks the k-th counted label of a unit is the same
  under every policy, and a policy differs from another only in how far into that order it reads
  (exports.policy_comparison does the same on arrays). A person gets a check right as the model has them answer a
  unit whose true answer is the check's (one such unit drawn per first-round HIT and answer, for the HIT and its
  top-ups): careful people nearly always pass, the one who always gives the common answer never passes an FV or KV
  check. A top-up's checks are not its first HIT's, so with checks who passes, and whose labels count, may differ
  between two policies.
- `uniform` (the first pilot's): N annotators, each right with probability `accuracy` against a hidden truth: the AI
  pre-label for FV sentences that have one (else a seeded coin, 10% errors), a seeded coin for KV (90% useful) and
  KA (15% aligned), and the expected answer for attention checks. A fixed-design project gets exactly the labels
  the first pilot gave it for a seed.

The model's truth and AI pre-label are the model's: the pre-label a project shows is not what its simulated people
follow. Simulated annotators have provider "simulated"; the analytics never mix their labels with real ones
(exports.selectors).
"""

import dataclasses
from datetime import timedelta

import numpy as np
from django.db import connection, transaction
from django.db.models import Count, IntegerField, OuterRef, Subquery, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotation.models import Annotator, Assignment, AttentionCheck, ErrorType, Hit, Label, Task, Unit, UnitState
from annotation.quality.grading import grade_assignment
from annotation.redundancy import Verdict, redundancy_of
from annotation.selectors import available_hits, hit_places
from annotation.services.hits import build_hits
from annotation.services.settling import first_round_units, settle_units
from annotation.services.topups import topups_build
from corpus.models import Project
from exports.label_streams import CAREFUL, CARELESS, CONSTANT, RANDOM, TASKS, Crowd, draw_pool, generate

ERROR_TYPES = [choice.value for choice in ErrorType]
BASE_RATE = {Task.FACT_VERIFICATION: 0.10, Task.KEYFACT_VALIDATION: 0.90, Task.KEYFACT_ALIGNMENT: 0.15}
FIELD = {Task.FACT_VERIFICATION: "has_error", Task.KEYFACT_VALIDATION: "useful", Task.KEYFACT_ALIGNMENT: "aligned"}
PAPER, UNIFORM = "paper", "uniform"
CROWDS = (PAPER, UNIFORM)
KIND_NAMES = {CAREFUL: "careful", CARELESS: "careless", RANDOM: "random", CONSTANT: "always common"}
# KV first: key-fact alignment HITs exist only for documents whose key-facts are settled (paper 3.5).
TASK_ORDER = (Task.KEYFACT_VALIDATION, Task.FACT_VERIFICATION, Task.KEYFACT_ALIGNMENT)
# Ids per query when settling: each call names them in its query, within SQLite's limit on parameters.
SETTLE_CHUNK = 2000


@dataclasses.dataclass
class TaskOutcome:
    """One task of a project after the simulation, real labels included: counted labels on items (checks left out),
    against what the fixed design of N annotators would have paid for the same items."""

    units: int = 0
    labels: int = 0
    fixed_labels: int = 0
    settled: int = 0
    escalated: int = 0
    waiting: int = 0
    topup_hits: int = 0

    @property
    def fixed_share(self) -> float | None:
        return self.labels / self.fixed_labels if self.fixed_labels else None


@dataclasses.dataclass
class SimulationResult:
    annotators: list[str]
    crowd: str = UNIFORM
    policy: str = ""
    kinds: dict = dataclasses.field(default_factory=dict)
    assignments: int = 0
    labels: int = 0
    grades: int = 0
    failed: int = 0
    passes: int = 0
    unfilled: dict = dataclasses.field(default_factory=dict)
    hits_by_task: dict = dataclasses.field(default_factory=dict)
    outcome: dict[str, TaskOutcome] = dataclasses.field(default_factory=dict)

    @property
    def fixed_share(self) -> float | None:
        labels = sum(outcome.labels for outcome in self.outcome.values())
        fixed = sum(outcome.fixed_labels for outcome in self.outcome.values())
        return labels / fixed if fixed else None


def simulated_annotators(project: Project, count: int) -> list[Annotator]:
    return [Annotator.objects.get_or_create(provider=Annotator.Provider.SIMULATED,
                                            external_id=f"{project.slug}-sim-{number}")[0]
            for number in range(1, count + 1)]


def simulate_annotations(*, project: Project, crowd: str = UNIFORM, annotators: int = 3, accuracy: float = 0.9,
                         seed: int = 1, progress=None) -> SimulationResult:
    """Label `project` with simulated annotators under its redundancy policy, to the end: see the module."""
    if crowd not in CROWDS:
        raise ValueError(f"Unknown crowd {crowd!r}: use one of {', '.join(CROWDS)}.")
    if crowd == UNIFORM and annotators < 1:
        raise ValueError("--annotators must be at least 1")
    if crowd == UNIFORM and not 0.0 <= accuracy <= 1.0:
        raise ValueError("--accuracy must be between 0 and 1")
    redundancy = redundancy_of(project)
    if crowd == PAPER:
        source = PaperCrowd(Crowd(), seed)
        people = simulated_annotators(project, source.pool.size)
    else:
        source = UniformCrowd(accuracy, np.random.default_rng(seed))
        people = simulated_annotators(project, annotators)
    if len(people) < redundancy.most:
        raise ValueError(f"The project's {redundancy.policy} policy may ask {redundancy.most} labels of an item, "
                         f"each from somebody else: simulate at least {redundancy.most} annotators, not "
                         f"{len(people)}.")
    result = SimulationResult(annotators=[person.pseudonym for person in people], crowd=crowd,
                              policy=redundancy.policy, kinds=source.kinds(len(people)))
    for task in TASK_ORDER:
        build_hits(project, task)  # KA after KV: its HITs exist once KV is settled.
        _run_task(project, task, people, source, result)
        if progress:
            progress(task)
    _refresh_statistics()
    result.outcome = outcome(project)
    return result


def _run_task(project, task, people, source, result) -> None:
    """Passes over the task until one gives no submission and builds no top-up."""
    while True:
        with transaction.atomic():
            filled = _fill(project, task, people, source, result)
        if filled:
            result.passes += 1
            real = []
            for start in range(0, len(filled), SETTLE_CHUNK):
                real += first_round_units(Unit.objects.filter(hit__in=filled[start:start + SETTLE_CHUNK]))
            for start in range(0, len(real), SETTLE_CHUNK):
                settle_units(real[start:start + SETTLE_CHUNK])
        made = topups_build(project).get(task, 0)
        if not filled and not made:
            return


def outcome(project: Project) -> dict[str, TaskOutcome]:
    """Per task, the counted labels on the project's items under its policy (UnitState, written by settling)."""
    annotators = project.annotators_per_unit
    result = {}
    for task in TASK_ORDER:
        states = UnitState.objects.filter(project=project, task=task)
        counts = dict(states.values("verdict").annotate(n=Count("pk")).values_list("verdict", "n"))
        units = first_round_units(Unit.objects.filter(hit__project=project, task=task, hit__round=0))
        labels = states.aggregate(labels=Sum("counted"))["labels"] or 0
        settled, escalated = counts.get(Verdict.SETTLED, 0), counts.get(Verdict.ESCALATED, 0)
        result[str(task)] = TaskOutcome(
            units=len(units), labels=labels, fixed_labels=len(units) * annotators, settled=settled,
            escalated=escalated, waiting=len(units) - settled - escalated,
            topup_hits=Hit.objects.filter(project=project, task=task, round__gt=0).count())
    return result


def _refresh_statistics() -> None:
    """After bulk inserts PostgreSQL's planner still believes the tables are small until autovacuum catches up,
    and picks nested loops over ~300,000 labels (minutes instead of seconds): refresh its statistics now."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE annotation_label, annotation_assignment, annotation_unit, annotation_hit, "
                           "annotation_grade, annotation_attentioncheck, annotation_unitstate")


def _simulate_task(project, task, people, accuracy, rng, result) -> list[int]:
    """One pass of the uniform crowd over `task`, nothing settled: the labels of the first pilot for benchmarks
    that time the builds after them."""
    return _fill(project, task, people, UniformCrowd(accuracy, rng), result)


def _fill(project, task, people, source, result) -> list[int]:
    """One pass: every HIT of `task` with places left gets submissions from the people who may take it, in the
    order the crowd gives its first-round HIT. Returns the HITs that got submissions."""
    # The lock a build takes: no attention check goes into a HIT between reading its units and labelling them all.
    Project.objects.select_for_update(no_key=True).filter(pk=project.pk).values_list("pk", flat=True).first()
    now = timezone.now()
    # The places already held, real work's included, by the rule assignment uses (counted submissions and live
    # reservations): the simulation fills only what is left of each HIT's places, and counts its own as it goes.
    places = Assignment.objects.holding_a_place(now).filter(hit=OuterRef("pk")).order_by().values("hit").annotate(
        n=Count("pk")).values("n")
    hits = list(Hit.objects.filter(project=project, task=task)
                .annotate(taken=Coalesce(Subquery(places, output_field=IntegerField()), 0), room=hit_places(project))
                .order_by("pk").values_list("pk", "taken", "room", "assistance", "position"))
    result.hits_by_task[str(task)] = len(hits)
    units = list(Unit.objects.filter(hit__project=project, task=task).order_by("pk").values_list(
        "pk", "hit_id", "ai_category", "origin_id"))
    checks = dict(AttentionCheck.objects.filter(unit__hit__project=project, unit__task=task)
                  .values_list("unit_id", "expected"))
    source.start(task, units, checks, len(people))
    free = {pk: room - taken for pk, taken, room, _, _ in hits if taken < room}
    if not free:
        return []
    position = {pk: pos for pk, _, _, _, pos in hits}
    hit_of = {pk: hit_id for pk, hit_id, _, _ in units}
    by_hit: dict[int, list[tuple]] = {}
    roots: dict[int, set[int]] = {}
    for unit in units:
        pk, hit_id, _, origin = unit
        by_hit.setdefault(hit_id, []).append(unit)
        if pk not in checks:
            roots.setdefault(hit_id, set()).add(origin or pk)
    shows_label = {pk: task == Task.FACT_VERIFICATION and (assistance or project.assistance) in ("label", "reason")
                   for pk, _, _, assistance, _ in hits}
    had = set(Assignment.objects.filter(hit__project=project, hit__task=task, annotator__in=people)
              .values_list("hit_id", "annotator_id"))
    offered: dict[int, set[int]] = {}
    claimed: dict[int, set[int]] = {}
    assignments, labels, graded = [], [], []
    for hit_id in sorted(free):
        items = roots.get(hit_id, set())
        first = hit_of[next(iter(items))] if items else hit_id
        slot = 0
        for index in source.order(task, position[first], len(people)):
            if free[hit_id] == 0:
                break
            person = people[index]
            if (hit_id, person.pk) in had or items & claimed.get(index, set()):
                continue
            if index not in offered:
                # The real rule: a HIT with places, not had, showing no item they labelled in another HIT.
                offered[index] = set(available_hits(person, project, task, now).values_list("pk", flat=True))
            if hit_id not in offered[index]:
                continue
            free[hit_id] -= 1
            had.add((hit_id, person.pk))
            claimed.setdefault(index, set()).update(items)
            # Submitted in the crowd's order: settling reads a unit's labels in the order they were submitted.
            submitted = now + timedelta(microseconds=slot)
            slot += 1
            assignment = Assignment(hit_id=hit_id, annotator=person, status=Assignment.Status.SUBMITTED,
                                    reserved_at=now, expires_at=now + timedelta(minutes=project.reservation_minutes),
                                    submitted_at=submitted, submission_key=f"simulated-{person.pk}-{hit_id}",
                                    labelled_every_unit=True)
            assignments.append(assignment)
            for unit in by_hit.get(hit_id, []):
                answer, seconds = source.answer(task, index, unit, checks.get(unit[0]), shows_label[hit_id],
                                                position[first])
                labels.append(Label(assignment=assignment, unit_id=unit[0], annotator=person,
                                    seconds_on_item=seconds, **answer))
            if any(unit[0] in checks for unit in by_hit.get(hit_id, [])):
                graded.append(assignment)
    result.unfilled[str(task)] = sum(free.values())
    Assignment.objects.bulk_create(assignments, batch_size=2000)
    for label in labels:
        label.assignment_id = label.assignment.pk
    Label.objects.bulk_create(labels, batch_size=5000)
    # Graded by quality control's own service, so the simulation passes or fails exactly as real work would.
    for assignment in graded:
        if not grade_assignment(assignment).passed:
            result.failed += 1
    result.assignments += len(assignments)
    result.labels += len(labels)
    result.grades += len(graded)
    return sorted({assignment.hit_id for assignment in assignments})


class UniformCrowd:
    """Every annotator right with probability `accuracy`; the draws of the first pilot, in its order."""

    def __init__(self, accuracy: float, rng: np.random.Generator):
        self.accuracy, self.rng = accuracy, rng
        self.tasks: dict[str, dict] = {}

    def kinds(self, people: int) -> dict:
        return {f"right with probability {self.accuracy:g}": people}

    def order(self, task: str, position: int, people: int):
        return range(people)

    def start(self, task, units, checks, people) -> None:
        if task in self.tasks or not units:
            return
        rng = self.rng
        truth = _truth(task, units, rng)
        truth_type = rng.choice(ERROR_TYPES, size=len(units))
        for index, (_, _, category, _) in enumerate(units):
            if category in ERROR_TYPES:
                truth_type[index] = category
        # Each person's draws over the task's units, in the order of the people, as the first pilot drew them.
        drawn = [(rng.random(len(units)) < self.accuracy, rng.choice(ERROR_TYPES, size=len(units)),
                  rng.uniform(4, 40, size=len(units))) for _ in range(people)]
        self.tasks[task] = {"row": {unit[0]: index for index, unit in enumerate(units)}, "truth": truth,
                            "type": truth_type, "people": drawn}

    def answer(self, task, index, unit, expected, shows_label, position) -> tuple[dict, float]:
        pk, _, category, origin = unit
        drawn = self.tasks[task]
        correct, wrong_type, seconds = drawn["people"][index]
        row = drawn["row"].get(pk, drawn["row"].get(origin))
        if row is None:  # A check of a top-up HIT, made after the draws.
            right, truth, kind, time = self.rng.random() < self.accuracy, False, ERROR_TYPES[0], 10.0
        else:
            right, truth = bool(correct[row]), bool(drawn["truth"][row])
            kind = drawn["type"][row] if right else wrong_type[row]
            time = float(seconds[row])
        answer = _answer(task, truth, right, expected)
        if task == Task.FACT_VERIFICATION:
            if answer["has_error"]:
                answer["error_types"] = [str(kind)]
            if shows_label and category and "ai_right" not in answer:
                answer["ai_right"] = (category != "no_error") == answer["has_error"]
        return answer, time


class PaperCrowd:
    """The crowd model of exports.label_streams: every person's answer on every unit, one draw per task."""

    def __init__(self, pool: Crowd, seed: int):
        self.pool, self.seed = pool, seed
        self.tasks: dict[str, dict] = {}

    def kinds(self, people: int) -> dict:
        kind = draw_pool(self.pool, np.random.default_rng([self.seed, 0])).kind
        return {name: int((kind == value).sum()) for value, name in KIND_NAMES.items() if (kind == value).any()}

    def _key(self, task: str, *more: int) -> list[int]:
        return [self.seed, 7, ("fv", "kv", "ka").index(task), *more]

    def order(self, task: str, position: int, people: int):
        # The order in which the pool comes to one first-round HIT and then to its top-ups.
        return np.random.default_rng(self._key(task, position)).permutation(people)

    def start(self, task, units, checks, people) -> None:
        if task in self.tasks:
            return
        real = [(pk, hit_id) for pk, hit_id, _, origin in units if origin is None and pk not in checks]
        state = {"row": {pk: row for row, (pk, _) in enumerate(real)}, "rng": np.random.default_rng(self._key(task)),
                 "twins": {}}
        if real:
            model = dataclasses.replace(TASKS[task], units=len(real), hits=len({hit for _, hit in real}))
            streams = generate(model, seed=self.seed, max_labels=self.pool.size, crowd=self.pool)
            answers = np.empty_like(streams.labels)
            answers[np.arange(len(real))[:, None], streams.annotator] = streams.labels
            state.update(answers=answers, truth=streams.truth)
        self.tasks[task] = state

    def _passes(self, task: str, position: int, person: int, wanted: bool) -> bool:
        """Whether `person` gets a check right whose answer is `wanted`, on the work of one first-round HIT: as the
        model has them answer a unit whose true answer is `wanted`, one such unit drawn per HIT and answer."""
        state = self.tasks[task]
        key = (position, wanted)
        if key not in state["twins"]:
            candidates = np.flatnonzero(state["truth"] == wanted) if "truth" in state else np.array([], int)
            pick = np.random.default_rng(self._key(task, position, int(wanted)))
            state["twins"][key] = int(pick.choice(candidates)) if len(candidates) else None
        twin = state["twins"][key]
        return True if twin is None else bool(state["answers"][twin, person] == wanted)

    def answer(self, task, index, unit, expected, shows_label, position) -> tuple[dict, float]:
        pk, _, category, origin = unit
        state = self.tasks[task]
        rng = state["rng"]
        if expected is not None:
            wanted = expected.get(FIELD[task])
            right = wanted is None or self._passes(task, position, index, bool(wanted))
            answer = _answer(task, False, right, expected)
        else:
            answer = {FIELD[task]: bool(state["answers"][state["row"][origin or pk], index])}
        if task == Task.FACT_VERIFICATION:
            if answer["has_error"]:
                answer["error_types"] = [category if category in ERROR_TYPES else str(rng.choice(ERROR_TYPES))]
            if shows_label and category and "ai_right" not in answer:
                answer["ai_right"] = (category != "no_error") == answer["has_error"]
        return answer, float(rng.uniform(4, 40))


def _truth(task, units, rng) -> np.ndarray:
    coin = rng.random(len(units)) < BASE_RATE[task]
    if task != Task.FACT_VERIFICATION:
        return coin
    ai = np.array([unit[2] != "" for unit in units], bool)
    ai_error = np.array([unit[2] not in ("", "no_error") for unit in units], bool)
    return np.where(ai, ai_error, coin)


def _answer(task: str, truth: bool, correct: bool, expected: dict | None) -> dict:
    field = FIELD[task]
    if expected is not None:
        answer = {key: value for key, value in expected.items() if key in ("has_error", "ai_right", "useful",
                                                                            "aligned")}
        if not correct and field in answer:
            answer[field] = not answer[field]
            answer.pop("ai_right", None)
        answer.setdefault(field, truth if correct else not truth)
        return answer
    return {field: truth if correct else not truth}
