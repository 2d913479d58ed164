#!/usr/bin/env python3
"""Checks the one-way dependency rule of docs/design.md ("Dependencies").

The rule is the table between the markers `<!-- layering:begin -->` and
`<!-- layering:end -->` in docs/design.md: one row per module (a top-level folder, or a
sub-folder such as kv_tiers/remote, which is then a module of its own), and the
modules whose headers its files may include. A file belongs to the longest module path
that is a prefix of it; an include "X/..." names the longest module path that is a prefix
of X. Every #include "..." of every C++ file under a module in the table is checked; a
module may always include itself. Folders not in the table (tests/, docs/, ...) are not
checked.

Usage: check_layering.py [--root DIR]   (DIR: the repository, default: this script's ..)
Exit status 0 when every include is allowed, 1 with one line per violation, 2 when the
table cannot be read.
"""
import argparse
import os
import re
import sys

BEGIN, END = "<!-- layering:begin -->", "<!-- layering:end -->"
SOURCES = (".h", ".cc", ".cu", ".cuh", ".cc.in")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def read_rules(design):
    text = open(design, encoding="utf-8").read()
    if BEGIN not in text or END not in text:
        raise ValueError(f"{design}: no table between {BEGIN} and {END}")
    rules = {}
    for line in text.split(BEGIN, 1)[1].split(END, 1)[0].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or not cells[0].startswith("`"):
            continue  # header, separator, prose
        module = cells[0].strip("`")
        allowed = re.findall(r"`([^`]+)`", cells[1])
        if module in rules:
            raise ValueError(f"{design}: module {module} has two rows")
        rules[module] = set(allowed)
    for module, allowed in rules.items():
        for a in allowed:
            if a not in rules:
                raise ValueError(f"{design}: {module} may include {a}, which has no row")
    return rules


def module_of(path, modules):
    best = None
    for m in modules:
        if path == m or path.startswith(m + "/"):
            if best is None or len(m) > len(best):
                best = m
    return best


def check(root):
    rules = read_rules(os.path.join(root, "docs", "design.md"))
    modules = sorted(rules)
    problems = []
    for top in sorted({m.split("/")[0] for m in modules}):
        base = os.path.join(root, top)
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if d not in ("node_modules", "build"))
            for name in sorted(filenames):
                if not name.endswith(SOURCES):
                    continue
                path = os.path.relpath(os.path.join(dirpath, name), root)
                owner = module_of(path, modules)
                with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target = module_of(m.group(1), modules)
                        if target is None or target == owner or target in rules[owner]:
                            continue
                        allowed = ", ".join(sorted(rules[owner])) or "no other module"
                        problems.append(
                            f"{path}:{lineno}: includes {m.group(1)}, but {owner} may include "
                            f"only {allowed} (docs/design.md, \"Dependencies\")")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."))
    args = parser.parse_args()
    try:
        problems = check(os.path.abspath(args.root))
    except (OSError, ValueError) as e:
        print(f"check_layering: {e}", file=sys.stderr)
        return 2
    for p in problems:
        print(p)
    if problems:
        print(f"check_layering: {len(problems)} include(s) break the dependency rule")
        return 1
    print("check_layering: every include follows the dependency rule")
    return 0


if __name__ == "__main__":
    sys.exit(main())
