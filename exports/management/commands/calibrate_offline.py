from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from assist.calibration import CalibrationError
from exports.offline_calibration import offline_calibrate

from ._common import get_project_or_command_error


class Command(BaseCommand):
    help = (
        "Choose the offline pre-labeler's similarity threshold for a project on its human fact-verification "
        "labels (the majority of the counted labels): the threshold with the highest balanced accuracy becomes the "
        "project's, and the figures are stored. Run the AI assistance again to pre-label with it."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="project slug")

    def handle(self, *args, project: str, verbosity: int, **options):
        target = get_project_or_command_error(project)
        previous = target.offline_threshold
        bar = tqdm(total=target.documents.count(), desc="calibrate", unit="doc", disable=verbosity < 1,
                   file=self.stderr._out)
        try:
            record = offline_calibrate(project=target, progress=bar.update)
        except CalibrationError as exc:
            raise CommandError(f"cannot calibrate {target.slug!r}: {exc}") from None
        finally:
            bar.close()
        was = f"{previous}" if previous is not None else f"{record.default_threshold:g} (the setting)"
        self.stdout.write(self.style.SUCCESS(
            f"Offline threshold of {target.slug!r}: {record.threshold:.2f} (was {was}). Balanced accuracy "
            f"{record.balanced_accuracy:.3f} on the {record.sentences} sentences with a human majority label "
            f"({record.errors} with an error; {record.label_source} labels) it was chosen on; "
            f"{record.default_balanced_accuracy:.3f} at the setting's {record.default_threshold:g}."))
        self.stdout.write("Run the AI assistance again (run_assist) to pre-label with it.")
