"""Redundancy policies side by side on the same label streams (BRIEF, "What a study costs").

A policy (annotation.redundancy) is asked, unit by unit, how many labels it wants; it gets them from the front of
the unit's stream (exports.label_streams), one round at a time: round 1 gives every unit the policy's first round,
each later round gives every unit that still asks for labels as many as it asks (`Redundancy.target`). So two
policies differ only in how far into the same streams they read, and what they settle on can be compared unit by unit.

Beside the per-unit policies, `collect_per_hit` is the coarser design a crowd platform makes easy: two labels per
unit, and a third for every unit of a HIT as soon as any unit of that HIT splits.

Everything is measured against the fixed design (UniSumEval's: 3 labels each, majority vote): the labels paid as a
share of its labels, the units whose majority is the same as its majority, and, since the streams come with a
simulated truth, how often each majority is wrong. Agreement is the paper's coefficient (alpha for FV and KA, AC1
for KV) on each unit's first two labels, the headline that stays comparable with fixed designs, and on all the
labels collected (biased low for per-unit policies: only units that split get more).
"""

import dataclasses
import math
from collections.abc import Iterable, Mapping

import numpy as np

from annotation.redundancy import Redundancy, Verdict
from exports.label_streams import LabelStreams, paper_coefficient
from exports.scores import TIE_BREAK, majority_vote


@dataclasses.dataclass(frozen=True)
class Collection:
    """What a policy took from each unit's stream."""

    name: str
    taken: np.ndarray  # labels paid for, per unit: they are the first `taken` of its stream
    rounds: np.ndarray  # the round that gave the unit its last label (1 = the first round)
    escalated: np.ndarray  # left for a reviewer: the policy could not settle it


def collect(labels: np.ndarray, redundancy: Redundancy, name: str | None = None) -> Collection:
    """Collect labels from `labels` (units x stream positions, in arrival order) the way `redundancy` asks.

    The policy's own `target` and `verdict` decide, read from a table of every possible answer prefix (at most
    2^(most+1) of them), so that a round over 100,000 units is one array lookup.
    """
    most = redundancy.most
    if labels.shape[1] < most:
        raise ValueError(f"Streams of {labels.shape[1]} labels are too short for a policy that may ask for {most}.")
    target, verdict = _prefix_tables(redundancy)
    bits = labels[:, :most].astype(np.int64) << np.arange(most)
    # prefix[u, n]: the unit's first n answers as bits (answer k is bit k), the index into the tables.
    prefix = np.concatenate([np.zeros((len(labels), 1), np.int64), np.cumsum(bits, axis=1)], axis=1)
    units = np.arange(len(labels))
    taken = np.zeros(len(labels), np.int64)
    rounds = np.zeros(len(labels), np.int64)
    round_ = 0
    while True:
        wanted = target[taken, prefix[units, taken]]
        asking = wanted > taken
        if not asking.any():
            break
        round_ += 1
        taken = np.where(asking, wanted, taken)
        rounds[asking] = round_
    escalated = verdict[taken, prefix[units, taken]] == _VERDICTS.index(Verdict.ESCALATED)
    return Collection(name or f"{redundancy.policy} {redundancy.annotators}", taken, rounds, escalated)


def collect_per_hit(labels: np.ndarray, hit: np.ndarray, *, annotators: int = 3,
                    name: str = "2 per unit, 3rd per HIT") -> Collection:
    """Two labels per unit, then one more for every unit of a HIT where any unit's first two labels split.

    Settles on the fixed 3-label majority as `adaptive` does (a unit whose two labels agree keeps its majority),
    but pays for the third label of every unit of a HIT that has one split unit.
    """
    if annotators != 3:
        raise ValueError("The per-HIT top-up stands for a 3-annotator design.")
    split = labels[:, 0] != labels[:, 1]
    hit_has_split = np.bincount(hit, weights=split, minlength=hit.max() + 1) > 0
    topped_up = hit_has_split[hit]
    taken = np.where(topped_up, 3, 2)
    return Collection(name, taken, np.where(topped_up, 2, 1), np.zeros(len(labels), bool))


def majority(labels: np.ndarray, taken: np.ndarray, task: str) -> np.ndarray:
    """Each unit's majority over its collected labels, by exports.scores.majority_vote with the task's tie rule."""
    positions = np.arange(labels.shape[1])
    yes = (labels & (positions < taken[:, None])).sum(axis=1)
    # Only (yes, no) counts matter to a vote: ask majority_vote once per possible pair.
    width = labels.shape[1] + 1
    votes = np.zeros((width, width), bool)
    for y in range(width):
        for n in range(width - y):
            votes[y, n] = bool(majority_vote([True] * y + [False] * n, on_tie=TIE_BREAK[task]))
    return votes[yes, taken - yes]


@dataclasses.dataclass(frozen=True)
class Summary:
    """One policy on one group of units (a task, a domain, or several pooled)."""

    units: int
    labels: int
    fixed_labels: int  # what the fixed design paid for the same units
    same_majority: int  # units whose majority is the fixed design's
    errors: int  # units whose majority is not the simulated truth; an escalated unit by its current majority
    escalated: int
    escalated_errors: int
    settled_by_round: tuple[int, ...]  # units settled (not escalated) in round 1, 2, ...
    agreement_first_two: float = math.nan
    agreement_collected: float = math.nan

    @property
    def label_share(self) -> float:
        return self.labels / self.fixed_labels

    @property
    def same_majority_share(self) -> float:
        return self.same_majority / self.units

    @property
    def accuracy(self) -> float:
        return 1 - self.errors / self.units

    @property
    def escalated_share(self) -> float:
        return self.escalated / self.units

    @property
    def settled_accuracy(self) -> float:
        """Accuracy on the units the policy settled itself, escalated ones set aside for their reviewer."""
        settled = self.units - self.escalated
        return 1 - (self.errors - self.escalated_errors) / settled if settled else math.nan

    def settled_within(self, rounds: int) -> float:
        """Share of all units settled by the end of round `rounds` (escalated units never are)."""
        return sum(self.settled_by_round[:rounds]) / self.units

    @classmethod
    def pooled(cls, summaries: Iterable["Summary"]) -> "Summary":
        """Counts added up; agreement is left out, since it cannot be pooled across tasks."""
        summaries = list(summaries)
        length = max(len(summary.settled_by_round) for summary in summaries)
        rounds = np.zeros(length, np.int64)
        for summary in summaries:
            rounds[:len(summary.settled_by_round)] += summary.settled_by_round
        return cls(
            units=sum(s.units for s in summaries),
            labels=sum(s.labels for s in summaries),
            fixed_labels=sum(s.fixed_labels for s in summaries),
            same_majority=sum(s.same_majority for s in summaries),
            errors=sum(s.errors for s in summaries),
            escalated=sum(s.escalated for s in summaries),
            escalated_errors=sum(s.escalated_errors for s in summaries),
            settled_by_round=tuple(int(count) for count in rounds),
        )


def summarize(streams: LabelStreams, collection: Collection, fixed: Collection,
              within: np.ndarray | None = None) -> Summary:
    """`collection` against the fixed design's `fixed`, on the units `within` selects (all by default)."""
    within = np.ones(streams.units, bool) if within is None else within
    labels, truth = streams.labels[within], streams.truth[within]
    taken, fixed_taken = collection.taken[within], fixed.taken[within]
    escalated = collection.escalated[within]
    policy_majority = majority(labels, taken, streams.task)
    wrong = policy_majority != truth
    settled_rounds = collection.rounds[within][~escalated]
    coefficient = paper_coefficient(streams.task)
    collected = np.where(np.arange(labels.shape[1]) < taken[:, None], labels.astype(float), np.nan)
    return Summary(
        units=int(within.sum()),
        labels=int(taken.sum()),
        fixed_labels=int(fixed_taken.sum()),
        same_majority=int((policy_majority == majority(labels, fixed_taken, streams.task)).sum()),
        errors=int(wrong.sum()),
        escalated=int(escalated.sum()),
        escalated_errors=int((wrong & escalated).sum()),
        settled_by_round=tuple(int(count) for count in np.bincount(settled_rounds)[1:]),
        agreement_first_two=coefficient(labels[:, :2].astype(float)),
        agreement_collected=coefficient(collected[:, :max(int(taken.max(initial=0)), 1)]),
    )


def compare(streams: LabelStreams, collections: Mapping[str, Collection], fixed: str) -> dict[str, dict[str, Summary]]:
    """Every collection against `collections[fixed]`: {policy: {"all" or a domain name: Summary}}."""
    baseline = collections[fixed]
    result = {}
    for name, collection in collections.items():
        groups = {"all": summarize(streams, collection, baseline)}
        for index, domain in enumerate(streams.domains):
            within = streams.domain == index
            if within.any():
                groups[domain] = summarize(streams, collection, baseline, within)
        result[name] = groups
    return result


_VERDICTS = list(Verdict.values)


def _prefix_tables(redundancy: Redundancy) -> tuple[np.ndarray, np.ndarray]:
    """target[n, bits] and verdict[n, bits] for every sequence of n answers (answer k = bit k of `bits`)."""
    most = redundancy.most
    target = np.zeros((most + 1, 2 ** most), np.int64)
    verdict = np.zeros((most + 1, 2 ** most), np.int64)
    for count in range(most + 1):
        for bits in range(2 ** count):
            answers = [bool(bits >> k & 1) for k in range(count)]
            target[count, bits] = redundancy.target(answers)
            verdict[count, bits] = _VERDICTS.index(redundancy.verdict(answers))
    return target, verdict
