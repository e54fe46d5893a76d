from django.core.management.base import BaseCommand, CommandError

from exports.simulate import simulate_annotations

from ._common import get_project_or_command_error


class Command(BaseCommand):
    help = (
        "Fill a project with synthetic labels for a pilot: builds the HITs (KV, FV, then KA) and lets simulated "
        "annotators (provider 'simulated') answer every unit, correctly with probability --accuracy against a "
        "hidden truth. Analytics never mix simulated labels with real ones."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="project slug")
        parser.add_argument("--annotators", type=int, default=3, help="simulated annotators (default 3)")
        parser.add_argument("--accuracy", type=float, default=0.9, help="chance of a correct answer (default 0.9)")
        parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")

    def handle(self, *args, project, annotators, accuracy, seed, verbosity, **options):
        target = get_project_or_command_error(project)
        if annotators < 1:
            raise CommandError("--annotators must be at least 1")
        if not 0.0 <= accuracy <= 1.0:
            raise CommandError("--accuracy must be between 0 and 1")

        def progress(task):
            if verbosity >= 1:
                self.stderr.write(f"  {task}: done")

        result = simulate_annotations(project=target, annotators=annotators, accuracy=accuracy, seed=seed,
                                      progress=progress)
        self.stdout.write(self.style.SUCCESS(
            f"Simulated {len(result.annotators)} annotators on {target.slug!r}: {result.assignments} submitted "
            f"assignments, {result.labels} labels, {result.grades} graded submissions "
            f"(HITs per task: {result.hits_by_task})."))
