#!/usr/bin/env python3
"""Markdown tables of `switchyard sweep --slo-capacity` results, as bench/RESULTS.md shows them.

usage: replay/slo_table.py NAME=DIR[,DIR...] [NAME=DIR[,DIR...] ...]

Each DIR is a sweep's --out directory (its slo.json); several DIRs of one cluster merge
their policies in order, a later sweep's policy replacing an earlier one's of the same
name (a policy re-swept at other rates or with a newer build). The policy order is the
first DIR's, new names appended. Prints, per cluster, one row of SLO
capacity (mean +- sample stddev [min-max] for the first policy, means for the others, the
best reference policy and the first policy's ratio to it; with an `oracle` column, the
oracle's headroom over the best reference (oracle / best - 1) and the share of it the first
policy captures ((first - best) / (oracle - best))), then the slowdown P99 at each load
fraction per policy. Policies whose name starts with the first policy's name
("switchyard:order=arrival") are variants, and the oracle an upper bound: neither is a
reference.
"""
import json
import sys


def cap(p):
    c = p["capacity"]
    star = "*" if c["below_lowest"] or c["at_least_highest"] else ""
    return c, star


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    runs = []
    for arg in argv[1:]:
        name, _, dirs = arg.partition("=")
        merged, order = {}, []
        for d in dirs.split(","):
            with open(f"{d}/slo.json") as f:
                for p in json.load(f)["policies"]:
                    if p["policy"] not in merged:
                        order.append(p["policy"])
                    merged[p["policy"]] = p
        runs.append((name, {"policies": [merged[n] for n in order]}))
    policies = [p["policy"] for p in runs[0][1]["policies"]]
    ours = policies[0]
    oracle = "oracle" in policies
    extra = " headroom | captured |" if oracle else ""
    print("| cluster | " + " | ".join(policies) + " | best reference | ratio |" + extra)
    print("|---" * (len(policies) + 3 + (2 if oracle else 0)) + "|")
    for name, d in runs:
        cells, best = [], (None, 0.0)
        for p in d["policies"]:
            c, star = cap(p)
            if p["policy"] == ours:
                cells.append(f"{c['mean_per_s']:.4g}{star} ± {c['stddev_per_s']:.2g} "
                             f"[{c['min_per_s']:.4g}–{c['max_per_s']:.4g}]")
            else:
                cells.append(f"{c['mean_per_s']:.4g}{star}")
            reference = not p["policy"].startswith(ours) and p["policy"] != "oracle"
            if reference and c["mean_per_s"] > best[1]:
                best = (p["policy"], c["mean_per_s"])
        mine = d["policies"][0]["capacity"]["mean_per_s"]
        row = f"| {name} | " + " | ".join(cells) + f" | {best[0]} | {mine / best[1]:.3f} |"
        if oracle:
            top = {p["policy"]: p for p in d["policies"]}["oracle"]["capacity"]["mean_per_s"]
            room = top - best[1]
            share = f"{(mine - best[1]) / room:.0%}" if room > 0 else "n/a (no headroom)"
            row += f" {top / best[1] - 1:.1%} | {share} |"
        print(row)
    print()
    fracs = [s["load_fraction"] for s in runs[0][1]["policies"][0]["slowdown"]]
    refs = [p for p in policies if p == ours or not p.startswith(ours)]
    print("Slowdown P99 at " + " / ".join(f"{f:.0%}" for f in fracs) +
          " of each policy's own capacity:")
    print()
    print("| cluster | " + " | ".join(refs) + " |")
    print("|---" * (len(refs) + 1) + "|")
    for name, d in runs:
        by = {p["policy"]: p for p in d["policies"]}
        cells = [" / ".join(f"{s['p99']:.2f}" for s in by[r]["slowdown"]) for r in refs]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv)
