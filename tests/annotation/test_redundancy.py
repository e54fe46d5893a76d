"""The redundancy policies: adaptive collection settles on the fixed design's majority by construction (checked over
every label sequence, not a sample), and each policy stops where it says it stops."""

import itertools

import pytest

from annotation.redundancy import Policy, Redundancy, Verdict
from exports.scores import TIE_BREAK, majority_vote


def collect(redundancy: Redundancy, stream: tuple[bool, ...]) -> tuple[bool, ...]:
    """Take labels from `stream` (what annotators would answer, in order) as the policy asks for them."""
    taken: list[bool] = []
    while True:
        verdict = redundancy.verdict(taken)
        if verdict in (Verdict.SETTLED, Verdict.ESCALATED):
            return tuple(taken)
        taken.extend(stream[len(taken):redundancy.target(taken)])


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7])
@pytest.mark.parametrize("task", ["fv", "kv", "ka"])
def test_adaptive_settles_every_stream_on_the_majority_the_fixed_design_gives(n, task):
    adaptive, fixed = Redundancy(Policy.ADAPTIVE, n), Redundancy(Policy.FIXED, n)
    for stream in itertools.product((False, True), repeat=n):
        taken = collect(adaptive, stream)
        assert collect(fixed, stream) == stream
        assert len(taken) <= n and stream[:len(taken)] == taken
        assert majority_vote(list(taken), on_tie=TIE_BREAK[task]) == majority_vote(list(stream), on_tie=TIE_BREAK[task])


def test_with_three_annotators_two_agreeing_labels_settle_a_unit_and_a_split_asks_for_one_more():
    adaptive = Redundancy(Policy.ADAPTIVE, 3)
    assert adaptive.first_round == 2 and adaptive.most == 3
    assert adaptive.verdict([]) == Verdict.COLLECTING and adaptive.target([]) == 2
    assert adaptive.verdict([True]) == Verdict.COLLECTING and adaptive.target([True]) == 2
    assert adaptive.verdict([True, True]) == Verdict.SETTLED
    assert adaptive.verdict([False, False]) == Verdict.SETTLED
    assert adaptive.verdict([True, False]) == Verdict.NEEDS_MORE and adaptive.target([True, False]) == 3
    assert adaptive.verdict([True, False, False]) == Verdict.SETTLED


def test_five_annotators_start_with_three_and_stop_at_a_strict_majority():
    adaptive = Redundancy(Policy.ADAPTIVE, 5)
    assert adaptive.first_round == 3
    assert adaptive.verdict([True, True, True]) == Verdict.SETTLED
    assert adaptive.verdict([True, True, False]) == Verdict.NEEDS_MORE
    assert adaptive.verdict([True, True, False, True]) == Verdict.SETTLED
    assert adaptive.verdict([True, True, False, False]) == Verdict.NEEDS_MORE
    assert adaptive.verdict([True, True, False, False, False]) == Verdict.SETTLED


def test_lead_adds_labels_until_a_margin_and_escalates_at_its_cap():
    lead = Redundancy(Policy.LEAD, 3, margin=2, cap=5)
    assert lead.first_round == 2 and lead.most == 5
    assert lead.verdict([True, True]) == Verdict.SETTLED
    assert lead.verdict([True, False]) == Verdict.NEEDS_MORE
    assert lead.verdict([True, False, True]) == Verdict.NEEDS_MORE  # leads by one only
    assert lead.verdict([True, False, True, True]) == Verdict.SETTLED
    assert lead.verdict([True, False, True, False]) == Verdict.NEEDS_MORE
    assert lead.verdict([True, False, True, False, True]) == Verdict.ESCALATED
    # Every stream of five ends settled with the lead, or escalated without it, and never asks for a sixth.
    for stream in itertools.product((False, True), repeat=5):
        taken = collect(lead, stream)
        yes = sum(taken)
        assert len(taken) <= 5
        assert lead.verdict(taken) == (Verdict.SETTLED if abs(2 * yes - len(taken)) >= 2 else Verdict.ESCALATED)


def test_fixed_takes_n_labels_whatever_they_say():
    fixed = Redundancy(Policy.FIXED, 3)
    assert fixed.verdict([True, True]) == Verdict.COLLECTING
    assert fixed.verdict([True, False, True]) == Verdict.SETTLED


@pytest.mark.parametrize("kwargs, message", [
    ({"policy": "vote", "annotators": 3}, "Unknown redundancy policy"),
    ({"policy": "adaptive", "annotators": 0}, "at least one annotator"),
    ({"policy": "lead", "annotators": 3, "margin": 3, "cap": 2}, "cap of at least 2 and at least the margin"),
    ({"policy": "lead", "annotators": 3, "margin": 0, "cap": 5}, "margin of at least 1"),
])
def test_a_policy_that_cannot_work_is_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Redundancy(**kwargs)


def test_an_undecided_unit_asks_at_once_for_the_fewest_labels_that_could_settle_it():
    lead = Redundancy(Policy.LEAD, 3, margin=2, cap=5)
    # After a 1-1 split one more label can only lead by one: two are asked in the same round.
    assert lead.target([True, False]) == 4
    assert lead.target([True, False, True]) == 4
    # 2-2 could only reach a lead of one by the cap; the cap still bounds what is asked.
    assert lead.target([True, False, True, False]) == 5
    assert Redundancy(Policy.LEAD, 3, margin=3, cap=5).target([True, False]) == 5
    adaptive = Redundancy(Policy.ADAPTIVE, 5)
    assert adaptive.target([True, False, True]) == 4
    assert adaptive.target([True, True, False, False]) == 5
    # Asking the fewest at once buys no label that one at a time would not have bought: the same labels are taken.
    for policy in (lead, adaptive, Redundancy(Policy.ADAPTIVE, 3)):
        for stream in itertools.product((False, True), repeat=policy.most):
            assert collect(policy, stream) == tuple(one_at_a_time(policy, stream))


def one_at_a_time(policy: Redundancy, stream) -> list[bool]:
    taken = list(stream[:policy.first_round])
    while policy.verdict(taken) == Verdict.NEEDS_MORE:
        taken.append(stream[len(taken)])
    return taken
