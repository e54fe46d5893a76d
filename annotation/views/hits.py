"""The HIT page an annotator works on: one view for the page, one per saved answer, one for the submission.

The page works without JavaScript (one form posts every answer to `hit_submit`); with it, every answer is saved as
it is given (htmx posts one item to `hit_answer`) and the keyboard drives everything (static/finegrain/hit.js).
"""

from uuid import uuid4

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from assist.models import Category

from ..ai_agreement import ai_says_error
from ..models import Assignment, ErrorType, Task
from ..permissions import annotator_required, get_own_assignment
from ..selectors import assignment_flags, assignment_labels, hit_units, unit_at
from ..serializers import UnitDisplaySerializer
from ..services.answers import InvalidAnswers, read_form, save_answers
from ..services.assignment import AlreadySubmitted, MissingAnswers, WorkRefused, return_assignment, submit_assignment
from ..services.flags import flag_item, read_flags, save_flags
from ..wording import QUESTION_NAMES, describe_unit

ERROR_TYPE_KEYS = [(str(number), value, label) for number, (value, label) in enumerate(ErrorType.choices, 1)]
AI_CATEGORIES = dict(Category.choices)
# A position no HIT has, reversed in an item's address and then replaced by the item's own.
_POSITION_SLOT_NUMBER = 987654321
_POSITION_SLOT = f"/{_POSITION_SLOT_NUMBER}/"


def _answer_state(label) -> dict:
    def yes_no(value):
        return "" if value is None else ("yes" if value else "no")

    if label is None:
        return {"has_error": "", "ai_right": "", "useful": "", "aligned": "", "error_types": [], "seconds": "0"}
    return {"has_error": yes_no(label.has_error), "ai_right": yes_no(label.ai_right), "useful": yes_no(label.useful),
            "aligned": yes_no(label.aligned), "error_types": label.error_types,
            "seconds": str(round(label.seconds_on_item, 1))}


def _item(unit, display: dict, label, hit, urls: dict, flag: str = "") -> dict:
    fields = unit.question_fields(hit)
    missing = label.missing(unit, hit) if label else list(fields)
    names = [f"u{unit.position}-{name}" for name in (*fields, "seconds")]
    if unit.task == Task.FACT_VERIFICATION:
        names.append(f"u{unit.position}-error_types")
    # Text, not numbers: the template engine would format each number for the locale, eight items x ten times.
    position = str(unit.position)
    return {
        "unit": display,
        "position": position,
        "answer_url": urls["answer"].replace(_POSITION_SLOT, f"/{position}/"),
        "flag_url": urls["flag"].replace(_POSITION_SLOT, f"/{position}/"),
        "name": describe_unit(unit),
        "prefix": f"u{unit.position}",
        "answers": _answer_state(label),
        "required": " ".join(fields),
        "params": ",".join(names),
        "missing": [QUESTION_NAMES[name] for name in missing],
        "has_label": label is not None,
        "highlight": " ".join(str(index) for index in display.get("highlighted") or []),
        "ai_category_label": AI_CATEGORIES.get(display.get("ai_category", ""), display.get("ai_category", "")),
        "ai_says_error": _ai_says_error(fields, display),
        "ai_right_options": _ai_right_options(fields, display),
        "flag": flag,
    }


def _ai_says_error(fields: list[str], display: dict) -> str:
    """The AI judgment as "yes" (an error) or "no" where the item asks whether the AI is right (the page fills the
    error answer from it); blank elsewhere."""
    if "ai_right" not in fields:
        return ""
    return "yes" if ai_says_error(display.get("ai_category", "")) else "no"


def _ai_right_options(fields: list[str], display: dict) -> list[tuple[str, str, str]]:
    """Agreeing with the AI answers the error question too (annotation.ai_agreement): each choice says so."""
    says_error = _ai_says_error(fields, display)
    if not says_error:
        return []
    verdicts = ("it has an error", "no error") if says_error == "yes" else ("no error", "it has an error")
    return [("yes", f"Right: {verdicts[0]}", "r"), ("no", f"Wrong: {verdicts[1]}", "w")]


def hit_context(assignment: Assignment, **extra) -> dict:
    """Everything the HIT page shows, in a fixed number of queries whatever the size of the HIT."""
    hit = assignment.hit
    units = hit_units(hit.pk)
    labels = assignment_labels(assignment.pk)
    flags = assignment_flags(assignment.pk)
    display = UnitDisplaySerializer(units, many=True, context={"hit": hit}).data
    # Each item's two addresses, reversed once per page rather than twice per item.
    urls = {name: reverse(view, args=[assignment.public_id, _POSITION_SLOT_NUMBER])
            for name, view in (("answer", "hit_answer"), ("flag", "hit_flag"))}
    items = [_item(unit, data, labels.get(unit.pk), hit, urls, flags.get(unit.pk, ""))
             for unit, data in zip(units, display)]
    rows: list[dict] = []
    # A first-round KA HIT is a summary's grid; a later one holds a few scattered pairs, shown as a list (`rows`
    # stays empty) like FV and KV items.
    if hit.task == Task.KEYFACT_ALIGNMENT and hit.round == 0:
        for item, unit in zip(items, units):
            if not rows or rows[-1]["row"] != unit.row:
                rows.append({"row": unit.row, "number": unit.row + 1, "text": unit.text, "items": []})
            rows[-1]["items"].append(item)
    return {
        "assignment": assignment,
        "hit": hit,
        "project": hit.project,
        "document": hit.document,
        # Called by the template only when the rendered source is not in the cache.
        "turns": lambda: hit.document.turns(),
        "items": items,
        "rows": rows,
        "answered": sum(1 for item in items if not item["missing"]),
        "error_type_keys": ERROR_TYPE_KEYS,
        "error_options": [("yes", "Yes", "y"), ("no", "No", "n")],
        "useful_options": [("yes", "Useful", "y"), ("no", "Not useful", "n")],
        "aligned_options": [("yes", "Yes", "y"), ("no", "No", "n")],
        "submission_key": uuid4().hex,
        "instructions_task": hit.task,
        **extra,
    }


def _render_page(request, assignment, status=200, **extra):
    return render(request, "annotation/hit/page.html", hit_context(assignment, **extra), status=status)


@annotator_required
@require_GET
def hit_page(request, assignment_id):
    assignment = get_own_assignment(request, assignment_id)
    if assignment.status == Assignment.Status.SUBMITTED:
        messages.info(request, "You have submitted this HIT; thank you.")
        return redirect("work_home")
    if assignment.status == Assignment.Status.RETURNED:
        messages.info(request, "You returned this HIT.")
        return redirect("work_home")
    return _render_page(request, assignment)


@annotator_required
@require_POST
def hit_answer(request, assignment_id, position):
    """Save the answers of one item (htmx); the response is the item's save state."""
    assignment = get_own_assignment(request, assignment_id, with_document=False)
    unit = unit_at(assignment.hit_id, position)
    context = {"position": position}
    if unit is None:
        return render(request, "annotation/hit/_state.html", {**context, "error": "There is no such item."},
                      status=404)
    try:
        answers = read_form(request.POST, [unit])
        if not answers:
            raise InvalidAnswers({describe_unit(unit): ["No answer was sent."]})
        labels = save_answers(assignment=assignment, answers=answers)
    except InvalidAnswers as invalid:
        return render(request, "annotation/hit/_state.html", {**context, "error": str(invalid)}, status=400)
    except WorkRefused as refusal:
        return render(request, "annotation/hit/_state.html", {**context, "error": str(refusal)},
                      status=refusal.status_code)
    label = labels.get(unit.pk)
    missing = label.missing(unit, assignment.hit) if label else unit.question_fields(assignment.hit)
    return render(request, "annotation/hit/_state.html",
                  {**context, "saved": True, "missing": [QUESTION_NAMES[name] for name in missing]})


@annotator_required
@require_POST
def hit_flag(request, assignment_id, position):
    """Flag one item with a comment for the manager, or withdraw the flag (htmx); the response is the item's flag
    state. Without JavaScript the flags travel with the submitted form instead."""
    assignment = get_own_assignment(request, assignment_id, with_document=False)
    unit = unit_at(assignment.hit_id, position)
    context = {"position": position}
    if unit is None:
        return render(request, "annotation/hit/_flag_state.html", {**context, "error": "There is no such item."},
                      status=404)
    try:
        flag = flag_item(assignment=assignment, unit=unit, comment=request.POST.get(f"u{position}-flag", ""))
    except (InvalidAnswers, WorkRefused) as refusal:
        return render(request, "annotation/hit/_flag_state.html", {**context, "error": str(refusal)},
                      status=refusal.status_code)
    return render(request, "annotation/hit/_flag_state.html", {**context, "saved": True, "flag": flag})


@annotator_required
@require_POST
def hit_submit(request, assignment_id):
    """Save every answer the form carries, then submit. A resent submit lands on the same thank-you."""
    assignment = get_own_assignment(request, assignment_id)
    if assignment.status == Assignment.Status.SUBMITTED:
        messages.info(request, "This HIT was already submitted; nothing changed.")
        return redirect("work_home")
    units = list(assignment.hit.units.all())
    try:
        answers = read_form(request.POST, units)
        if answers:
            save_answers(assignment=assignment, answers=answers)
        save_flags(assignment=assignment, flags=read_flags(request.POST, units))
        result = submit_assignment(assignment=assignment, submission_key=request.POST.get("submission_key", ""))
    except AlreadySubmitted:
        messages.info(request, "This HIT was already submitted; nothing changed.")
        return redirect("work_home")
    except InvalidAnswers as invalid:
        return _render_page(request, assignment, status=400, form_errors=invalid.errors)
    except MissingAnswers as missing:
        assignment.refresh_from_db()
        return _render_page(request, assignment, status=400,
                            missing_answers=[(describe_unit(unit), [QUESTION_NAMES[name] for name in fields])
                                             for unit, fields in missing.missing])
    except WorkRefused as refusal:
        messages.error(request, str(refusal))
        return redirect("work_home")
    if result.already_submitted:
        messages.info(request, "This HIT was already submitted; nothing changed.")
    else:
        messages.success(request, "HIT submitted. Thank you!")
    return redirect("work_home")


@annotator_required
@require_POST
def hit_return(request, assignment_id):
    assignment = get_own_assignment(request, assignment_id)
    try:
        return_assignment(assignment=assignment)
    except WorkRefused as refusal:
        messages.error(request, str(refusal))
    else:
        messages.info(request, "You returned the HIT; it goes to another annotator.")
    return redirect("work_home")
