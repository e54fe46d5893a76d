from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.utils.text import slugify

from corpus.importing import DatasetError
from corpus.models import Project
from exports.restore import import_benchmark


class Command(BaseCommand):
    help = (
        "Import a benchmark export (made with export_benchmark --annotator-labels) into a NEW project: documents, "
        "summaries, key-facts, human key-facts and every annotator-level label, so that the scores reproduce."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path, help="the .jsonl or .json export")
        parser.add_argument("--project", required=True, help="slug of the project to create")

    def handle(self, *args, file: Path, project, **options):
        if slugify(project) != project:
            raise CommandError(f"--project must be a slug, e.g. {slugify(project)!r}")
        if Project.objects.filter(slug=project).exists():
            raise CommandError(f"project {project!r} exists: restore into a new project")
        if not file.is_file():
            raise CommandError(f"no such file: {file}")
        target = Project.objects.create(slug=project, name=project)
        try:
            result = import_benchmark(project=target, data=file.read_bytes())
        except DatasetError as exc:
            target.delete()
            for error in exc.errors:
                self.stderr.write(f"{file.name}: {error}")
            raise CommandError(f"nothing imported: {len(exc.errors)} problem(s) in {file.name}") from None
        self.stdout.write(self.style.SUCCESS(f"Restored {result} into {target.slug!r}."))
