"""What FineSurE and FactSim cost the platform itself at UniSumEval scale, with the model's own time taken out: a
chat-completions server on loopback answers every request at once, in the shapes a model answers in.

    python -m benchmarks.evaluator_llm_bench [--scale 1.0] [--evaluators finesure,factsim]

Per evaluator, over every document of the synthetic set (evaluate_document, as a run's task does): building the
prompts, the HTTP round trips, parsing, the response cache, FactSim's claim embeddings, and storing every score with
its calls. Then the same again with the scores deleted and the cache kept (every answer from the cache), and once
more with everything current. A real model adds its own latency per request, times the requests counted here,
divided by FINEGRAIN_LLM_CONCURRENCY.
"""

import argparse
import json
import os
import re
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ITEM = re.compile(r"^\[(?:S)?\d+\] (.*)$", re.MULTILINE)


def answer(prompt: str) -> str:
    """A well-formed answer to each of the evaluators' prompts (assist.evaluators.prompts)."""
    if prompt.startswith("Below are a document"):  # FineSurE fact checking
        n = int(re.search(r"Summary, (\d+) numbered", prompt)[1])
        return json.dumps([{"sentence": i + 1, "reason": "Stated in the document.",
                            "category": "no error" if i % 4 else "entity error"} for i in range(n)])
    if prompt.startswith("Below are a summary"):  # FineSurE key-fact alignment
        m = int(re.search(r"Key facts, (\d+) numbered", prompt)[1])
        return json.dumps([{"key fact": k + 1, "response": "yes" if k % 2 == 0 else "no",
                            "sentences": [1] if k % 2 == 0 else []} for k in range(m)])
    if prompt.startswith("List the factual claims the text"):  # FactSim, a passage of the document
        text = prompt.split("Text:\n", 1)[1]
        return json.dumps([[line.split()[0], " ".join(line.split()[1:6])] for line in re.split(r"(?<=\.) ", text)
                           if len(line.split()) > 1])
    if prompt.startswith("List the factual claims each"):  # FactSim, a summary
        lines = ITEM.findall(prompt.split("Sentences:\n", 1)[1])
        return json.dumps([{"sentence": i + 1, "claims": [[line.split()[0], " ".join(line.split()[1:6])]]}
                           for i, line in enumerate(lines)])
    raise ValueError(f"unexpected prompt: {prompt[:80]!r}")


class Server:
    def __init__(self):
        self.requests = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                content = answer(payload["messages"][-1]["content"])
                server.requests += 1
                body = json.dumps({"id": "bench", "object": "chat.completion", "model": payload["model"],
                                   "choices": [{"index": 0, "finish_reason": "stop",
                                                "message": {"role": "assistant", "content": content}}],
                                   "usage": {"prompt_tokens": len(json.dumps(payload)) // 4,
                                             "completion_tokens": len(content) // 4}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="documents per domain = 25 x scale")
    parser.add_argument("--evaluators", default="finesure,factsim")
    args = parser.parse_args()
    server = Server()
    os.environ.update(DATABASE_URL=f"sqlite:///{tempfile.mkdtemp()}/evaluators.sqlite3",
                      FINEGRAIN_OPENAI_BASE_URL=server.base_url, FINEGRAIN_OPENAI_API_KEY="bench")
    os.environ.pop("CELERY_BROKER_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.core.management import call_command

    from assist.config import backend_config
    from assist.evaluators import build_evaluator
    from assist.evaluators.runs import evaluate_document
    from assist.models import EvaluatorDocumentResult, EvaluatorScore, EvaluatorSentenceScore, LLMCacheEntry
    from benchmarks.synthetic import write
    from corpus.importing import import_dataset
    from corpus.models import Document, Project

    call_command("migrate", verbosity=0)
    data = write(ROOT / "benchmarks" / "out" / f"evaluators-{args.scale}.jsonl", scale=args.scale)
    project = Project.objects.create(slug="bench", name="bench")
    import_dataset(project=project, data=data.read_bytes(), filename=data.name)
    documents = list(Document.objects.filter(project=project).order_by("pk"))
    result = {"documents": len(documents), "concurrency": backend_config().llm_concurrency}
    for name in args.evaluators.split(","):
        evaluator = build_evaluator(name, backend="openai:bench-model")

        def run(evaluator=evaluator) -> tuple[float, int]:
            before = server.requests
            started = time.perf_counter()
            for document in documents:
                evaluate_document(document, evaluator)
            return time.perf_counter() - started, server.requests - before

        seconds, requests = run()
        scores = EvaluatorScore.objects.filter(evaluator=name)
        ok, failed = scores.filter(status="ok").count(), scores.exclude(status="ok").count()
        sentence_scores = EvaluatorSentenceScore.objects.filter(evaluator_score__evaluator=name).count()
        scores.delete()
        EvaluatorDocumentResult.objects.filter(evaluator=name).delete()
        cached_seconds, cached_requests = run()
        current_seconds, current_requests = run()
        result[name] = {
            "summaries_ok": ok, "summaries_failed": failed, "sentence_scores": sentence_scores,
            "requests": requests, "seconds": round(seconds, 2),
            "summaries_per_second": round(ok / seconds, 1), "requests_per_second": round(requests / seconds, 1),
            "cached_seconds": round(cached_seconds, 2), "cached_requests": cached_requests,
            "current_seconds": round(current_seconds, 2), "current_requests": current_requests,
        }
    result["cache_entries"] = LLMCacheEntry.objects.count()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
