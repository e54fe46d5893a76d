from django.core.management.base import BaseCommand, CommandError

from annotation.redundancy import redundancy_of
from exports.simulate import CROWDS, PAPER, UNIFORM, simulate_annotations

from ._common import get_project_or_command_error

TASK_NAMES = {"kv": "key-fact validation", "fv": "fact verification", "ka": "key-fact alignment"}


class Command(BaseCommand):
    help = (
        "Fill a project with synthetic labels for a pilot, under the project's redundancy policy: builds the HITs "
        "(KV, FV, then KA), lets simulated annotators (provider 'simulated') answer each round, settles the items "
        "and answers the top-up HITs they ask for, until every item is settled or sent to review. --crowd paper "
        "(the default) is a crowd calibrated to the paper's agreement (careful and careless people, spammers, hard "
        "items, people following the AI pre-label); --crowd uniform is --annotators people right with probability "
        "--accuracy. Analytics never mix simulated labels with real ones."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="project slug")
        parser.add_argument("--crowd", choices=CROWDS, default=None,
                            help="paper: the calibrated mix of 60 people (default); uniform: --annotators people "
                                 "right with probability --accuracy (the default when either is given)")
        parser.add_argument("--annotators", type=int, default=None, help="uniform crowd: how many people (default 3)")
        parser.add_argument("--accuracy", type=float, default=None,
                            help="uniform crowd: chance of a correct answer (default 0.9)")
        parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")

    def handle(self, *args, project, crowd, annotators, accuracy, seed, verbosity, **options):
        target = get_project_or_command_error(project)
        uniform_options = [name for name, value in (("--annotators", annotators), ("--accuracy", accuracy))
                           if value is not None]
        if crowd is None:
            crowd = UNIFORM if uniform_options else PAPER
        if crowd == PAPER and uniform_options:
            raise CommandError(f"{' and '.join(uniform_options)} describe a uniform crowd: use them with --crowd "
                               f"uniform, or leave them out for the paper's calibrated mix")
        annotators = 3 if annotators is None else annotators
        accuracy = 0.9 if accuracy is None else accuracy
        if annotators < 1:
            raise CommandError("--annotators must be at least 1")
        if not 0.0 <= accuracy <= 1.0:
            raise CommandError("--accuracy must be between 0 and 1")
        redundancy = redundancy_of(target)
        if crowd == UNIFORM and annotators < redundancy.most:
            raise CommandError(f"--annotators {annotators} is too few: the project's {redundancy.policy} policy may "
                               f"ask {redundancy.most} labels of an item, each from somebody else")

        def progress(task):
            if verbosity >= 1:
                self.stderr.write(f"  {task}: done")

        result = simulate_annotations(project=target, crowd=crowd, annotators=annotators, accuracy=accuracy,
                                      seed=seed, progress=progress)
        kinds = ", ".join(f"{count} {kind}" for kind, count in result.kinds.items())
        self.stdout.write(self.style.SUCCESS(
            f"Simulated {len(result.annotators)} annotators ({crowd} crowd: {kinds}) on {target.slug!r} under the "
            f"{result.policy} policy: {result.assignments} submitted assignments, {result.labels} labels, "
            f"{result.grades} graded submissions ({result.failed} failed their checks), {result.passes} passes "
            f"(HITs per task: {result.hits_by_task})."))
        self.stdout.write(f"Labels per task, counted on items, against {target.annotators_per_unit} for every item "
                          f"(the fixed design):")
        for task, outcome in result.outcome.items():
            share = "-" if outcome.fixed_share is None else f"{outcome.fixed_share:.1%}"
            per_item = f"{outcome.labels / outcome.units:.2f}" if outcome.units else "-"
            line = (f"  {TASK_NAMES[task]}: {outcome.units} items, {outcome.labels} labels ({per_item} per item), "
                    f"{share} of the fixed design's {outcome.fixed_labels}; {outcome.settled} settled, "
                    f"{outcome.escalated} sent to review, {outcome.waiting} waiting; {outcome.topup_hits} top-up HITs")
            if result.unfilled.get(task):
                line += f"; {result.unfilled[task]} places no simulated annotator may take"
            self.stdout.write(line)
        share = result.fixed_share
        self.stdout.write(f"All tasks: {'-' if share is None else f'{share:.1%}'} of the fixed design's labels.")
