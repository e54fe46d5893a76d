"""The money in view: a project's cost page (annotation.services.costs), for its managers. The figures read from
every label are stored numbers (corpus.snapshots): the page shows the ones a job computed, with the money held and
paid and the budget read now, and a button for newer ones; a GET starts nothing."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.views.decorators.http import require_GET

from ..models import Task
from ..permissions import get_managed_project
from ..services.costs import rounds_table, stored_costs


@login_required
@require_GET
def cost_page(request, slug):
    project = get_managed_project(request.user, slug)
    stored = stored_costs(project)
    context = {"project": project, "state": stored.state, "costs": stored.costs}
    costs, times = stored.costs, stored.times
    if costs is not None:
        names = dict(Task.choices)
        tasks = [{"row": row, "name": names[row.task], **costs.money(row), "projected_labels":
                  round(costs.projected_labels(row)), "saved_labels": costs.saved_labels(row),
                  "settle_time": times[row.task]} for row in costs.tasks]
        domains = [{"row": row, "name": names[row.task], **costs.money(row), "saved_labels": costs.saved_labels(row)}
                   for row in costs.domains]
        rounds = rounds_table(costs.tasks)
        settled = sum(count for _, count in rounds)
        context.update({
            "total": costs.total, "tasks": tasks, "domains": domains,
            "rounds": [{"round": number, "units": count, "share": round(100 * count / settled) if settled else 0}
                       for number, count in rounds],
            "per_settled": (costs.total["spent"] / sum(r.settled for r in costs.tasks))
            if any(r.settled for r in costs.tasks) else None})
    return render(request, "annotation/costs.html", context)
