from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from corpus.models import Summary
from exports.export import FORMATS, TABLE_FORMATS, ExportOptions, export_benchmark
from exports.storage import StorageError, parse_s3_url, upload

from ._common import get_project_or_command_error


class Command(BaseCommand):
    help = (
        "Export a project's benchmark in the UniSumEval release format (one row per summary with majority labels "
        "and scores). Extra files on request: annotator-level labels, the AI assistance shown, attention-check "
        "outcomes (a separate file), CSV/Parquet tables and a dataset card. Attention checks and failed "
        "submissions never enter the benchmark rows; simulated labels only when the project has no real ones "
        "or with --include-simulated."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="project slug")
        parser.add_argument("--out", required=True, type=Path, help="the benchmark file, e.g. out/bench.jsonl")
        parser.add_argument("--format", choices=FORMATS, default=None,
                            help="jsonl (default, or from --out's extension) or json (one streamed array)")
        parser.add_argument("--annotator-labels", action="store_true",
                            help="add every counted label per row, under pseudonymous annotator ids")
        parser.add_argument("--assistance", action="store_true", help="add the AI assistance that was shown")
        parser.add_argument("--checks", action="store_true",
                            help="write attention-check outcomes to <stem>.attention_checks.jsonl")
        parser.add_argument("--tables", choices=TABLE_FORMATS, help="also write tables as CSV or Parquet")
        parser.add_argument("--card", action="store_true", help="also write a dataset card <stem>.card.md")
        parser.add_argument("--dawid-skene", action="store_true",
                            help="add Dawid-Skene's label and posterior beside each majority label, and its "
                                 "per-annotator estimates in <stem>.dawid_skene.json (a second opinion: majority "
                                 "vote stays the label of record)")
        parser.add_argument("--include-simulated", action="store_true",
                            help="read real and simulated labels together (every row says so)")
        parser.add_argument("--s3", help="upload the files to s3://bucket/key-prefix (boto3; credentials from "
                                         "the environment)")

    def handle(self, *args, project, out: Path, verbosity, **options):
        target = get_project_or_command_error(project)
        if options["s3"]:
            try:
                parse_s3_url(options["s3"])
            except StorageError as exc:
                raise CommandError(str(exc)) from None
        fmt = options["format"] or ("json" if out.suffix == ".json" else "jsonl")
        export_options = ExportOptions(
            format=fmt, annotator_labels=options["annotator_labels"], assistance=options["assistance"],
            checks=options["checks"], tables=options["tables"], card=options["card"],
            include_simulated=options["include_simulated"], dawid_skene=options["dawid_skene"])
        total = Summary.objects.filter(document__project=target).count()
        with tqdm(total=total, desc="exporting summaries", unit="row", disable=verbosity < 1,
                  file=self.stderr._out) as bar:
            try:
                result = export_benchmark(project=target, out=out, options=export_options, progress=bar.update)
            except OSError as exc:
                raise CommandError(f"cannot write the export: {exc}") from None
        for path in result.files:
            self.stdout.write(f"  wrote {path}")
        if options["s3"]:
            try:
                for path in result.files:
                    self.stdout.write(f"  uploaded {upload(path, options['s3'])}")
            except StorageError as exc:
                raise CommandError(str(exc)) from None
        self.stdout.write(self.style.SUCCESS(
            f"Exported {result.rows} summaries of {target.slug!r} from {result.label_source} labels."))
