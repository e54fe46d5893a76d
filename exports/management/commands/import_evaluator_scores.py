from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from corpus.importing import DatasetError
from exports.evaluators import DIMENSIONS, import_evaluator_scores

from ._common import get_project_or_command_error


class Command(BaseCommand):
    help = (
        "Import an automatic evaluator's scores per summary (CSV or JSONL keyed by uid + model, with columns "
        f"among {', '.join(DIMENSIONS)}). The whole file is validated first; nothing is written if any row is bad. "
        "Importing the same evaluator again replaces its scores for the summaries in the file."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path, help="a .csv or .jsonl file")
        parser.add_argument("--project", required=True, help="project slug")
        parser.add_argument("--evaluator", required=True, help="the evaluator's name, e.g. g-eval-gpt4")

    def handle(self, *args, file: Path, project, evaluator, **options):
        target = get_project_or_command_error(project)
        if not file.is_file():
            raise CommandError(f"no such file: {file}")
        try:
            count = import_evaluator_scores(project=target, evaluator=evaluator, data=file.read_bytes(),
                                            filename=file.name)
        except DatasetError as exc:
            for error in exc.errors:
                self.stderr.write(f"{file.name}: {error}")
            raise CommandError(f"nothing imported: {len(exc.errors)} problem(s) in {file.name}") from None
        self.stdout.write(self.style.SUCCESS(
            f"Imported {evaluator!r} scores for {count} summaries of {target.slug!r}."))
