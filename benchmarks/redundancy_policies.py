"""Redundancy policies compared on the same simulated label streams, at UniSumEval size.

    python -m benchmarks.redundancy_policies [--seed 0] [--scale 1.0] [--repeat N] [--calibrate]
                                             [--hard-share 0.15] [--hard-factor 4]

A simulation, not the platform: exports.label_streams draws each unit's stream of crowd answers from a model
calibrated so that the fixed 3-annotator design reproduces the paper's agreement (FV alpha 0.60, KV AC1 0.88, KA
alpha 0.58), and exports.policy_comparison lets each policy read the front of the same streams. No database, no
HIT, no crowd provider is involved. Policies: fixed 3 (the paper's design), adaptive 3, lead (margin 2, cap 5), and
two labels per unit with a third for every unit of a HIT that has a split unit.

`--calibrate` searches the error rates again for this seed and scale alone (instead of the defaults in
exports.label_streams.TASKS, found at scale 1 over seeds 0-4) and uses them. Prints markdown tables and the targets.
"""

import argparse
import dataclasses
import os
import time

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup()

from annotation.redundancy import Policy, Redundancy  # noqa: E402 (annotation needs Django's app registry)
from exports.label_streams import PAPER_AGREEMENT, TASKS, calibrate, generate  # noqa: E402
from exports.policy_comparison import Summary, collect, collect_per_hit, compare  # noqa: E402

FIXED, ADAPTIVE, LEAD, PER_HIT = "fixed 3", "adaptive 3", "lead (margin 2, cap 5)", "2 per unit, 3rd per HIT"
POLICIES = {
    FIXED: Redundancy(Policy.FIXED, 3),
    ADAPTIVE: Redundancy(Policy.ADAPTIVE, 3),
    LEAD: Redundancy(Policy.LEAD, 3, margin=2, cap=5),
}
COEFFICIENT = {"fv": "alpha", "kv": "AC1", "ka": "alpha"}


def percent(value: float, digits: int = 1) -> str:
    return f"{100 * value:.{digits}f}%"


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def policy_rows(results: dict[str, Summary], fixed: Summary, agreement: bool) -> list[list[str]]:
    rows = []
    for name, summary in results.items():
        row = [
            name, f"{summary.labels:,}", percent(summary.label_share), percent(summary.same_majority_share, 2),
            f"{summary.errors:,}", f"{summary.errors / fixed.errors - 1:+.1%}" if fixed.errors else "-",
            percent(summary.accuracy, 2), percent(summary.escalated_share, 2), percent(summary.settled_accuracy, 2),
        ]
        if agreement:
            row += [f"{summary.agreement_first_two:.3f}", f"{summary.agreement_collected:.3f}"]
        row += [percent(summary.settled_within(1)), percent(summary.settled_within(2))]
        rows.append(row)
    return rows


def policy_header(agreement: bool, coefficient: str = "") -> list[str]:
    header = ["policy", "labels", "of fixed-3 labels", "same majority as fixed-3", "errors vs truth",
              "errors vs fixed-3", "accuracy", "escalated", "accuracy, escalated set aside"]
    if agreement:
        header += [f"{coefficient}, first 2 labels", f"{coefficient}, all collected"]
    return header + ["settled in round 1", "within 1 extra round"]


def check(name: str, met: bool, measured: str) -> str:
    return f"- [{'met' if met else 'NOT met'}] {name}: {measured}"


def run(models: dict, seed: int) -> tuple[dict, dict]:
    """The streams of every task, and every policy compared on them: {task: {policy: {group: Summary}}}."""
    streams = {task: generate(model, seed=seed) for task, model in models.items()}
    results = {}
    for task, stream in streams.items():
        collections = {name: collect(stream.labels, policy, name) for name, policy in POLICIES.items()}
        collections[PER_HIT] = collect_per_hit(stream.labels, stream.hit)
        results[task] = compare(stream, collections, FIXED)
    return streams, results


def pooled_over_tasks(results: dict, group: str = "all") -> dict[str, Summary]:
    return {name: Summary.pooled(groups[name][group] for groups in results.values()) for name in results["fv"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--scale", type=float, default=1.0, help="units and HITs as a multiple of UniSumEval's")
    parser.add_argument("--repeat", type=int, default=0, metavar="N",
                        help="also the headline figures for the N seeds after --seed, one line each")
    parser.add_argument("--calibrate", action="store_true", help="search the error rates again for this seed/scale")
    # How much the verdict on `lead` owes to the model: errors concentrated on fewer, harder units are more alike
    # across annotators, which extra labels fix less often (use with --calibrate to keep the paper's agreement).
    parser.add_argument("--hard-share", type=float, help="share of hard units (default 0.15)")
    parser.add_argument("--hard-factor", type=float, help="error multiplier on hard units (default 4)")
    args = parser.parse_args()

    started = time.perf_counter()
    models = {task: model.scaled(args.scale) for task, model in TASKS.items()}
    overrides = {field: value for field, value in (("hard_share", args.hard_share), ("hard_factor", args.hard_factor))
                 if value is not None}
    models = {task: dataclasses.replace(model, **overrides) for task, model in models.items()}
    if args.calibrate:
        for task, model in models.items():
            error, value = calibrate(model, seeds=(args.seed,))
            print(f"calibrated {task}: error {error:.4f} -> fixed-3 {COEFFICIENT[task]} {value:.4f}")
            models[task] = dataclasses.replace(model, error=error)
    streams, results = run(models, args.seed)
    finished = time.perf_counter()

    total_units = sum(stream.units for stream in streams.values())
    print(f"seed {args.seed}, scale {args.scale}: {total_units:,} units "
          f"({', '.join(f'{task.upper()} {s.units:,}' for task, s in streams.items())}), streams of "
          f"{next(iter(streams.values())).max_labels} labels; generated, collected and compared in "
          f"{finished - started:.2f} s\n")

    print("## Calibration: the fixed 3-annotator design against the paper\n")
    rows = []
    for task, stream in streams.items():
        fixed = results[task][FIXED]["all"]
        rows.append([task.upper(), f"{stream.units:,}", percent(stream.truth.mean()), f"{models[task].error:.4f}",
                     COEFFICIENT[task], f"{fixed.agreement_collected:.3f}", f"{PAPER_AGREEMENT[task]:.2f}"])
    print(table(["task", "units", "true yes", "error (careful, common answer)", "coefficient", "fixed-3",
                 "paper"], rows) + "\n")

    for task in streams:
        print(f"## {task.upper()}\n")
        by_policy = {name: groups["all"] for name, groups in results[task].items()}
        print(table(policy_header(True, COEFFICIENT[task]), policy_rows(by_policy, by_policy[FIXED], True)) + "\n")

    pooled = pooled_over_tasks(results)
    print("## All tasks pooled\n")
    print(table(policy_header(False), policy_rows(pooled, pooled[FIXED], False)) + "\n")

    print("## Rounds to settle (share of units settled in each round; escalated units apart)\n")
    print("Round 1 is the policy's first round (fixed: 3 labels; adaptive, lead, per HIT: 2); each later round gives "
          "every unit still undecided the fewest labels that could settle it (lead after a 1-1 split: two).\n")
    most = max(len(summary.settled_by_round) for summary in pooled.values())
    rows = []
    for task, groups in [(task.upper(), {n: g["all"] for n, g in results[task].items()}) for task in streams] + [
            ("all", pooled)]:
        for name, summary in groups.items():
            shares = [summary.settled_by_round[r] / summary.units if r < len(summary.settled_by_round) else 0.0
                      for r in range(most)]
            rows.append([task, name] + [percent(share, 2) for share in shares] + [percent(summary.escalated_share, 2)])
    print(table(["task", "policy"] + [f"round {r + 1}" for r in range(most)] + ["escalated"], rows) + "\n")

    domains = next(iter(streams.values())).domains
    by_domain = {domain: pooled_over_tasks(results, domain) for domain in domains}
    print("## Per domain, all tasks pooled (labels as a share of fixed-3's; errors against the simulated truth)\n")
    rows = []
    for domain, summaries in by_domain.items():
        rows.append([domain] + [percent(summaries[name].label_share) for name in (ADAPTIVE, LEAD, PER_HIT)]
                    + [percent(summaries[ADAPTIVE].same_majority_share, 2)]
                    + [f"{summaries[name].errors:,}" for name in (FIXED, LEAD)]
                    + [percent(summaries[LEAD].escalated_share, 2)])
    print(table(["domain", "adaptive labels", "lead labels", "per-HIT labels", "adaptive same majority",
                 "fixed-3 errors", "lead errors", "lead escalated"], rows) + "\n")

    print("## Per domain and task: agreement, fixed-3 on 3 labels vs adaptive's headline on the first 2\n")
    rows = []
    for domain in domains:
        row = [domain]
        for task in streams:
            fixed, adaptive = results[task][FIXED][domain], results[task][ADAPTIVE][domain]
            row += [f"{fixed.agreement_collected:.3f}", f"{adaptive.agreement_first_two:.3f}",
                    percent(adaptive.label_share)]
        rows.append(row)
    header = ["domain"]
    for task in streams:
        header += [f"{task.upper()} fixed-3 {COEFFICIENT[task]}", f"{task.upper()} first 2",
                   f"{task.upper()} adaptive labels"]
    print(table(header, rows) + "\n")

    print("## Targets\n")
    adaptive, lead, fixed = pooled[ADAPTIVE], pooled[LEAD], pooled[FIXED]
    worst_domain = max(domains, key=lambda domain: by_domain[domain][ADAPTIVE].label_share)
    lines = [
        check("adaptive <= 72% of fixed-3 labels over all tasks", adaptive.label_share <= 0.72,
              percent(adaptive.label_share)),
        check("adaptive <= 75% in every domain", by_domain[worst_domain][ADAPTIVE].label_share <= 0.75,
              f"highest {percent(by_domain[worst_domain][ADAPTIVE].label_share)} ({worst_domain})"),
        check("adaptive: 100% same majority as fixed-3", adaptive.same_majority == adaptive.units,
              f"{adaptive.same_majority:,} of {adaptive.units:,} units"),
    ]
    gaps = {task: results[task][ADAPTIVE]["all"].agreement_first_two - results[task][FIXED]["all"].agreement_collected
            for task in streams}
    lines.append(check("adaptive: agreement on the first 2 labels within 0.02 of fixed-3's (per task)",
                       all(abs(gap) <= 0.02 for gap in gaps.values()),
                       ", ".join(f"{task.upper()} {gap:+.3f}" for task, gap in gaps.items())))
    error_cut = 1 - lead.errors / fixed.errors
    lines.append(check("lead: >= 20% fewer errors against truth than fixed-3", error_cut >= 0.20,
                       f"{error_cut:.1%} fewer ({lead.errors:,} vs {fixed.errors:,}; escalated units by their "
                       f"current majority)"))
    settled_cut = 1 - (lead.errors - lead.escalated_errors) / fixed.errors
    lines.append(f"  (with its {lead.escalated:,} escalated units set aside for a reviewer, counted as no error: "
                 f"{settled_cut:.1%} fewer)")
    lines.append(check("lead: <= 80% of fixed-3 labels", lead.label_share <= 0.80, percent(lead.label_share)))
    for name in (ADAPTIVE, LEAD, PER_HIT):
        within = pooled[name].settled_within(2)
        lines.append(check(f"{name}: >= 90% of units settled within one extra round", within >= 0.90,
                           percent(within)))
    print("\n".join(lines))

    if args.repeat:
        print(f"\n## The headline figures for seeds {args.seed} to {args.seed + args.repeat}\n")
        rows = [headline(args.seed, results, domains)]
        rows += [headline(seed, run(models, seed)[1], domains)
                 for seed in range(args.seed + 1, args.seed + args.repeat + 1)]
        print(table(["seed", "FV fixed-3 alpha", "KV fixed-3 AC1", "KA fixed-3 alpha", "FV first-2 gap",
                     "KV first-2 gap", "KA first-2 gap", "adaptive labels", "adaptive, worst domain",
                     "adaptive same majority", "lead labels", "lead fewer errors", "lead settled within 1 extra",
                     "per-HIT labels"], rows))


def headline(seed: int, results: dict, domains: tuple[str, ...]) -> list[str]:
    """One seed's figures that the targets are about, on one line."""
    pooled = pooled_over_tasks(results)
    fixed = {task: groups[FIXED]["all"].agreement_collected for task, groups in results.items()}
    first_two = {task: groups[ADAPTIVE]["all"].agreement_first_two for task, groups in results.items()}
    worst = max(pooled_over_tasks(results, domain)[ADAPTIVE].label_share for domain in domains)
    return ([str(seed)] + [f"{value:.3f}" for value in fixed.values()]
            + [f"{first_two[task] - fixed[task]:+.3f}" for task in fixed]
            + [percent(pooled[ADAPTIVE].label_share), percent(worst), percent(pooled[ADAPTIVE].same_majority_share, 2),
               percent(pooled[LEAD].label_share), f"{1 - pooled[LEAD].errors / pooled[FIXED].errors:.1%}",
               percent(pooled[LEAD].settled_within(2)), percent(pooled[PER_HIT].label_share)])

if __name__ == "__main__":
    main()
