"""Simulated crowd labels at UniSumEval size, for comparing redundancy policies on the same label streams.

Every unit (FV: a summary sentence, "has a factual error"; KV: a candidate key-fact, "useful"; KA: a (key-fact,
summary sentence) pair, "aligned") gets a *stream*: the answers of up to `max_labels` distinct annotators, in the
order they would arrive. A policy reads a prefix of the stream (exports.policy_comparison), so every policy is judged
on the very same answers and differs only in how many of them it pays for.

The model, chosen to reproduce the paper's agreement rather than any one crowd:
- Sizes (BRIEF, "The numbers it must handle"): FV 8,133 sentences in 2,025 summaries, 9% with an error; KV 2,673
  candidates in 225 documents, 2,509 of them accepted (93.9%); KA 101,013 pairs in 2,025 summaries, 12% aligned
  (our choice: a summary of ~4 sentences covers about half of a document's ~12 key-facts, each key-fact usually by one
  sentence, so ~6 aligned pairs of ~50). HITs are grouped as the protocol groups them (FV and KA: one summary;
  KV: one document), spread evenly over the paper's 9 domains, with uneven sizes.
- Annotators: one pool of 60 for all three tasks: 36 careful, 22 careless (2.5 times the careful error rate), 1 who
  answers at random and 1 who always gives the task's common answer (spammers who got past the attention checks).
  Within a kind, error rates vary by a lognormal factor (sigma 0.3) per person.
- Errors: `error` is a careful annotator's error rate on an ordinary unit whose true answer is the task's common
  one; on the rarer answer it is `minority_factor` (2) times as high (a missing error is easier to overlook than a
  present one to invent). Each domain multiplies it (long inputs harder, as in the paper's Table 2, but milder).
  On a hard unit (15% of units) it is 4 times as high, for careful annotators too; no rate goes above a coin toss.
- FV only: the AI pre-label shown beside each sentence misses 35% of errors and flags 6% of faithful sentences,
  twice as often on hard units; careful annotators copy it on 5% of units, careless ones on 25%, whatever it says.
- Each HIT goes to `max_labels` distinct annotators drawn at random, in order, and every unit of the HIT gets its
  labels from them in that order (one person reads a whole HIT).

`error` per task is the one calibrated parameter: TASKS holds the values found by `calibrate` (bisection at scale 1,
on the fixed 3-annotator design, i.e. the first three labels of each stream) so that the coefficient the paper
reports, averaged over seeds 0-4, comes out at its value: Krippendorff's alpha FV 0.60, KA 0.58; Gwet's AC1 KV 0.88
(paper, Table 2, averages over the domains). One seed's pool of 60 people can be better or worse than the average:
over seeds 0-9 the fixed design gave FV 0.57-0.62, KV 0.85-0.89, KA 0.56-0.61. The other parameters were set by hand.
Everything is drawn from `numpy.random.default_rng` seeded per task, so a seed gives the same streams every time.
"""

import dataclasses
import math
from collections.abc import Callable, Sequence

import numpy as np

from exports.agreement import gwet_ac1, krippendorff_alpha

# The paper's domains (Table 2), short inputs first, with a mild error multiplier each: the long ones are harder, as
# their lower agreement in the paper says, but far less spread than the paper's 0.42-0.78 FV alphas.
DOMAINS: tuple[tuple[str, float], ...] = (
    ("news", 0.90),
    ("lifestyle", 0.80),
    ("booking", 0.90),
    ("daily life", 0.80),
    ("report", 1.15),
    ("medical literature", 1.20),
    ("science fiction", 1.15),
    ("interview", 1.15),
    ("meeting", 0.95),
)

# Paper section 4: alpha for FV and KA, AC1 for KV (its labels are heavily imbalanced).
PAPER_AGREEMENT = {"fv": 0.60, "kv": 0.88, "ka": 0.58}


@dataclasses.dataclass(frozen=True)
class Crowd:
    """The annotator pool, the same people for every task."""

    careful: int = 36
    careless: int = 22
    random_spammers: int = 1
    constant_spammers: int = 1
    careless_factor: float = 2.5
    spread: float = 0.3
    # How often an annotator answers with the AI's pre-label instead of their own reading (FV only).
    careful_follow: float = 0.05
    careless_follow: float = 0.25

    @property
    def size(self) -> int:
        return self.careful + self.careless + self.random_spammers + self.constant_spammers


# Kinds of annotator, as stored in Pool.kind.
CAREFUL, CARELESS, RANDOM, CONSTANT = range(4)


@dataclasses.dataclass(frozen=True)
class TaskModel:
    """One task at UniSumEval size; `positive_rate` is the share of units whose true answer is yes."""

    task: str
    units: int
    hits: int
    positive_rate: float
    error: float
    minority_factor: float = 2.0
    hard_share: float = 0.15
    hard_factor: float = 4.0
    ai_miss: float | None = None
    ai_false_alarm: float | None = None
    ai_hard_factor: float = 2.0

    @property
    def common_answer(self) -> bool:
        return self.positive_rate >= 0.5

    def scaled(self, scale: float) -> "TaskModel":
        hits = max(len(DOMAINS), round(self.hits * scale))
        return dataclasses.replace(self, hits=hits, units=max(hits, round(self.units * scale)))


# `error` from calibrate(TASKS[task]): scale 1, the mean over seeds 0-4, rounded to 4 decimals.
TASKS: dict[str, TaskModel] = {
    "fv": TaskModel("fv", units=8_133, hits=2_025, positive_rate=0.09, error=0.0116, ai_miss=0.35,
                    ai_false_alarm=0.06),
    "kv": TaskModel("kv", units=2_673, hits=225, positive_rate=2_509 / 2_673, error=0.0188),
    "ka": TaskModel("ka", units=101_013, hits=2_025, positive_rate=0.12, error=0.0187),
}


@dataclasses.dataclass(frozen=True)
class Pool:
    """The annotators: their kind and their own multiplier of the task's error rate."""

    kind: np.ndarray
    skill: np.ndarray
    follow: np.ndarray


@dataclasses.dataclass(frozen=True)
class LabelStreams:
    """The streams of one task: `labels[u, k]` is the k-th answer unit u would get (True = yes)."""

    task: str
    labels: np.ndarray
    truth: np.ndarray
    domain: np.ndarray
    hit: np.ndarray
    domains: tuple[str, ...] = tuple(name for name, _ in DOMAINS)
    annotator: np.ndarray | None = None
    hard: np.ndarray | None = None
    ai_label: np.ndarray | None = None

    @property
    def units(self) -> int:
        return len(self.truth)

    @property
    def max_labels(self) -> int:
        return self.labels.shape[1]


def draw_pool(crowd: Crowd, rng: np.random.Generator) -> Pool:
    kind = np.repeat([CAREFUL, CARELESS, RANDOM, CONSTANT],
                     [crowd.careful, crowd.careless, crowd.random_spammers, crowd.constant_spammers])
    skill = np.exp(rng.normal(0.0, crowd.spread, size=crowd.size))
    skill = np.where(kind == CARELESS, skill * crowd.careless_factor, skill)
    follow = np.select([kind == CAREFUL, kind == CARELESS], [crowd.careful_follow, crowd.careless_follow], 0.0)
    return Pool(kind=kind, skill=skill, follow=follow)


def hit_sizes(units: int, hits: int, rng: np.random.Generator) -> np.ndarray:
    """Uneven HIT sizes (at least one unit each) that add up to `units`."""
    weights = rng.gamma(4.0, size=hits)
    return 1 + rng.multinomial(units - hits, weights / weights.sum())


def generate(model: TaskModel, *, seed: int = 0, max_labels: int = 5, crowd: Crowd = Crowd()) -> LabelStreams:
    """The label streams of one task; the same seed gives the same streams.

    The crowd is drawn from `seed` alone, so the three tasks of one seed share the same people; everything else is
    drawn from a generator of its own per task.
    """
    if max_labels > crowd.size:
        raise ValueError(f"{max_labels} distinct annotators per unit need a pool of at least that many.")
    pool = draw_pool(crowd, np.random.default_rng([seed, 0]))
    rng = np.random.default_rng([seed, 1 + ("fv", "kv", "ka").index(model.task)])

    sizes = hit_sizes(model.units, model.hits, rng)
    hit = np.repeat(np.arange(model.hits), sizes)
    domain = np.arange(model.hits)[hit] % len(DOMAINS)
    truth = rng.random(model.units) < model.positive_rate
    hard = rng.random(model.units) < model.hard_share
    # Distinct annotators: the first max_labels of a random permutation of the pool, one permutation per HIT.
    order = np.argsort(rng.random((model.hits, crowd.size)), axis=1)[:, :max_labels]
    annotator = order[hit]

    domain_factor = np.array([factor for _, factor in DOMAINS])[domain]
    minority = truth != model.common_answer
    unit_factor = domain_factor * np.where(minority, model.minority_factor, 1.0)
    unit_factor = np.where(hard, unit_factor * model.hard_factor, unit_factor)
    error = np.minimum(0.5, model.error * pool.skill[annotator] * unit_factor[:, None])
    own = np.where(rng.random(annotator.shape) < error, ~truth[:, None], truth[:, None])

    kind = pool.kind[annotator]
    labels = np.where(kind == RANDOM, rng.random(annotator.shape) < 0.5, own)
    labels = np.where(kind == CONSTANT, model.common_answer, labels)

    ai_label = None
    if model.ai_miss is not None:
        ai_wrong = np.where(truth, model.ai_miss, model.ai_false_alarm)
        ai_wrong = np.minimum(0.5, np.where(hard, ai_wrong * model.ai_hard_factor, ai_wrong))
        ai_label = np.where(rng.random(model.units) < ai_wrong, ~truth, truth)
        follows = rng.random(annotator.shape) < pool.follow[annotator]
        labels = np.where(follows, ai_label[:, None], labels)

    return LabelStreams(task=model.task, labels=labels.astype(bool), truth=truth, domain=domain, hit=hit,
                        annotator=annotator, hard=hard, ai_label=ai_label)


def paper_coefficient(task: str) -> Callable[[np.ndarray], float]:
    """The coefficient the paper reports for a task, over a units x raters float array (NaN = missing)."""
    if task == "kv":
        return lambda ratings: gwet_ac1(ratings, categories=(False, True))
    return krippendorff_alpha


def fixed_design_agreement(streams: LabelStreams, annotators: int = 3) -> float:
    """The paper's coefficient on the first `annotators` labels of every unit: what the fixed design reports."""
    return paper_coefficient(streams.task)(streams.labels[:, :annotators].astype(float))


def calibrate(model: TaskModel, *, target: float | None = None, seeds: Sequence[int] = (0, 1, 2, 3, 4),
              steps: int = 30, crowd: Crowd = Crowd()) -> tuple[float, float]:
    """Bisect `error` until the fixed design's coefficient, averaged over `seeds`, meets the paper's.

    Returns (error, mean coefficient). Several seeds, because each seed draws its own pool of 60 people and one pool
    can be noticeably better or worse than another. Agreement falls as the error rate rises; every step draws the same
    uniforms, so each label's correctness is monotone in `error` and the bisection is stable.
    """
    target = PAPER_AGREEMENT[model.task] if target is None else target

    def agreement(error: float) -> float:
        trial = dataclasses.replace(model, error=error)
        return float(np.mean([fixed_design_agreement(generate(trial, seed=seed, crowd=crowd)) for seed in seeds]))

    low, high = 0.0, 0.25
    for _ in range(steps):
        middle = (low + high) / 2
        value = agreement(middle)
        if math.isnan(value) or value < target:
            high = middle
        else:
            low = middle
    error = (low + high) / 2
    return error, agreement(error)
