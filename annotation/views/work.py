"""The annotator's home page (what work is open, per project and task, and their past HITs) and the instructions
page."""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from ..models import Task
from ..permissions import annotator_required, get_work_project, work_projects
from ..quality.qualification import needs_screening
from ..selectors import count_available_hits, work_history
from ..services.assignment import WorkRefused, current_assignment, reserve_next_hit

TASK_ORDER = [Task.FACT_VERIFICATION, Task.KEYFACT_VALIDATION, Task.KEYFACT_ALIGNMENT]


@annotator_required
def work_home(request):
    annotator = request.annotator
    rows = []
    for project in work_projects(annotator):
        tasks = [
            {"task": task, "label": task.label, "available": count_available_hits(annotator, project, task),
             "current": current_assignment(annotator, project, task)}
            for task in TASK_ORDER
        ]
        rows.append({"project": project, "tasks": tasks, "screening": needs_screening(annotator, project),
                     "history": work_history(annotator, project)})
    return render(request, "annotation/work/home.html", {"rows": rows, "annotator": annotator})


@annotator_required
@require_POST
def start_next(request, slug, task):
    project = get_work_project(request, slug)
    try:
        assignment = reserve_next_hit(request.annotator, project, task, confirmed=True)
    except WorkRefused as refusal:
        messages.error(request, str(refusal))
        return redirect("work_home")
    if assignment is None:
        messages.info(request, f"No {Task(task).label.lower()} HIT is waiting for you in {project.name} right now.")
        return redirect("work_home")
    return redirect("hit_page", assignment.public_id)


@require_GET
def instructions(request):
    """Open to anybody: MTurk workers read them before accepting a HIT, and link and Prolific workers have no log-in
    (the same rules are on every HIT page)."""
    return render(request, "annotation/work/instructions.html", {"tasks": TASK_ORDER})
