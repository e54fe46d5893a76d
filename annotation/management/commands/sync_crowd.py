from django.core.management.base import BaseCommand, CommandError

from annotation.crowd.base import ProviderError
from annotation.crowd.sync import sync_project
from corpus.models import Project


class Command(BaseCommand):
    help = ("Reconcile a project's crowd batches with MTurk/Prolific: confirm workers, grade submissions, approve "
            "or reject them before the auto-approval delay, pay bonuses, block repeat offenders, discard submissions "
            "the provider does not know, release reservations the provider never received, and flag what needs a "
            "person.")

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="project slug")

    def handle(self, *args, project, **options):
        target = Project.objects.filter(slug=project).first()
        if target is None:
            raise CommandError(f"no such project: {project!r}")
        try:
            result = sync_project(target)
        except ProviderError as error:
            raise CommandError(f"the provider refused: {error}") from error
        self.stdout.write(f"{result.batches} batches, {result.remote} provider assignments: {result.verified} "
                          f"confirmed, {result.graded} graded, {result.recovered} recovered, "
                          f"{len(result.discarded)} discarded (unknown to the provider), "
                          f"{result.released} reservations released.")
        for external_id in result.discarded:
            self.stdout.write(f"Discarded {external_id}: the provider does not know it as the claimed worker's.")
        self.stdout.write("Decisions: " + (", ".join(f"{n} {status}" for status, n in result.decisions.items())
                                           or "none pending"))
        for flag in result.flagged:
            self.stderr.write(f"Needs a person: {flag}")
        self.stdout.write(self.style.SUCCESS("Synced."))
