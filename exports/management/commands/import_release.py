from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.utils.text import slugify

from corpus.importing import DatasetError
from corpus.models import Project
from exports.release import FAITHFULNESS_FILE, KEYFACT_FILE, import_release


class Command(BaseCommand):
    help = (
        f"Import the UniSumEval release as published ({FAITHFULNESS_FILE} and {KEYFACT_FILE}) into a NEW reference "
        "project: documents, summaries and key-facts, the release's majority labels and human scores (label source "
        "'release', never mixed with annotators' labels) and its evaluators' scores as imported evaluator scores. "
        "Summaries whose summary_success_state is not 'success' are left out, as the release's own script does. "
        "Given a file instead of a folder, reads it as both files: a benchmark export of this platform."
    )

    def add_arguments(self, parser):
        parser.add_argument("folder", type=Path, help=f"the folder holding {FAITHFULNESS_FILE} and {KEYFACT_FILE}, "
                                                      "or one file holding the fields of both (an export)")
        parser.add_argument("--project", required=True, help="slug of the project to create")
        parser.add_argument("--release", default="UniSumEval-v1.0", help="the release's name, kept with its labels")

    def handle(self, *args, folder: Path, project: str, release: str, **options):
        if slugify(project) != project:
            raise CommandError(f"--project must be a slug, e.g. {slugify(project)!r}")
        if Project.objects.filter(slug=project).exists():
            raise CommandError(f"project {project!r} exists: a release goes into a new project")
        # The platform's export writes the fields of both release files on each row: one file serves as both.
        paths = [folder, folder] if folder.is_file() else [folder / FAITHFULNESS_FILE, folder / KEYFACT_FILE]
        missing = [str(path) for path in paths if not path.is_file()]
        if missing:
            raise CommandError(f"no such file: {', '.join(missing)}")
        try:
            with transaction.atomic():  # The project goes with its release, or not at all.
                target = Project.objects.create(slug=project, name=f"{release} (reference)",
                                                description=f"The {release} release as published: majority labels "
                                                            "and evaluator scores, for benchmarking evaluators.")
                result = import_release(project=target, faithfulness=paths[0].read_bytes(),
                                        keyfact=paths[1].read_bytes(), release=release)
        except DatasetError as exc:
            for error in exc.errors:
                self.stderr.write(str(error))
            raise CommandError(f"nothing imported: {len(exc.errors)} problem(s)") from None
        if result.ignored_fields:
            self.stdout.write(self.style.WARNING(f"Fields not read: {', '.join(result.ignored_fields)}"))
        self.stdout.write(self.style.SUCCESS(f"Imported into {target.slug!r}: {result}."))
