"""Scripted annotators for quality-control tests: careful, random, and one that always agrees with the AI.

The careful one knows the checks' expected answers (a test oracle: a careful human gets them right by reading).
"""

import random

from annotation.ai_agreement import ai_right_for
from annotation.models import AttentionCheck, Task, Unit


def _check(unit: Unit) -> AttentionCheck | None:
    return AttentionCheck.objects.filter(unit=unit).first()


def careful(unit: Unit, asked: list[str], rng: random.Random) -> dict:
    check = _check(unit)
    if unit.task == Task.FACT_VERIFICATION:
        if check is not None:
            answer = {"has_error": True, "error_types": ["out_of_article"]}
            if "ai_right" in asked:
                answer["ai_right"] = check.expected["ai_right"]
            return answer
        has_error = unit.ai_category not in ("", "no_error")
        answer = {"has_error": has_error, "error_types": ["relation"] if has_error else []}
        if "ai_right" in asked:
            answer["ai_right"] = True
        return answer
    if unit.task == Task.KEYFACT_VALIDATION:
        return {"useful": check is None}
    if check is not None:
        return {"aligned": bool(check.expected.get("aligned", False))}
    return {"aligned": unit.row == unit.column}


def at_random(unit: Unit, asked: list[str], rng: random.Random) -> dict:
    """Clicks at random; on an FV item with the AI judgment shown, the page fills "is the AI right?" from the
    error answer (one decision), so the random click is the error answer alone."""
    answer = {name: rng.random() < 0.5 for name in asked}
    if "ai_right" in answer and "has_error" in answer:
        answer["ai_right"] = ai_right_for(unit.ai_category, answer["has_error"])
    if answer.get("has_error"):
        answer["error_types"] = [rng.choice(["entity", "relation", "sentence", "out_of_article"])]
    return answer


def agrees_with_ai(unit: Unit, asked: list[str], rng: random.Random) -> dict:
    """Takes the AI's judgment as it comes; says yes to every key-fact and alignment (no AI to lean on there)."""
    if unit.task == Task.FACT_VERIFICATION:
        has_error = unit.ai_category not in ("", "no_error")
        answer = {"has_error": has_error, "error_types": ["out_of_article"] if has_error else []}
        if "ai_right" in asked:
            answer["ai_right"] = True
        return answer
    return {"useful": True} if unit.task == Task.KEYFACT_VALIDATION else {"aligned": True}


def contrary(unit: Unit, asked: list[str], rng: random.Random) -> dict:
    """Careful on the real units, the opposite of what is expected on every check: fails for sure."""
    answer = careful(unit, asked, rng)
    check = _check(unit)
    if check is not None:
        for name, value in check.expected.items():
            if name in asked:
                answer[name] = not value
        if answer.get("has_error") is False:
            answer["error_types"] = []
    return answer


STRATEGIES = {"careful": careful, "random": at_random, "agrees_with_ai": agrees_with_ai, "contrary": contrary}


def answers(assignment, strategy, rng: random.Random) -> dict:
    hit = assignment.hit
    return {unit: strategy(unit, unit.question_fields(hit), rng) for unit in hit.units.order_by("position")}


def form_data(assignment, strategy, rng: random.Random) -> dict:
    """The same answers as the HIT page's plain form would post them."""
    data = {}
    for unit, answer in answers(assignment, strategy, rng).items():
        for name, value in answer.items():
            if name == "error_types":
                data[f"u{unit.position}-error_types"] = value
            else:
                data[f"u{unit.position}-{name}"] = "yes" if value else "no"
    return data
