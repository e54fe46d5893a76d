import pytest

from .labels import annotate, fv_units


@pytest.fixture(autouse=True)
def analytics_worker(request, monkeypatch):
    """The analytics views show figures a job computed (exports.figures); here a worker that is always done: when a
    view finds no current figures, the real job computes them before the view goes on. Tests marked
    `queued_analytics` see what a request does on its own: it queues the job and says so (tests/exports/test_figures.py).
    """
    if request.node.get_closest_marker("queued_analytics"):
        return
    from exports import figures, views

    def current_figures(project, *, include_simulated):
        stored, fingerprint = figures.current_figures(project, include_simulated=include_simulated)
        if stored is None:
            job = figures.figures_start(project=project, include_simulated=include_simulated, fingerprint=fingerprint)
            figures.figures_run(job_id=job.pk)
            stored, fingerprint = figures.current_figures(project, include_simulated=include_simulated)
        return stored, fingerprint

    monkeypatch.setattr(views, "current_figures", current_figures)


@pytest.fixture
def labelled(project):
    """One FV HIT of 4 sentences labelled by three annotators (the FV alpha is 7/18, see test_report)."""
    hit, units = fv_units(project, 4)
    for name, answers in {"a": [True, False, True, False], "b": [True, False, True, False],
                          "c": [True, False, False, True]}.items():
        annotate(hit, units, answers, name=name)
    return project
