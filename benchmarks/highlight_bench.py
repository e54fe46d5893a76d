"""The HIT page in a browser: how long moving from one item to the next takes on a 10,000-word source text.

    python -m benchmarks.highlight_bench [--rounds 10] [--db postgres|sqlite] [--pg-database NAME]

Set-up: benchmarks/hit_load.py's (one 10,000-word synthetic document split into ~560 sentences, FV HITs of
8 summary sentences, a contextual mapping that highlights 30% of the source for every summary sentence), served by
gunicorn as there, and opened in Debian's Chromium through Playwright with an annotator's session cookie.

Each move is the keyboard's: a `j` (next item) or `k` (previous) keydown on the document. The page then swaps
~170 highlighted source sentences and scrolls the source to the first of them. Two times per move, both from
the page's own clock (performance.now), one move at a time:
- `handler_ms`: the keydown's handlers, then a forced layout (what the next frame needs, the paint aside);
- `frame_ms`: from the keydown to the second animation frame after it, so the style, layout and paint of the move
  are in it (it cannot be shorter than a frame, ~16.7 ms at 60 Hz).
`--rounds` times through the HIT and back (7 moves each way). It also checks that the source text is never
rendered again: a marker set on its first sentence must survive every move.
"""

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys

from benchmarks.hit_load import ROOT, add_database_arguments, build, free_port, wait_for_port

CHROMIUM = os.environ.get("FINEGRAIN_CHROMIUM", "/usr/bin/chromium")

MOVE = """async (key) => {
    const began = performance.now();
    document.dispatchEvent(new KeyboardEvent("keydown", {key, bubbles: true}));
    document.body.getBoundingClientRect();
    const handled = performance.now();
    await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
    return [handled - began, performance.now() - began];
}"""


def measure(port: int, info: dict, rounds: int) -> dict:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                             args=["--no-sandbox", "--disable-gpu"])
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        context.add_cookies([{"name": "sessionid", "value": info["session"], "domain": "127.0.0.1", "path": "/"},
                             {"name": "csrftoken", "value": info["csrf"], "domain": "127.0.0.1", "path": "/"}])
        page = context.new_page()
        page.goto(f"http://127.0.0.1:{port}/work/hits/{info['assignment']}/")
        page.wait_for_selector("#item-0.current")
        items = page.locator("fieldset.item").count()
        sentences = page.locator("#source .sentence").count()
        page.evaluate("() => { document.getElementById('s0').dataset.probe = 'kept'; }")
        handler, frame, highlighted = [], [], []
        for _round in range(rounds):
            for key in ("j", "k"):
                for _move in range(items - 1):
                    handled, painted = page.evaluate(MOVE, key)
                    handler.append(handled)
                    frame.append(painted)
                    highlighted.append(page.locator(".sentence.hl").count())
        kept = page.get_attribute("#s0", "data-probe") == "kept"
        browser.close()
    return {"items": items, "source_sentences": sentences, "moves": len(handler),
            "highlighted_per_item": round(statistics.mean(highlighted)), "source_rendered_once": kept,
            "handler_ms": summary(handler), "frame_ms": summary(frame)}


def summary(values: list[float]) -> dict:
    ordered = sorted(values)
    return {"median": round(statistics.median(ordered), 1), "p90": round(ordered[int(0.9 * (len(ordered) - 1))], 1),
            "max": round(ordered[-1], 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_database_arguments(parser)
    parser.set_defaults(annotators=1)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    setup, env_vars, cache = build(args)
    port = free_port()
    env = {**os.environ, **env_vars}
    env.pop("CELERY_BROKER_URL", None)
    server = subprocess.Popen([sys.executable, "-m", "gunicorn", "config.wsgi", "--bind", f"127.0.0.1:{port}",
                               "--workers", "1", "--log-level", "warning"], cwd=ROOT, env=env)
    try:
        wait_for_port(port, seconds=10)
        result = measure(port, setup["sessions"][0], args.rounds)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
    print(json.dumps({"words": setup["words"], "db": args.db, "cache": cache,
                      "load_average": " ".join(f"{load:.1f}" for load in os.getloadavg()), **result}, indent=2))


if __name__ == "__main__":
    main()
