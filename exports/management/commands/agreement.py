import json

from django.core.management.base import BaseCommand, CommandError

from exports.report import ALL_LABELS, COEFFICIENT_NAMES, HEADLINE_LABELS, PAPER_REFERENCE, agreement_report

from ._common import get_project_or_command_error


class Command(BaseCommand):
    help = (
        "Inter-annotator agreement of a project (paper section 4): Krippendorff's alpha for fact verification and "
        "key-fact alignment, Gwet's AC1 for key-fact validation (the other coefficient as a second column), per "
        "task, overall and per domain, short/long and dialogue/non-dialogue, with 95% bootstrap intervals. "
        "The headline reads the first two counted labels of each unit (comparable with fixed designs and with the "
        "paper when units get different numbers of labels); the same coefficients over all counted labels beside it. "
        "Reads the counted labels: attention checks and failed submissions are left out; simulated labels only "
        "when the project has no real ones, or with --include-simulated."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="project slug")
        parser.add_argument("--json", action="store_true", help="print the report as JSON")
        parser.add_argument("--include-simulated", action="store_true",
                            help="read real and simulated labels together (the report says so)")
        parser.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples (default 1000; 0: none)")
        parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")

    def handle(self, *args, project, include_simulated, n_boot, seed, **options):
        target = get_project_or_command_error(project)
        if n_boot < 0:
            raise CommandError("--n-boot must be 0 or more")
        report = agreement_report(target, include_simulated=include_simulated, n_boot=n_boot, seed=seed)
        if options["json"]:
            self.stdout.write(json.dumps(report.as_dict(), indent=2))
            return
        if not report.rows:
            self.stdout.write(f"No counted labels in {target.slug!r} yet ({report.label_source} labels read).")
            return
        self.stdout.write(f"Agreement in {target.slug!r} from {report.label_source} labels "
                          f"(95% bootstrap intervals, {n_boot} resamples)")
        self.stdout.write(f"Headline: {HEADLINE_LABELS} (comparable with fixed designs and with the paper); "
                          f"beside it: {ALL_LABELS}.")
        for task in PAPER_REFERENCE:
            rows = report.for_task(task)
            if not rows:
                continue
            primary, secondary = rows[0].primary.coefficient, rows[0].secondary.coefficient
            self.stdout.write(f"\n{task.label} — {COEFFICIENT_NAMES[primary]} (paper: {PAPER_REFERENCE[task]:.2f}); "
                              f"{COEFFICIENT_NAMES[secondary]} second")
            self.stdout.write(f"  {'':<34} {'':>7} {'first two labels':<59} | all labels")
            self.stdout.write(f"  {'group':<34} {'units':>7} {'ratings':>8}  {'primary [95% CI]':<24} "
                              f"{'secondary':<24} | {'ratings':>8}  {'primary [95% CI]':<24} secondary")
            for row in rows:
                name = "overall" if row.breakdown == "overall" else f"{row.breakdown}={row.group}"
                self.stdout.write(f"  {name:<34} {row.n_units:>7} {row.n_ratings:>8}  "
                                  f"{_fmt(row.primary):<24} {_fmt(row.secondary):<24} | {row.n_ratings_all:>8}  "
                                  f"{_fmt(row.primary_all):<24} {_fmt(row.secondary_all)}")


def _fmt(estimate) -> str:
    if estimate.value != estimate.value:
        return "undefined"
    if estimate.ci_low != estimate.ci_low:
        return f"{estimate.value:.3f}"
    return f"{estimate.value:.3f} [{estimate.ci_low:.3f}, {estimate.ci_high:.3f}]"
