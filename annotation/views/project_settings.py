"""A project's settings page: every protocol setting, with a preview of the crowd cost when pay changes."""

from decimal import Decimal

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.shortcuts import redirect, render

from corpus.access import get_managed_project
from corpus.models import Project

from ..crowd.publishing import reward_for
from ..forms import ProjectSettingsForm
from ..models import Hit, Task
from ..services.project_settings import SettingsRefused, change_refusals, update_settings


def cost_rows(project: Project) -> list[dict]:
    """Per task: its HITs, the reward a HIT pays and what all their places cost at `project`'s pay, before the
    providers' fees (the publish dry run adds them)."""
    rows = []
    for task in Task:
        sizes = list(Hit.objects.filter(project=project, task=task).annotate(n=Count("units"))
                     .values_list("n", flat=True))
        reward = reward_for(project, sizes)
        places = len(sizes) * project.annotators_per_unit
        bonuses = places // project.bonus_every_hits if project.bonus_every_hits else 0
        rows.append({"task": task.label, "hits": len(sizes), "reward": reward, "places": places,
                     "total": reward * places + project.bonus_usd * bonuses})
    return rows


def _cost_preview(current: Project, proposed: Project) -> list[dict]:
    before, after = cost_rows(current), cost_rows(proposed)
    return [{**old, "new_reward": new["reward"], "new_total": new["total"], "new_places": new["places"]}
            for old, new in zip(before, after)]


@login_required
def project_settings(request, slug):
    project = get_managed_project(request.user, slug)
    form = ProjectSettingsForm(request.POST or None, instance=Project.objects.get(pk=project.pk))
    preview = None
    if request.method == "POST" and not form.is_valid():
        # Say at once what may not change now, beside what is malformed (the values of the valid fields are set).
        for name, message in change_refusals(project, form.instance).items():
            if name in form.changed_data and name not in form.errors:
                form.add_error(name, message)
    elif request.method == "POST":
        if "preview" in request.POST:
            preview = _cost_preview(project, form.instance)
            for name, message in change_refusals(project, form.instance).items():
                form.add_error(name, message)
        elif not form.changed_data:
            messages.info(request, "Nothing changed.")
            return redirect("project_settings", slug)
        else:
            try:
                update_settings(project, form.instance, form.changed_data)
            except SettingsRefused as refused:
                for name, message in refused.errors.items():
                    form.add_error(name, message)
            else:
                names = ", ".join(str(form.fields[name].label).lower() for name in form.changed_data)
                messages.success(request, f"Saved: {names}.")
                return redirect("project_settings", slug)
    status = 400 if request.method == "POST" and form.errors else 200
    return render(request, "annotation/project_settings.html",
                  {"project": project, "form": form, "preview": preview,
                   "costs": cost_rows(project) if preview is None else None,
                   "totals": _totals(preview) if preview else None}, status=status)


def _totals(preview: list[dict]) -> dict:
    return {"before": sum((row["total"] for row in preview), Decimal("0")),
            "after": sum((row["new_total"] for row in preview), Decimal("0"))}
