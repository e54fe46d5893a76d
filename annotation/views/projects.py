"""The manager's pages for projects, documents and imports."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Count, Prefetch
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from assist.selectors import assist_status
from corpus.models import DocumentSentence, KeyFact, Membership, Summary, SummarySentence
from corpus.uploads import IMPORT, import_start

from ..forms import ImportForm, ProjectForm
from ..permissions import (
    can_manage,
    get_managed_project,
    get_project,
    get_reviewed_project,
    projects_visible_to,
    readable_assignments,
    role_in,
)
from ..selectors import count_of
from .jobs import polled_fragment
from .pagination import paginate

DOCUMENTS_PER_PAGE = 50
WORK_PER_PAGE = 50


@login_required
def home(request):
    """Annotators land on their work; everybody else on the project list."""
    roles = set(request.user.memberships.values_list("role", flat=True))
    if roles == {Membership.Role.ANNOTATOR} and not can_manage(request.user):
        return redirect("work_home")
    return redirect("project_list")


@login_required
def project_list(request):
    projects = projects_visible_to(request.user).annotate(
        document_count=Count("documents", distinct=True)
    )
    # The corpus's size is the managers' business; the template shows it on their rows only.
    rows = [(project, role_in(project, request.user)) for project in projects]
    return render(request, "annotation/project_list.html", {"rows": rows, "can_create": can_manage(request.user)})


@login_required
@require_http_methods(["GET", "POST"])
def project_create(request):
    if not can_manage(request.user):
        raise PermissionDenied("Only manager accounts create projects.")
    form = ProjectForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        with transaction.atomic():
            project = form.save()
            Membership.objects.create(project=project, user=request.user, role=Membership.Role.MANAGER)
        messages.success(request, f"Project {project.name} created. Import a dataset to begin.")
        return redirect(project)
    return render(request, "annotation/project_form.html", {"form": form})


@login_required
def project_detail(request, slug):
    """Managers see the corpus; anybody else its own work here (annotation.permissions: what an annotator reads)."""
    project = get_project(request.user, slug)
    role = role_in(project, request.user)
    context = {"project": project, "role": role}
    if role == Membership.Role.MANAGER and request.htmx and request.GET.get("part") == "assist":
        # The assist card follows its run and counts again at every look, so the counts are current once it ends.
        assist = assist_status(project)
        running = assist["job"] is not None and not assist["job"].is_finished
        return polled_fragment(request, "assist/_card.html", {"project": project, "assist": assist}, stop=not running)
    if role == Membership.Role.MANAGER:
        # The counts are subqueries on the page's rows only: a join of summaries and key-facts would fan out.
        documents = (project.documents.annotate(summary_count=count_of(Summary.objects.all(), "document"),
                                                keyfact_count=count_of(KeyFact.objects.all(), "document"))
                     .order_by("domain", "uid", "pk"))
        page, query = paginate(request, documents, DOCUMENTS_PER_PAGE)
        context.update(
            page=page, query=query, document_total=page.paginator.count,
            summary_total=Summary.objects.filter(document__project=project).count(),
            jobs=project.jobs.all()[:10],
            assist=assist_status(project),
        )
    else:
        work = (readable_assignments(request).filter(hit__project=project).select_related("hit")
                .order_by("-reserved_at", "pk"))
        context["page"], context["query"] = paginate(request, work, WORK_PER_PAGE)
    return render(request, "annotation/project_detail.html", context)


@login_required
def document_detail(request, slug, pk):
    project = get_reviewed_project(request.user, slug)
    document = get_object_or_404(
        project.documents.prefetch_related(
            Prefetch("sentences", queryset=DocumentSentence.objects.order_by("index")),
            Prefetch("summaries", queryset=Summary.objects.order_by("model")),
            "keyfacts__mappings",
        ),
        pk=pk,
    )
    from assist.models import PreLabel

    sentences = (
        SummarySentence.objects.filter(summary__document=document)
        .prefetch_related("mappings", Prefetch("prelabels", queryset=PreLabel.objects.order_by("-created")))
        .order_by("summary_id", "index")
    )
    by_summary: dict[int, list] = {}
    for sentence in sentences:
        prelabels = list(sentence.prelabels.all())
        mapping = next(iter(sentence.mappings.all()), None)
        sentence.ai = prelabels[0] if prelabels else None
        sentence.highlight_ids = " ".join(f"s{i}" for i in mapping.highlighted) if mapping else ""
        by_summary.setdefault(sentence.summary_id, []).append(sentence)
    summaries = [(summary, by_summary.get(summary.pk, [])) for summary in document.summaries.all()]
    keyfacts = []
    for fact in document.keyfacts.all():
        mapping = next(iter(fact.mappings.all()), None)
        fact.highlight_ids = " ".join(f"s{i}" for i in mapping.highlighted) if mapping else ""
        keyfacts.append(fact)
    return render(request, "annotation/document_detail.html", {
        "project": project,
        "document": document,
        "turns": document.turns(),
        "summaries": summaries,
        "keyfacts": keyfacts,
    })


@login_required
@require_http_methods(["GET", "POST"])
def import_upload(request, slug):
    """Store the file and return at once: a worker checks every row and writes all or nothing; the job's page
    follows it and lists every problem by line."""
    project = get_managed_project(request.user, slug)
    form = ImportForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        job = import_start(project=project, upload=form.cleaned_data["file"], user=request.user)
        return redirect("job_status", project.slug, job.pk)
    return render(request, "annotation/import.html", {"project": project, "form": form,
                                                      "jobs": project.jobs.filter(kind=IMPORT)[:5]})
