import json

from django.core.management.base import BaseCommand, CommandError

from assist.hallucinogenic import hallucinogenic_select
from corpus.models import Project


class Command(BaseCommand):
    help = ("Mark the documents where at least one summary has a sentence flagged by the pre-labeler "
            "(run_assist first) and sample N of them per domain with a fixed seed (paper B.2).")

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True)
        parser.add_argument("--per-domain", type=int, default=25)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--json", action="store_true", help="print the sample as JSON")

    def handle(self, *args, project, per_domain, seed, **options):
        if per_domain < 1:
            raise CommandError("--per-domain must be at least 1")
        try:
            target = Project.objects.get(slug=project)
        except Project.DoesNotExist:
            raise CommandError(f"no project with slug {project!r}") from None
        selection = hallucinogenic_select(project=target, per_domain=per_domain, seed=seed)
        if options["json"]:
            self.stdout.write(json.dumps(selection.sampled, indent=2))
            return
        self.stdout.write(selection.summary())
        for domain, uids in selection.sampled.items():
            self.stdout.write(f"  {domain}: {', '.join(uids)}")
