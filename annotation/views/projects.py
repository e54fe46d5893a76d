"""The manager's pages for projects, documents and imports."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Count, Prefetch
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from ..forms import ImportForm, ProjectForm
from ..importing import DatasetError, import_dataset
from ..models import Document, DocumentSentence, Membership, Summary, SummarySentence
from ..permissions import can_manage, get_managed_project, get_project, projects_visible_to, role_in


@login_required
def home(request):
    """Annotators land on their work; everybody else on the project list."""
    roles = set(request.user.memberships.values_list("role", flat=True))
    if roles == {Membership.Role.ANNOTATOR} and not request.user.is_staff:
        return redirect("work_home")
    return redirect("project_list")


@login_required
def project_list(request):
    projects = projects_visible_to(request.user).annotate(
        document_count=Count("documents", distinct=True)
    )
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
    project = get_project(request.user, slug)
    documents = (
        project.documents.annotate(summary_count=Count("summaries", distinct=True),
                                   keyfact_count=Count("keyfacts", distinct=True))
        .order_by("domain", "uid")
    )
    context = {
        "project": project,
        "role": role_in(project, request.user),
        "documents": documents,
        "summary_total": Summary.objects.filter(document__project=project).count(),
        "jobs": project.jobs.all()[:10],
    }
    if context["role"] == Membership.Role.MANAGER:
        from assist.views import assist_status

        context["assist"] = assist_status(project)
    return render(request, "annotation/project_detail.html", context)


@login_required
def document_detail(request, slug, pk):
    project = get_managed_project(request.user, slug)
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
        "turns": group_turns(document),
        "summaries": summaries,
        "keyfacts": keyfacts,
    })


def group_turns(document: Document) -> list[dict]:
    """Sentences grouped for display: by speaker turn for dialogues, one block per document otherwise."""
    turns: list[dict] = []
    for sentence in document.sentences.all():
        if not turns or sentence.turn != turns[-1]["turn"] or sentence.turn is None and turns[-1]["turn"] is not None:
            turns.append({"turn": sentence.turn, "speaker": sentence.speaker, "sentences": []})
        turns[-1]["sentences"].append(sentence)
    return turns


@login_required
@require_http_methods(["GET", "POST"])
def import_upload(request, slug):
    project = get_managed_project(request.user, slug)
    form = ImportForm(request.POST or None, request.FILES or None)
    errors = []
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            result = import_dataset(project=project, data=upload.read(), filename=upload.name)
        except DatasetError as exc:
            errors = exc.errors
        else:
            messages.success(
                request,
                f"Imported {result.rows} rows: {result.documents_created} new documents "
                f"({result.documents_unchanged} already stored), {result.summaries_created} new summaries "
                f"({result.summaries_unchanged} already stored), {result.keyfacts_created} key-facts.",
            )
            return redirect(project)
    return render(request, "annotation/import.html", {"project": project, "form": form, "errors": errors})
