from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.utils.text import slugify
from tqdm import tqdm

from corpus.importing import DatasetError, import_dataset
from corpus.models import Project


class Command(BaseCommand):
    help = (
        "Import a dataset (JSONL or CSV with the UniSumEval field names, one row per summary) into a project, "
        "creating the project if needed. The whole file is validated first; nothing is written if any row is bad."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path, help="a .jsonl or .csv file")
        parser.add_argument("--project", required=True, help="project slug (created when it does not exist)")
        parser.add_argument("--name", help="name of the project when it is created (default: the slug)")

    def handle(self, *args, file: Path, project: str, name: str | None, verbosity: int, **options):
        if slugify(project) != project:
            raise CommandError("--project must be a slug (lowercase letters, digits, hyphens), "
                               f"e.g. {slugify(project)!r}")
        if not file.is_file():
            raise CommandError(f"no such file: {file}")
        with transaction.atomic():
            target, created = Project.objects.get_or_create(slug=project, defaults={"name": name or project})
            bar = tqdm(desc="segmenting documents", unit="doc", disable=verbosity < 1, file=self.stderr._out)
            try:
                result = import_dataset(project=target, data=file, filename=file.name, progress=bar.update)
            except DatasetError as exc:
                bar.close()
                for error in exc.errors:
                    self.stderr.write(f"{file.name}: {error}")
                transaction.set_rollback(True)
                raise CommandError(f"nothing imported: {len(exc.errors)} problem(s) in {file.name}") from None
            bar.close()
        if created:
            self.stdout.write(f"Created project {target.slug!r}.")
        self.stdout.write(
            self.style.SUCCESS(
                f"Imported {result.rows} rows into {target.slug!r}: {result.documents_created} new documents "
                f"({result.documents_unchanged} unchanged), {result.summaries_created} new summaries "
                f"({result.summaries_unchanged} unchanged), {result.keyfacts_created} new key-facts."
            )
        )
