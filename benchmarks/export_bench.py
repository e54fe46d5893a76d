"""The benchmark export at UniSumEval scale: old code vs this tree's, side by side on the same database.

    python -m benchmarks.export_bench build --scale 1 --engine sqlite     # once: import, HITs, simulated labels
    python -m benchmarks.export_bench build --scale 1 --engine postgres
    python -m benchmarks.export_bench measure --scale 1 --engine sqlite [--before main] [--repeat 2]

`build` reuses benchmarks/scale.py's child steps (import; KV HITs, KV labels; FV and KA HITs; FV and KA labels of 3
simulated annotators) into benchmarks/out/export-<scale>x.sqlite3 or the PostgreSQL database fg_export_scale[_<scale>x]
(another name: EXPORT_BENCH_PG=postgres://…/<name>).
`measure` runs each export (the full one: annotator labels, assistance, checks, parquet tables, card; and the
release one: default options) in its own process, with the --before commit's code (exported with `git archive`) and
with this tree's, alternately; it prints time, peak RSS and whether every output file has the same sha256.
The card's first lines carry the export time (minutes); that one line is left out of its hash.
"""

import argparse
import hashlib
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.scale import CHECK_RATE, OUT, ROOT, SLUG, checkout, child, generate

PG_BASE = os.environ.get("EXPORT_BENCH_PG", "postgres://postgres@127.0.0.1:5432/fg_export_scale")

EXPORT_CHILD = r'''
import json, os, resource, sys, time
import django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup()
from corpus.models import Project
from exports.export import ExportOptions, export_benchmark
args = json.loads(sys.argv[1])
options = ExportOptions(**args["options"])
project = Project.objects.get(slug=args["slug"])
started = time.perf_counter()
if args.get("profile"):
    import cProfile, pstats
    profiler = cProfile.Profile()
    profiler.enable()
result = export_benchmark(project=project, out=args["out"], options=options)
seconds = time.perf_counter() - started
if args.get("profile"):
    profiler.disable()
    pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(45)
print(json.dumps({"rows": result.rows, "files": [str(path) for path in result.files], "seconds": round(seconds, 2),
                  "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}))
'''

EXPORTS = {
    "full": {"annotator_labels": True, "assistance": True, "checks": True, "tables": "parquet", "card": True},
    "release": {},
}


VARIANTS = {  # What is built and labelled after the import (and the KV HITs and labels, always there).
    "full": [("build", {"task": "fv"}), ("build", {"task": "ka"}), ("simulate", {"tasks": ["fv", "ka"]})],
    "noka": [("build", {"task": "fv"}), ("simulate", {"tasks": ["fv"]})],
    "kv": [("build", {"task": "fv"})],  # FV HITs, no FV label: quick to build at 10x.
}


def database_url(engine: str, scale: float, variant: str = "full") -> str:
    name = f"{scale:g}x" + ("" if variant == "full" else f"-{variant}")
    if engine == "sqlite":
        return f"sqlite:///{OUT / f'export-{name}.sqlite3'}"
    return PG_BASE + ("" if name == "1x" else "_" + name.replace(".", "_").replace("-", "_"))


def build(engine: str, scale: float, variant: str = "full") -> None:
    url = database_url(engine, scale, variant)
    steps = [("import", {"rate": CHECK_RATE, "data": str(generate(scale))}), ("build", {"task": "kv"}),
             ("simulate", {"tasks": ["kv"]}), *VARIANTS[variant]]
    if engine == "sqlite":
        path = Path(url.removeprefix("sqlite:///"))
        for old in path.parent.glob(path.name + "*"):
            old.unlink()
    else:
        import psycopg

        admin = url.rsplit("/", 1)[0].replace("postgres://", "postgresql://") + "/postgres"
        name = url.rsplit("/", 1)[1]
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            connection.execute(f'CREATE DATABASE "{name}"')
    with tempfile.TemporaryDirectory(prefix="fg-export-build-") as work:
        for step, args in steps:
            print(json.dumps({"engine": engine, "scale": scale,
                              **child(ROOT, url, Path(work), step, slug=SLUG, **args)}), flush=True)


def run_export(code: Path, url: str, out: Path, options: dict, profile: bool = False) -> dict:
    env = dict(os.environ, DATABASE_URL=url, PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=str(code))
    env.pop("CELERY_BROKER_URL", None)
    env.pop("FINEGRAIN_REQUIRE_SERVICES", None)
    done = subprocess.run([sys.executable, "-c", EXPORT_CHILD, json.dumps(
        {"slug": SLUG, "out": str(out), "options": options, "profile": profile})], env=env, cwd=code,
        capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"export failed ({code}):\n{done.stderr[-3000:]}")
    if profile:
        print(done.stderr, file=sys.stderr)
    return json.loads(done.stdout.strip().splitlines()[-1])


def digest(path: Path) -> str:
    """sha256 of a file, read in blocks: a child's peak RSS counts its parent's at the fork (Linux keeps the
    high-water mark across exec), so this process must not hold a 400 MB export."""
    sha = hashlib.sha256()
    with path.open("rb") as handle:
        if path.name.endswith(".card.md"):  # "Exported <minute> UTC": the only line that depends on when it ran.
            sha.update(b"".join(line for line in handle if not line.startswith(b"Exported ")))
        else:
            for block in iter(lambda: handle.read(1 << 20), b""):
                sha.update(block)
    return sha.hexdigest()


def measure(engine: str, scale: float, variant: str, before: str, repeat: int, which: list[str],
            profile: bool, only_new: bool = False) -> list[dict]:
    url = database_url(engine, scale, variant)
    lines = []
    with tempfile.TemporaryDirectory(prefix="fg-export-") as temporary:
        work = Path(temporary)
        (work / "before").mkdir()
        old_code = checkout(before, work / "before")
        for name in which:
            for attempt in range(repeat):
                results = {}
                for label, code in (("before", old_code), ("after", ROOT))[1 if only_new else 0:]:
                    folder = work / f"{name}-{label}-{attempt}"
                    folder.mkdir()
                    result = run_export(code, url, folder / "bench.jsonl", EXPORTS[name], profile and label == "after")
                    result["sha256"] = {Path(path).name: digest(Path(path)) for path in result.pop("files")}
                    results[label] = result
                new = results["after"]
                old = results.get("before", {"seconds": math.nan, "peak_rss_mb": None, "sha256": new["sha256"]})
                line = {"engine": engine, "scale": scale, "variant": variant, "export": name, "attempt": attempt,
                        "rows": new["rows"],
                        "before_seconds": old["seconds"], "after_seconds": new["seconds"],
                        "ratio": None if only_new else round(old["seconds"] / max(new["seconds"], 1e-9), 2),
                        "before_peak_rss_mb": old["peak_rss_mb"], "after_peak_rss_mb": new["peak_rss_mb"],
                        "files": len(new["sha256"]), "same_files": old["sha256"] == new["sha256"],
                        "differing": sorted(k for k in old["sha256"].keys() | new["sha256"].keys()
                                            if old["sha256"].get(k) != new["sha256"].get(k)),
                        "bytes": sum((work / f"{name}-after-{attempt}" / k).stat().st_size for k in new["sha256"]),
                        "load_average": round(os.getloadavg()[0], 1)}
                print(json.dumps(line), flush=True)
                lines.append(line)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["build", "measure"])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--engine", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--variant", choices=sorted(VARIANTS), default="full",
                        help="full: KV, FV and KA HITs and labels; noka: KV and FV; kv: KV labels, FV HITs")
    parser.add_argument("--before", default="main", help="git ref of the old code")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--exports", default="full,release")
    parser.add_argument("--only-new", action="store_true", help="this tree's code only (no comparison)")
    parser.add_argument("--profile", action="store_true", help="cProfile of the new code's export, on stderr")
    parser.add_argument("--out", type=Path, help="also write the JSON lines here")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    if args.command == "build":
        started = time.perf_counter()
        build(args.engine, args.scale, args.variant)
        print(json.dumps({"built": args.engine, "seconds": round(time.perf_counter() - started, 1)}))
        return
    lines = measure(args.engine, args.scale, args.variant, args.before, args.repeat, args.exports.split(","),
                    args.profile, args.only_new)
    if args.out:
        args.out.write_text("".join(json.dumps(line) + "\n" for line in lines))


if __name__ == "__main__":
    main()
