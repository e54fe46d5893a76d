"""The reviewer's page: units whose annotators disagree or that an annotator flagged as broken or unclear, every
counted label with its annotator's pseudonym and the AI judgment that was shown, every flag with its comment, who
and when, an adjudicated label with a reason (keyboard: static/finegrain/review.js); managers send a HIT back for
more labels.

The list is read from the tally a job keeps (annotation.services.review_tally, stored numbers): while the labels
have changed since, the page shows the stored list marked as of when it was tallied, with a button that asks for a
new tally; adjudications are read live."""

import uuid

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Q
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from corpus.models import Document, Membership, Summary
from corpus.snapshots import numbers_state

from ..models import Annotator, ErrorType, Label, Task, Unit, UnitState
from ..models.assignment import counted_submission_q
from ..permissions import get_managed_hit, get_reviewed_project, role_in
from ..selectors import REVIEW_STATES, agreement_summary, split_units, unit_flags, units_of
from ..services.review import ReviewRefused, adjudicate, send_back, withdraw
from ..services.review_tally import KIND as TALLY_KIND
from .next_page import next_page

PAGE_SIZE = 20
AGREEMENT_LEVELS = [("", "any"), ("0.5", "an even split"), ("0.67", "at most two thirds"), ("0.75", "at most 3 in 4")]


def _filters(request, annotators) -> dict:
    get = request.GET
    task = get.get("task") if get.get("task") in Task.values else Task.FACT_VERIFICATION
    annotator = None
    if get.get("annotator"):
        annotator = annotators.filter(public_id__in=[value for value in [get["annotator"]] if _is_uuid(value)]).first()
    level = get.get("agreement", "")
    return {"task": task, "domain": get.get("domain", "")[:100], "summarizer": get.get("summarizer", "")[:100],
            "annotator": annotator, "agreement": level if level in dict(AGREEMENT_LEVELS) else "",
            "settled": get.get("settled", "") if get.get("settled") in ("yes", "no") else "",
            "checks": get.get("checks", "") if get.get("checks") in ("missed", "clean") else "",
            "state": get.get("state", "") if get.get("state") in REVIEW_STATES else "",
            "flagged": get.get("flagged", "") if get.get("flagged") in ("yes", "no") else ""}


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


@login_required
@require_GET
def review(request, slug):
    project = get_reviewed_project(request.user, slug)
    tally = numbers_state(project, TALLY_KIND)
    stored = tally.data or {"pairs": {}, "annotators": []}
    # The annotators with labels in the project, as tallied (finding them reads every label).
    annotators = Annotator.objects.filter(pk__in=stored["annotators"])
    chosen = _filters(request, annotators)
    units = split_units(project, chosen["task"], domain=chosen["domain"], summarizer=chosen["summarizer"],
                        annotator=chosen["annotator"], settled=chosen["settled"], checks=chosen["checks"],
                        state=chosen["state"], flagged=chosen["flagged"],
                        most_agreement=float(chosen["agreement"]) if chosen["agreement"] else None)
    page = Paginator(units, PAGE_SIZE).get_page(request.GET.get("page"))
    listed = units_of(list(page.object_list))
    # A unit's labels are its own and those of its top-ups (annotation.services.topups), in the order they came.
    labels: dict[int, list] = {}
    for label in (Label.objects.filter(counted_submission_q("assignment__"))
                  .filter(Q(unit__in=listed) | Q(unit__origin__in=listed))
                  .select_related("annotator__user", "unit").order_by("assignment__submitted_at", "pk")):
        labels.setdefault(label.unit.origin_id or label.unit_id, []).append(label)
    states = UnitState.objects.in_bulk([unit.pk for unit in listed])
    flags = unit_flags(listed)
    cards = [{"unit": unit, "labels": labels.get(unit.pk, []), "state": states.get(unit.pk),
              "flags": flags.get(unit.pk, []),
              "shown_ai": unit.hit.shows_ai_label and unit.ai_category,
              "shown_reason": unit.hit.effective_assistance == "reason" and unit.ai_reason} for unit in listed]
    query = request.GET.copy()
    query.pop("page", None)
    return render(request, "annotation/review/review.html", {
        "project": project, "chosen": chosen, "page": page, "cards": cards, "query": query.urlencode(),
        "tally": tally,
        "tasks": Task.choices, "levels": AGREEMENT_LEVELS, "error_types": list(enumerate(ErrorType.choices, 1)),
        "domains": Document.objects.filter(project=project).order_by("domain").values_list("domain", flat=True)
        .distinct(),
        "summarizers": Summary.objects.filter(document__project=project).order_by("model")
        .values_list("model", flat=True).distinct(),
        "annotators": annotators.order_by("public_id"),
        "agreement": agreement_summary(project, chosen["task"], among=stored["pairs"].get(chosen["task"], [0, 0])),
        "manages": role_in(project, request.user) == Membership.Role.MANAGER,
    })


def _back(request, slug, unit=None):
    """To the list the form came from (only a page of this site), at the unit."""
    target = next_page(request, reverse("review", args=[slug]))
    return HttpResponseRedirect(target.split("#")[0] + (f"#unit-{unit.public_id}" if unit is not None else ""))


@login_required
@require_POST
def review_unit(request, slug, unit_id):
    """Adjudicate a unit (or withdraw the adjudication) and go back to the list where it was."""
    project = get_reviewed_project(request.user, slug)
    unit = Unit.objects.filter(hit__project=project, public_id=unit_id).select_related("hit").first()
    if unit is None:
        raise Http404("No such unit")
    try:
        if request.POST.get("withdraw"):
            withdraw(unit=unit)
            messages.success(request, "The adjudication is withdrawn.")
        else:
            adjudicate(unit=unit, reviewer=request.user, answer=request.POST.get("answer", ""),
                       error_types=request.POST.getlist("error_types"), reason=request.POST.get("reason", ""))
            messages.success(request, "Adjudicated.")
    except ReviewRefused as refusal:
        messages.error(request, f"Not saved: {refusal}")
    return _back(request, slug, unit)


@login_required
@require_POST
def hit_send_back(request, slug, hit_id):
    hit = send_back(hit=get_managed_hit(request.user, slug, hit_id))
    messages.success(request, f"The HIT is open for one more annotator ({hit.places} in all); each of its units gets "
                              "one more label.")
    return _back(request, slug)
