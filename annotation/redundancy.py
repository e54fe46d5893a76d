"""How many labels a unit needs: the redundancy policy of a project (BRIEF, "What a study costs").

UniSumEval gave every unit a fixed N = 3 annotators (paper 3.4) and took the majority (paper section 4). Once the
first counted labels of a unit already decide that majority, the labels after them cannot change it and buy nothing.
A policy says, from a unit's counted answers so far (in the order they were counted), whether the unit is settled,
needs one more label, or goes to a reviewer:

- `fixed`: N labels, whatever they say (the paper's design).
- `adaptive`: first the fewest labels that can decide the N-label majority (N // 2 + 1: two of three), then, while
  they cannot, the fewest more that could. The label it settles on is, by construction, the one N labels would
  give: a strict majority of N is reached by the same first labels, and a unit that reaches N is settled as the
  fixed design settles it (ties, possible only for an even N, by the task's tie rule, exports.scores.TIE_BREAK).
- `lead`: from two labels, the fewest more that could give one answer a lead of `margin` (after a 1-1 split, two:
  one more label can only lead by 1), until one does; a unit that reaches `cap` labels without that lead goes to
  review.

Asking for the fewest labels that could settle a unit never buys a label the unit would not have needed anyway, and it
settles in one round what one label at a time would take two rounds to settle.

The answers are the task's deciding question (FV: has an error; KV: useful; KA: aligned). An AI pre-label is never
an answer here: the benchmark exists to judge AI evaluators, so it must not decide a human label.
"""

from collections.abc import Sequence
from dataclasses import dataclass

from django.db import models

from corpus.models import Project
from corpus.models import RedundancyPolicy as Policy


class Verdict(models.TextChoices):
    COLLECTING = "collecting", "Collecting its first labels"
    NEEDS_MORE = "needs_more", "Needs more labels"
    SETTLED = "settled", "Settled"
    ESCALATED = "escalated", "Sent to review"


@dataclass(frozen=True)
class Redundancy:
    """A project's policy with its parameters: `annotators` is N of the fixed design it stands for."""

    policy: str
    annotators: int
    margin: int = 2
    cap: int = 5

    def __post_init__(self):
        if self.policy not in Policy.values:
            raise ValueError(f"Unknown redundancy policy {self.policy!r}: use one of {', '.join(Policy.values)}.")
        if self.annotators < 1:
            raise ValueError("A unit needs at least one annotator.")
        if self.policy == Policy.LEAD and not (1 <= self.margin <= self.cap and self.cap >= 2):
            raise ValueError("The lead policy needs a margin of at least 1 and a cap of at least 2 and at least "
                             "the margin.")

    @property
    def first_round(self) -> int:
        """How many labels every unit gets before any is judged."""
        if self.policy == Policy.FIXED:
            return self.annotators
        if self.policy == Policy.ADAPTIVE:
            return self.annotators // 2 + 1
        return min(2, self.cap)

    def places(self, round_: int) -> int:
        """The labels a HIT of this round asks of each of its units: the first round's, or one in a top-up (a top-up HIT
        whose units need more says so in its extra places, annotation.services.topups)."""
        return self.first_round if round_ == 0 else 1

    @property
    def most(self) -> int:
        """The most labels a unit can get."""
        return self.cap if self.policy == Policy.LEAD else self.annotators

    def verdict(self, answers: Sequence[bool]) -> str:
        """What the unit needs now, from its counted answers in the order they were counted."""
        count = len(answers)
        yes = sum(1 for answer in answers if answer)
        leading = max(yes, count - yes)
        if count < self.first_round:
            return Verdict.COLLECTING
        if self.policy == Policy.FIXED:
            return Verdict.SETTLED
        if self.policy == Policy.ADAPTIVE:
            # Decided once one answer holds a strict majority of N, or once N labels are in (as the fixed design).
            if leading > self.annotators // 2 or count >= self.annotators:
                return Verdict.SETTLED
            return Verdict.NEEDS_MORE
        if leading - (count - leading) >= self.margin:
            return Verdict.SETTLED
        return Verdict.ESCALATED if count >= self.cap else Verdict.NEEDS_MORE

    def target(self, answers: Sequence[bool]) -> int:
        """How many counted labels the unit should have once the labels now asked for are in."""
        verdict = self.verdict(answers)
        if verdict == Verdict.COLLECTING:
            return self.first_round
        if verdict == Verdict.NEEDS_MORE:
            return len(answers) + self.wanted(answers)
        return len(answers)

    def wanted(self, answers: Sequence[bool]) -> int:
        """The fewest more labels that could settle an undecided unit, within the most it may get."""
        count = len(answers)
        leading = max(sum(1 for answer in answers if answer), count - sum(1 for answer in answers if answer))
        if self.policy == Policy.ADAPTIVE:
            fewest = self.annotators // 2 + 1 - leading
        else:
            fewest = self.margin - (2 * leading - count)
        return max(1, min(fewest, self.most - count))


def redundancy_of(project: Project) -> Redundancy:
    return Redundancy(project.redundancy_policy, project.annotators_per_unit, margin=project.lead_margin,
                      cap=project.lead_cap)
