"""Calibrating the offline pre-labeler on a project's own human labels (assist.calibration).

Reads the human fact-verification majority of every sentence that has one (exports.aggregation: counted labels
only, or a reference project's release labels), runs the offline labeler's checks on those sentences against their
documents, picks the similarity threshold with the highest balanced accuracy and stores it on the project
(Project.offline_threshold), with the figures in an OfflineCalibration row. Documents are embedded once and their
vectors kept (assist.pipeline.document_vectors), as the assist run does.
"""

from collections.abc import Callable
from decimal import Decimal

from django.db import transaction

from assist import embeddings
from assist.calibration import Point, choose_threshold
from assist.config import backend_config
from assist.llm.offline import OfflineSimilarityBackend
from assist.llm.registry import get_backend
from assist.models import OfflineCalibration
from assist.pipeline import StepReport, backend_model_path, document_speakers, document_vectors
from corpus.models import Project, SummarySentence

from .aggregation import summary_results
from .selectors import label_source


def offline_calibration_points(project: Project, source: str,
                               progress: Callable[[int], None] | None = None) -> list[Point]:
    """One point per summary sentence with a human majority label: its best similarity, whether a check flagged it
    and the human verdict."""
    majority = {(row["uid"], row["model"]): row["fact_verification_label"]
                for row in summary_results(project, source, with_text=False)}
    backend = get_backend("offline")
    assert isinstance(backend, OfflineSimilarityBackend)
    points = []
    for document in project.documents.order_by("pk"):
        texts, verdicts = [], []
        sentences = SummarySentence.objects.filter(summary__document=document).order_by("summary_id", "index")
        for model, index, text in sentences.values_list("summary__model", "index", "text"):
            labels = majority.get((document.uid, model)) or []
            if index < len(labels) and labels[index] is not None:
                texts.append(text)
                verdicts.append(bool(labels[index]))
        source_sentences = list(document.sentences.order_by("index").values_list("text", flat=True))
        if texts and source_sentences:
            vectors = document_vectors(document, source_sentences, StepReport())
            found = backend.findings(source_sentences, texts, vectors,
                                     embeddings.encode(texts, model_path=backend_model_path()),
                                     speakers=document_speakers(document))
            points += [Point(f.score, f.content_flag, verdict) for f, verdict in zip(found, verdicts)]
        if progress:
            progress(1)
    return points


def offline_calibrate(*, project: Project, progress: Callable[[int], None] | None = None) -> OfflineCalibration:
    """Choose and store the project's offline threshold; raises assist.calibration.CalibrationError when the labels
    cannot support one (none yet, or all of one verdict)."""
    source = label_source(project)
    points = offline_calibration_points(project, source, progress)
    calibration = choose_threshold(points, default=backend_config().offline_threshold)
    with transaction.atomic():
        record = OfflineCalibration.objects.create(
            project=project, threshold=calibration.threshold, balanced_accuracy=calibration.balanced_accuracy,
            sentences=calibration.sentences, errors=calibration.errors,
            default_threshold=calibration.default_threshold,
            default_balanced_accuracy=calibration.default_balanced_accuracy, label_source=source,
            model=str(embeddings.model_identity(backend_model_path())), prompt_version=get_backend("offline").method,
        )
        project.offline_threshold = Decimal(f"{calibration.threshold:.2f}")
        project.save(update_fields=["offline_threshold"])
    return record
