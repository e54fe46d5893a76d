import time

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from assist.config import ConfigError
from assist.evaluators import NAMES
from assist.evaluators.runs import evaluator_job_create, evaluator_run_document, evaluator_run_start
from assist.llm.base import BackendError
from corpus.models import Job, Project


class Command(BaseCommand):
    help = (
        "Score every summary of a project with an automatic evaluator: sbertscore (offline, sentence embeddings), "
        "finesure (LLM fact checking and key-fact alignment) or factsim (LLM claims compared by embeddings). "
        "Summaries already scored with the same evaluator, model and prompt version are skipped; failed ones are "
        "tried again. The scores are benchmarked against the human labels on the analytics page."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="project slug")
        parser.add_argument("--evaluator", required=True, choices=NAMES, help="the evaluator to run")
        parser.add_argument("--backend", default="",
                            help="LLM backend for finesure and factsim, as FINEGRAIN_LLM_BACKEND "
                                 "(e.g. openai:gpt-4o); default: that setting")
        parser.add_argument("--model", default="", dest="model_path",
                            help="a local sentence-transformers model directory for sbertscore and factsim; "
                                 "default: FINEGRAIN_EMBEDDING_MODEL, else the bundled all-MiniLM-L6-v2")
        parser.add_argument("--queue", action="store_true",
                            help="send the work to Celery workers and follow the job's progress")

    def handle(self, *args, project: str, evaluator: str, backend: str, model_path: str, queue: bool,
               verbosity: int, **options):
        try:
            target = Project.objects.get(slug=project)
        except Project.DoesNotExist:
            raise CommandError(f"no project with slug {project!r}") from None
        try:
            job = (evaluator_run_start if queue else evaluator_job_create)(
                project=target, evaluator=evaluator, backend=backend, model_path=model_path)
        except (ConfigError, BackendError, ValueError) as exc:
            raise CommandError(f"cannot run {evaluator}: {exc}") from None
        identity = job.params["identity"]
        self.stdout.write(f"{evaluator} ({identity['evaluator_version']}) with {identity['model']}"
                          + (f" via {identity['backend']}" if identity["backend"] else ""))
        bar = tqdm(total=job.total, desc=evaluator, unit="doc", disable=verbosity < 1, file=self.stderr._out)
        if queue:
            while not job.is_finished:
                time.sleep(0.5)
                job.refresh_from_db()
                bar.update(job.progress - bar.n)
        else:
            for document_id in target.documents.order_by("pk").values_list("pk", flat=True):
                try:
                    evaluator_run_document(job.pk, document_id)
                except Exception:  # recorded on the job; go on with the next document
                    pass
                bar.update(1)
            job.refresh_from_db()
        bar.close()
        result = job.result
        for failure in result.get("failures", []):
            self.stdout.write(self.style.WARNING(failure))
        summary = (f"{result['scored']} summaries scored, {result['current']} already current, "
                   f"{result['failed']} failed; {result['embedded_documents']} documents embedded.")
        if job.status == Job.Status.FAILED:
            raise CommandError(f"{summary}\n{job.error}")
        if result["failed"]:
            summary += " Run the command again to retry the failed summaries."
        self.stdout.write(self.style.SUCCESS(summary))
