"""Reads of a project's AI assistance that other apps' pages show."""


from .config import backend_config
from .job_kinds import ASSIST
from .llm.registry import get_backend
from .models import ContextualMapping, OfflineCalibration, PreLabel
from .pipeline import OFFLINE_KEYFACTS_NOTE


def offline_threshold_status(project) -> dict:
    """The offline labeler's threshold for `project`, and the calibration that set it when one did."""
    setting = backend_config().offline_threshold
    if project.offline_threshold is None:
        return {"value": setting, "from_setting": True, "calibration": None}
    value = float(project.offline_threshold)
    calibration = OfflineCalibration.objects.filter(project=project).first()
    if calibration is not None and round(calibration.threshold, 2) != value:
        calibration = None  # Set by hand since.
    return {"value": value, "from_setting": False, "calibration": calibration}


def assist_status(project) -> dict:
    """The project page's assist panel: the backend, what is mapped, pre-labeled and flagged, the last run."""
    backend = get_backend()
    return {
        "backend": backend,
        "offline": backend.name == "offline-similarity",
        "offline_note": OFFLINE_KEYFACTS_NOTE,
        "threshold": offline_threshold_status(project),
        "mapped": ContextualMapping.objects.filter(summary_sentence__summary__document__project=project).count()
        + ContextualMapping.objects.filter(keyfact__document__project=project).count(),
        "prelabeled": PreLabel.objects.filter(summary_sentence__summary__document__project=project,
                                              status=PreLabel.Status.OK).count(),
        "flagged": PreLabel.objects.filter(summary_sentence__summary__document__project=project,
                                           status=PreLabel.Status.OK).exclude(category="no_error").count(),
        "hallucinogenic": project.documents.filter(hallucinogenic=True).count(),
        "job": project.jobs.filter(kind=ASSIST).first(),
    }
