"""A project's settings page: every protocol setting, with a preview of the crowd cost when pay or the labels per item
change."""

from decimal import ROUND_HALF_UP, Decimal

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.shortcuts import redirect, render

from corpus.access import get_managed_project
from corpus.models import Project, RedundancyPolicy

from ..crowd.publishing import reward_for
from ..forms import ProjectSettingsForm
from ..models import Hit, Task
from ..services.project_settings import SettingsRefused, change_refusals, label_share, update_settings

CENT = Decimal("0.01")


def _usd(amount: Decimal, share: float) -> Decimal:
    return (amount * Decimal(str(share))).quantize(CENT, rounding=ROUND_HALF_UP)


def cost_rows(project: Project) -> list[dict]:
    """Per task: its HITs, the reward a HIT pays, and the labels and money of all their places at `project`'s pay,
    before the providers' fees (the publish dry run adds them): under the fixed design of `annotators_per_unit`
    annotators, and under the project's labels per item as the simulation estimates them (`low`/`high` bound them
    where it did not run with these settings)."""
    rows = []
    for task in Task:
        # The first round's HITs: the extra labels of later rounds are in the policy's estimate.
        sizes = list(Hit.objects.filter(project=project, task=task, round=0).annotate(n=Count("units"))
                     .values_list("n", flat=True))
        reward = reward_for(project, sizes)
        places = len(sizes) * project.annotators_per_unit
        labels = sum(sizes) * project.annotators_per_unit
        bonuses = places // project.bonus_every_hits if project.bonus_every_hits else 0
        total = reward * places + project.bonus_usd * bonuses
        low, high, share = label_share(project, task)
        rows.append({
            "task": task.label, "hits": len(sizes), "reward": reward, "places": places, "labels": labels,
            "total": total, "share": share,
            "policy_labels": round(labels * share) if share is not None else None,
            "policy_total": _usd(total, share) if share is not None else None,
            "low_labels": round(labels * low), "high_labels": round(labels * high),
            "low_total": _usd(total, low), "high_total": _usd(total, high),
        })
    return rows


def cost_summary(project: Project, rows: list[dict]) -> dict:
    """All tasks together: the fixed design's money, the policy's estimate (or its bounds) and what it saves."""
    total = sum((row["total"] for row in rows), Decimal("0"))
    policy = RedundancyPolicy(project.redundancy_policy)
    summary = {"policy": policy.name.capitalize(), "fixed": policy == RedundancyPolicy.FIXED,
               "annotators": project.annotators_per_unit, "total": total, "estimated": False,
               "budget": project.budget_usd}
    if all(row["share"] is not None for row in rows):
        policy_total = sum((row["policy_total"] for row in rows), Decimal("0"))
        saved = total - policy_total
        summary.update(estimated=True, policy_total=policy_total, saved=saved, more=-saved,
                       percent=round(100 * abs(saved) / total) if total else 0)
    else:
        summary.update(low_total=sum((row["low_total"] for row in rows), Decimal("0")),
                       high_total=sum((row["high_total"] for row in rows), Decimal("0")))
    expected = summary.get("policy_total", summary.get("high_total"))
    summary["over_budget"] = project.budget_usd is not None and expected > project.budget_usd
    return summary


def _cost_preview(current: Project, proposed: Project) -> list[dict]:
    """The proposed settings' rows, each with the saved settings' values under `old_<name>`."""
    before, after = cost_rows(current), cost_rows(proposed)
    return [{**new, **{f"old_{name}": value for name, value in old.items()}} for old, new in zip(before, after)]


@login_required
def project_settings(request, slug):
    project = get_managed_project(request.user, slug)
    form = ProjectSettingsForm(request.POST or None, instance=Project.objects.get(pk=project.pk))
    preview = valid = False
    if request.method == "POST" and not (valid := form.is_valid()):
        # Say at once what may not change now, beside what is malformed (the values of the valid fields are set).
        for name, message in change_refusals(project, form.instance).items():
            if name not in form.errors:
                form.add_error(name, message)
    elif request.method == "POST":
        if "preview" in request.POST:
            preview = True
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
    # A preview shows the settings sent when they are well-formed, also beside a refusal (what the change would
    # cost); otherwise the page shows the saved settings' cost.
    shown = form.instance if preview and valid else project
    rows = _cost_preview(project, shown)
    # htmx swaps the page's form when the labels per item change: a refusal is shown in it, not dropped as an error.
    status = 400 if request.method == "POST" and form.errors and not request.htmx else 200
    return render(request, "annotation/project_settings.html",
                  {"project": project, "form": form, "preview": preview, "costs": rows,
                   "totals": _totals(rows), "summary": cost_summary(shown, rows)}, status=status)


def _totals(rows: list[dict]) -> dict:
    return {name: sum((row[name] for row in rows), Decimal("0")) for name in ("old_total", "total")}
