"""The peer, Label Studio, on the same machine and data: import, export, and serving "next task + annotation".

    python -m benchmarks.peer_label_studio convert                 # benchmarks/out/ls-tasks.json from scale-1x.jsonl
    python -m benchmarks.peer_label_studio run --data-dir /work/peer/ls-sqlite [--db postgres --pg-database NAME]

Label Studio is installed outside the repository (`python3.11 -m venv /work/peer/ls && /work/peer/ls/bin/pip install
label-studio==1.23.2 gunicorn`); `--ls` names that virtual environment. `run` initialises its data dir (migrations,
an admin with a token, as `label-studio init` does), adds `--clients` annotators with tokens to its organization,
serves it with gunicorn (`--workers` sync workers, DEBUG off, as benchmarks/hit_load.py serves finegrain), creates a
project whose labeling config is the closest to a finegrain FV HIT (the summary's sentences, each with an
"error / no error" choice, next to the source document), then times through the REST API: the import of the
2,025 converted rows (one task per summary), the export of the project as JSON, and `--clients` concurrent
annotators each looping on "GET /api/projects/<id>/next/ + POST /api/tasks/<id>/annotations/" for `--seconds`.
Printed as JSON; nothing is written into the repository.

The conversion keeps every field of a row in the task's data and splits the summary with finegrain's own
segmenter (corpus.segmentation.segment_summary), so both tools show the same sentences.
"""

import argparse
import http.client
import json
import os
import random
import signal
import subprocess
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

from benchmarks.hit_load import free_port, summarize, wait_for_port

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "out"
ADMIN_EMAIL, ADMIN_PASSWORD = "bench@example.com", "bench-pass-12345"
ADMIN_TOKEN = "0123456789abcdef0123456789abcdef01234567"
CHOICES = ("No error", "Error")
# One text per summary sentence with its own choice, as finegrain's FV HIT asks one question per sentence.
LABEL_CONFIG = """<View>
  <Header value="Source document"/>
  <Text name="document" value="$document"/>
  <Header value="Summary sentences: does each contain a factual error?"/>
  <Repeater on="$sentences" indexFlag="{{idx}}">
    <Text name="sentence_{{idx}}" value="$sentences[{{idx}}].text"/>
    <Choices name="error_{{idx}}" toName="sentence_{{idx}}" choice="single" required="true">
      <Choice value="No error"/>
      <Choice value="Error"/>
    </Choices>
  </Repeater>
</View>"""

# Runs inside Label Studio's own Python: what its `label-studio init` does, then the extra annotators.
LS_SETUP = """
import json, os, sys
sys.path.insert(0, os.environ["LS_PATH"])
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "label_studio.core.settings.label_studio")
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0, interactive=False)
from organizations.models import Organization
from users.models import User
admin = User.objects.filter(email=os.environ["ADMIN_EMAIL"]).first()
if admin is None:
    admin = User.objects.create_user(email=os.environ["ADMIN_EMAIL"], password=os.environ["ADMIN_PASSWORD"])
    admin.is_staff = admin.is_superuser = True
    admin.save()
    from rest_framework.authtoken.models import Token
    Token.objects.filter(key=admin.auth_token.key).update(key=os.environ["ADMIN_TOKEN"])
org = Organization.objects.first() or Organization.create_organization(
    created_by=admin, title="Label Studio", legacy_api_tokens_enabled=True)
org.add_user(admin) if not org.has_user(admin) else None
admin.active_organization = org
admin.save(update_fields=["active_organization"])
tokens = []
for index in range(int(os.environ["ANNOTATORS"])):
    email = f"annotator{index:03d}@example.com"
    user = User.objects.filter(email=email).first() or User.objects.create_user(email=email, password="unused-pass-1")
    if not org.has_user(user):
        org.add_user(user)
    user.active_organization = org
    user.save(update_fields=["active_organization"])
    user.refresh_from_db()
    tokens.append(user.auth_token.key)
print(json.dumps({"tokens": tokens}))
"""


def convert(source: Path, target: Path) -> int:
    from corpus.segmentation import segment_summary

    tasks = []
    for line in source.read_text().splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        row["sentences"] = [{"text": text} for text in segment_summary(row["summary"])]
        tasks.append({"data": row})
    target.write_text(json.dumps(tasks))
    return len(tasks)


class Api:
    """A keep-alive client with a token, the standard library's HTTP client (as hit_load.py's annotators)."""

    def __init__(self, url: str, token: str, timeout: float = 600):
        parts = urlsplit(url)
        self.host, self.port, self.timeout = parts.hostname, parts.port, timeout
        self.headers = {"Authorization": f"Token {token}", "Accept": "application/json"}
        self.connection = http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def call(self, method: str, path: str, body=None) -> tuple[int, bytes, float]:
        headers = dict(self.headers)
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        began = time.perf_counter()
        for _attempt in (1, 2):
            try:
                self.connection.request(method, path, body=data, headers=headers)
                response = self.connection.getresponse()
                content = response.read()
                return response.status, content, (time.perf_counter() - began) * 1000
            except (http.client.HTTPException, OSError):
                self.connection.close()
                self.connection = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        return 0, b"", (time.perf_counter() - began) * 1000


def annotation_of(task: dict, rng: random.Random) -> dict:
    result = [{"from_name": f"error_{index}", "to_name": f"sentence_{index}", "type": "choices",
               "value": {"choices": [rng.choice(CHOICES)]}} for index in range(len(task["data"]["sentences"]))]
    return {"result": result, "lead_time": 1.0}


def serve_load(url: str, project: int, tokens: list[str], seconds: float) -> dict:
    nexts, saves, errors = [], [], []
    annotated: list[int] = []
    lock = threading.Lock()
    start = threading.Barrier(len(tokens) + 1)
    deadline = [0.0]

    def annotator(token: str, seed: int):
        rng, api = random.Random(seed), Api(url, token, timeout=60)
        start.wait()
        while time.monotonic() < deadline[0]:
            status, body, elapsed = api.call("GET", f"/api/projects/{project}/next/")
            if status != 200:
                with lock:
                    errors.append(f"next {status} {body[:120]!r}")
                if status == 404:  # no task left
                    return
                continue
            task = json.loads(body)
            with lock:
                nexts.append(elapsed)
            status, body, elapsed = api.call("POST", f"/api/tasks/{task['id']}/annotations/",
                                             annotation_of(task, rng))
            with lock:
                if status == 201:
                    saves.append(elapsed)
                    annotated.append(task["id"])
                else:
                    errors.append(f"annotation {status} {body[:120]!r}")

    threads = [threading.Thread(target=annotator, args=(token, i)) for i, token in enumerate(tokens)]
    for thread in threads:
        thread.start()
    deadline[0] = time.monotonic() + seconds
    start.wait()
    began = time.monotonic()
    for thread in threads:
        thread.join()
    wall = time.monotonic() - began
    return {"next": summarize(nexts), "annotation": summarize(saves), "error_count": len(errors),
            "errors": errors[:10], "wall_seconds": round(wall, 1),
            "requests_per_second": round((len(nexts) + len(saves)) / wall, 1),
            "annotated_tasks": len(annotated), "distinct_annotated_tasks": len(set(annotated))}


def run(args) -> dict:
    ls_python = Path(args.ls) / "bin" / "python"
    ls_path = subprocess.run([str(ls_python), "-c", "import label_studio, os; print(os.path.dirname("
                              "label_studio.__file__))"], capture_output=True, text=True, check=True).stdout.strip()
    data_dir = Path(args.data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "CACHE_URL", "CELERY"))}
    env.update({"LS_PATH": ls_path, "LABEL_STUDIO_BASE_DATA_DIR": str(data_dir), "DEBUG": "false",
                "LOG_LEVEL": "WARNING", "ADMIN_EMAIL": ADMIN_EMAIL, "ADMIN_PASSWORD": ADMIN_PASSWORD,
                "ADMIN_TOKEN": ADMIN_TOKEN, "ANNOTATORS": str(args.clients),
                "DJANGO_SETTINGS_MODULE": "label_studio.core.settings.label_studio",
                # No traffic off the machine: no error reports to Sentry, no version check against the registry.
                "SENTRY_DSN": "", "FRONTEND_SENTRY_DSN": "", "LATEST_VERSION_CHECK": "false",
                "COLLECT_ANALYTICS": "false"})
    if args.db == "postgres":
        env.update({"DJANGO_DB": "default", "POSTGRE_NAME": args.pg_database, "POSTGRE_USER": "postgres",
                    "POSTGRE_PASSWORD": "", "POSTGRE_HOST": "127.0.0.1", "POSTGRE_PORT": "5432"})
    else:
        env["DJANGO_DB"] = "sqlite"
    began = time.perf_counter()
    tokens = json.loads(subprocess.run([str(ls_python), "-c", LS_SETUP], env=env, cwd=ls_path, check=True,
                                       capture_output=True, text=True).stdout.strip().splitlines()[-1])["tokens"]
    setup_seconds = time.perf_counter() - began
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [str(Path(args.ls) / "bin" / "gunicorn"), "label_studio.core.wsgi:application", "--bind", f"127.0.0.1:{port}",
         "--workers", str(args.workers), "--worker-class", "sync", "--keep-alive", "30", "--timeout", "600",
         "--log-level", "warning", "--pythonpath", ls_path],
        cwd=ls_path, env=env)
    try:
        wait_for_port(port, seconds=60)
        admin = Api(url, ADMIN_TOKEN)
        for _ in range(args.workers * 2):  # every worker loaded before the clock starts
            admin.call("GET", "/api/projects/")
        status, body, _ = admin.call("POST", "/api/projects/", {
            "title": f"FV bench {int(time.time())}", "label_config": LABEL_CONFIG, "maximum_annotations": 1})
        assert status == 201, (status, body[:500])
        project = json.loads(body)["id"]
        tasks = Path(args.tasks).read_bytes()
        status, body, import_ms = admin.call("POST", f"/api/projects/{project}/import", json.loads(tasks))
        assert status == 201, (status, body[:500])
        imported = json.loads(body)
        status, body, count_ms = admin.call("GET", f"/api/projects/{project}/")
        task_number = json.loads(body).get("task_number")
        export = f"/api/projects/{project}/export?exportType=JSON&download_all_tasks=true"
        status, export_body, export_ms = admin.call("GET", export)
        assert status == 200, (status, export_body[:500])
        exported = json.loads(export_body)
        load = serve_load(url, project, tokens, args.seconds)
        status, export_body, export2_ms = admin.call("GET", export)
        annotations = sum(len(task.get("annotations", [])) for task in json.loads(export_body))
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    return {"label_studio": "1.23.2", "db": args.db, "server": f"gunicorn {args.workers} sync workers, DEBUG off",
            "load_average": " ".join(f"{load:.1f}" for load in os.getloadavg()),
            "setup_seconds": round(setup_seconds, 1), "import_rows": len(json.loads(tasks)),
            "import_seconds": round(import_ms / 1000, 2), "import_response": {
                k: imported.get(k) for k in ("task_count", "annotation_count", "duration")},
            "tasks_in_project": task_number, "export_seconds": round(export_ms / 1000, 2),
            "export_tasks": len(exported), "export_bytes": len(export_body), "clients": args.clients,
            "load_seconds": args.seconds, **{f"load_{k}": v for k, v in load.items()},
            "export_after_load_seconds": round(export2_ms / 1000, 2), "annotations_exported": annotations}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    conv = sub.add_parser("convert")
    conv.add_argument("--data", default=str(OUT / "scale-1x.jsonl"))
    conv.add_argument("--out", default=str(OUT / "ls-tasks.json"))
    bench = sub.add_parser("run")
    bench.add_argument("--ls", default="/work/peer/ls", help="Label Studio's virtual environment")
    bench.add_argument("--data-dir", required=True, help="Label Studio's data folder (outside the repository)")
    bench.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    bench.add_argument("--pg-database", default="label_studio_bench")
    bench.add_argument("--tasks", default=str(OUT / "ls-tasks.json"))
    bench.add_argument("--workers", type=int, default=4)
    bench.add_argument("--clients", type=int, default=10)
    bench.add_argument("--seconds", type=float, default=60)
    args = parser.parse_args()
    if args.command == "convert":
        print(f"{convert(Path(args.data), Path(args.out))} tasks written to {args.out}")
    else:
        print(json.dumps(run(args), indent=2))


if __name__ == "__main__":
    main()
