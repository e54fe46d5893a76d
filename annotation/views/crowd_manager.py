"""The manager's crowd pages: publish (dry run first), batch status, spend, per-worker history, manual decisions,
private links. Every manual approve/reject/bonus/block is a Decision row with `created_by` (the outbox runs it).
"""

import uuid

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import DecimalField, Exists, OuterRef, Subquery, Sum
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from ..crowd import outbox
from ..crowd.base import usd
from ..crowd.links import link_create, link_revoke, link_token
from ..crowd.publishing import plan_publish, publish_start
from ..crowd.registry import NAMES, closure_notice, get_provider, offered
from ..crowd.tasks import enqueue
from ..forms import BonusForm, DecisionForm, PrivateLinkForm, form_problems
from ..job_kinds import PUBLISH
from ..models import Annotator, Assignment, CrowdHit, Decision, LedgerEntry, PrivateLink, Provider, Task
from ..permissions import get_managed_project, get_project_annotator
from ..selectors import count_of
from .pagination import paginate

ROWS_PER_PAGE = 50
FAILED_SHOWN = 20


def batch_status(batches) -> list[dict]:
    """The figures of each of `batches` (a page of them), in one query whatever their number: each figure is a
    subquery on the batch's row (joins of claims, decisions and ledger entries would multiply one another)."""
    claims = Assignment.objects.filter(crowd_claim__batch__isnull=False)
    submitted = claims.filter(status=Assignment.Status.SUBMITTED)
    decided = Decision.objects.filter(assignment__crowd_claim__batch__isnull=False, status=Decision.Status.DONE)
    paid = (LedgerEntry.objects.filter(batch=OuterRef("pk")).order_by().values("batch")
            .annotate(total=Sum("amount_usd")).values("total"))
    figures = batches.annotate(
        published=count_of(CrowdHit.objects.filter(published_at__isnull=False), "batch"),
        accepted=count_of(claims, "crowd_claim__batch"),
        submitted=count_of(submitted, "crowd_claim__batch"),
        # Not confirmed by the provider yet (nothing of theirs counts), and set aside as unknown to it.
        unconfirmed=count_of(submitted.filter(confirmed_at__isnull=True), "crowd_claim__batch"),
        discarded=count_of(claims.filter(status=Assignment.Status.DISCARDED), "crowd_claim__batch"),
        approved=count_of(decided.filter(kind=Decision.Kind.APPROVE), "assignment__crowd_claim__batch"),
        rejected=count_of(decided.filter(kind=Decision.Kind.REJECT), "assignment__crowd_claim__batch"),
        # Places reopened on the provider for failed submissions (a Prolific rejection frees its own): each may be
        # taken and paid, so the batch may pay up to this many rewards beyond its estimate.
        places_added=count_of(decided.filter(kind=Decision.Kind.ADD_PLACE).exclude(
            provider_response__has_key="local"), "assignment__crowd_claim__batch"),
        paid=Subquery(paid, output_field=DecimalField(max_digits=10, decimal_places=2)))
    return [{"batch": batch, **{name: getattr(batch, name) for name in BATCH_FIGURES},
             "paid": usd(batch.paid or 0)} for batch in figures]


BATCH_FIGURES = ("published", "accepted", "submitted", "unconfirmed", "discarded", "approved", "rejected",
                 "places_added")


@login_required
@require_GET
def manage(request, slug):
    project = get_managed_project(request.user, slug)
    # Every list here grows with the crowd work: a page of each, with its own page number.
    batches, batches_query = paginate(request, project.crowd_batches.order_by("-created", "pk"), ROWS_PER_PAGE,
                                      "batches_page")
    failed = (Decision.objects.filter(project=project, status=Decision.Status.FAILED).select_related("annotator")
              .order_by("created", "pk"))
    links, links_query = paginate(request, project.private_links.select_related("annotator")
                                  .order_by("-created", "-pk"), ROWS_PER_PAGE, "links_page")
    workers = (Annotator.objects.with_status_in(project)
               .filter(Exists(Assignment.objects.filter(annotator=OuterRef("pk"), hit__project=project)))
               .exclude(provider=Annotator.Provider.ACCOUNT).order_by("created", "pk"))
    workers, workers_query = paginate(request, workers, ROWS_PER_PAGE, "workers_page")
    context = {
        "project": project, "batches": batch_status(project.crowd_batches.filter(
            pk__in=[batch.pk for batch in batches]).order_by("-created", "pk")),
        "batches_page": batches, "batches_query": batches_query, "spend": outbox.spend(project),
        "pending": Decision.objects.filter(project=project, status=Decision.Status.PENDING).count(),
        "failed": failed[:FAILED_SHOWN], "failed_total": failed.count(), "failed_shown": FAILED_SHOWN,
        "links": links, "links_query": links_query, "tasks": Task.choices,
        "providers": offered(), "closures": [notice for name in NAMES if (notice := closure_notice(name))],
        "workers": workers, "workers_query": workers_query,
        "jobs": project.jobs.filter(kind=PUBLISH)[:5],
    }
    return render(request, "annotation/crowd/manage.html", context)


@login_required
def publish(request, slug):
    """GET ?task=&provider=: the dry run (what would be created, what it costs); POST with confirm: publish."""
    project = get_managed_project(request.user, slug)
    data = request.POST if request.method == "POST" else request.GET
    task, provider = data.get("task", ""), data.get("provider", "")
    sandbox = data.get("sandbox") in ("1", "on", "true")
    if task not in Task.values or provider not in Provider.values:
        messages.error(request, "Choose a task and a provider.")
        return redirect("crowd_manage", slug)
    plan = plan_publish(project=project, task=task, provider=provider, sandbox=sandbox)
    if request.method == "POST" and not plan.problems:
        if data.get("confirm") != "yes":
            messages.error(request, "Confirm the cost to publish.")
        elif not plan.items:
            messages.info(request, "Every HIT of this task is already published there.")
        else:
            job = publish_start(project=project, task=task, provider=provider, sandbox=sandbox, user=request.user)
            messages.success(request, f"Publishing {len(plan.items)} HITs (job #{job.pk}): progress shows below.")
        return redirect("crowd_manage", slug)
    # A plan that cannot be published (pay under the floor, a missing setting) is refused, dry run or not: the page
    # lists why, with nothing created.
    return render(request, "annotation/crowd/publish.html", {
        "project": project, "plan": plan, "estimate": plan.estimate.as_dict(), "task_label": Task(task).label,
        "provider_label": Provider(provider).label, "has_sandbox": get_provider(provider).has_sandbox,
        "closure": closure_notice(provider)}, status=400 if plan.problems else 200)


@login_required
@require_GET
def worker(request, slug, annotator_id):
    # One worker, however many assignments they hold here (a join on them would repeat the row).
    project, annotator = get_project_annotator(request.user, slug, annotator_id)
    assignments = (Assignment.objects.filter(annotator=annotator, hit__project=project)
                   .select_related("hit", "grade", "crowd_claim").order_by("-reserved_at", "-pk"))
    # A worker's history grows with their work: a page of each list, each with its own page number.
    assignments, assignments_query = paginate(request, assignments, ROWS_PER_PAGE)
    decisions, decisions_query = paginate(
        request, Decision.objects.filter(project=project, annotator=annotator).prefetch_related("rests_on__hit")
        .order_by("created", "pk"), ROWS_PER_PAGE, "decisions_page")
    ledger, ledger_query = paginate(request, LedgerEntry.objects.filter(project=project, annotator=annotator)
                                    .order_by("created", "pk"), ROWS_PER_PAGE, "ledger_page")
    return render(request, "annotation/crowd/worker.html", {
        "project": project, "annotator": annotator, "assignments": assignments,
        "assignments_query": assignments_query, "standing": annotator.standing_in(project),
        "decisions": decisions, "decisions_query": decisions_query,
        "ledger": ledger, "ledger_query": ledger_query,
        "nonce": uuid.uuid4().hex, "kinds": Decision.Kind.choices})


@login_required
@require_POST
def decide(request, slug, annotator_id):
    """A manager's decision, carried out by the outbox. The form's nonce keeps a resent form from paying twice."""
    project, annotator = get_project_annotator(request.user, slug, annotator_id)
    back = redirect("crowd_worker", slug, annotator.public_id)
    form = DecisionForm(request.POST)
    bonus = BonusForm(request.POST) if request.POST.get("kind") == Decision.Kind.BONUS else None
    if not form.is_valid() or (bonus is not None and not bonus.is_valid()):
        messages.error(request, form_problems(form, bonus))
        return back
    kind, reason, nonce = form.cleaned_data["kind"], form.cleaned_data["reason"], form.cleaned_data["nonce"]
    assignment, amount = None, bonus.cleaned_data["amount"] if bonus is not None else None
    if kind in (Decision.Kind.APPROVE, Decision.Kind.REJECT, Decision.Kind.ADD_PLACE):  # a place: on that one's HIT
        assignment = Assignment.objects.filter(public_id=form.cleaned_data["assignment"], annotator=annotator,
                                               hit__project=project, status=Assignment.Status.SUBMITTED).first()
        if assignment is None:
            messages.error(request, "Choose one of the worker's submitted assignments.")
            return back
        if not assignment.is_confirmed:
            messages.error(request, f"{annotator.get_provider_display()} has not confirmed this submission as the "
                                    "worker's yet; decide once sync has (nothing of it counts until then).")
            return back
    decision, created = Decision.objects.get_or_create(
        idempotency_key=f"manual:{kind}:{annotator.pk}:{nonce}",
        defaults={"project": project, "annotator": annotator, "assignment": assignment, "kind": kind,
                  "amount_usd": amount, "reason": reason, "created_by": request.user})
    if created:
        if assignment is not None:
            decision.rests_on.set([assignment])
        enqueue(decision)
        messages.success(request, f"{decision.get_kind_display()} recorded; it is being carried out.")
    else:
        messages.info(request, "This decision was already recorded.")
    return back


@login_required
@require_POST
def link_new(request, slug):
    project = get_managed_project(request.user, slug)
    form = PrivateLinkForm(request.POST)
    if not form.is_valid():
        messages.error(request, f"No link was made: {form_problems(form)}")
        return redirect("crowd_manage", slug)
    label = form.cleaned_data["label"]
    link = link_create(project=project, task=form.cleaned_data["task"], label=label, days=form.cleaned_data["days"],
                       created_by=request.user)
    url = request.build_absolute_uri(reverse("crowd_link", args=[link_token(link)]))
    messages.success(request, f"Link for {label} (copy it now, it is shown once): {url}")
    return redirect("crowd_manage", slug)


@login_required
@require_POST
def link_revoke_view(request, slug, link_id):
    project = get_managed_project(request.user, slug)
    link = get_object_or_404(PrivateLink, public_id=link_id, project=project)
    link_revoke(link=link)
    messages.success(request, f"The link for {link.label} no longer works.")
    return redirect("crowd_manage", slug)


