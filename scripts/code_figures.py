#!/usr/bin/env python3
"""Size figures of the production code (everything but tests/, examples/ and generated
files): lines per top-level folder, files over 600 lines, functions over 80 lines.

A function is counted from the line that opens its body to the line that closes it, for
bodies that open at namespace scope (a definition at column 0, or a member defined in a
class body): the brace structure of the file, with comments and string literals skipped.
Usage: code_figures.py [--root DIR] [--max-file N] [--max-function N]
"""
import argparse
import os
import re
import subprocess

SOURCES = (".h", ".cc", ".cu", ".cuh")
SKIP_TOP = {"tests", "examples", "docs", "configs", "clients", "scripts", "cmake"}


def strip(text):
    """The text with comments and string/char literals blanked (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i)); i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            if m:
                end = text.find(")" + m.group(1) + '"', i)
                j = n if end < 0 else end + len(m.group(1)) + 2
                out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
            else:
                out.append(c); i += 1
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (min(j, n - 1) + 1 - i)); i = j + 1
        else:
            out.append(c); i += 1
    return "".join(out)


def functions(path):
    """(first line, line count, signature) of each function body in the file."""
    text = strip(open(path, encoding="utf-8", errors="replace").read())
    lines = text.split("\n")
    found, stack = [], []  # stack of (kind, start line)
    for ln, line in enumerate(lines, 1):
        for ch in line:
            if ch == "{":
                head = line.split("{")[0].strip()
                # What this brace opens: a namespace, class, enum, extern, an initializer
                # or lambda inside a body, or a function body.
                before = " ".join(l.strip() for l in lines[max(0, ln - 4):ln - 1]) + " " + head
                outer = [k for k, _ in stack if k in ("func",)]
                if outer:
                    kind = "inner"
                elif re.search(r"\b(namespace|class|struct|union|enum)\b[^;()]*$", before) and ")" not in head:
                    kind = "scope"
                elif re.search(r'extern\s*$', before):
                    kind = "scope"
                elif re.search(r"\)\s*(const|override|final|noexcept|mutable|->[^{]*|&|\s)*$", before) or re.search(r"\)\s*:\s*", before):
                    kind = "func"
                else:
                    kind = "other"
                stack.append((kind, ln))
            elif ch == "}" and stack:
                kind, start = stack.pop()
                if kind == "func":
                    found.append((start, ln - start + 1))
    return found


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."))
    p.add_argument("--max-file", type=int, default=600)
    p.add_argument("--max-function", type=int, default=80)
    a = p.parse_args()
    root = os.path.abspath(a.root)
    files = subprocess.check_output(["git", "-C", root, "ls-files"], text=True).split()
    per_top, big_files, big_funcs = {}, [], []
    for f in files:
        top = f.split("/")[0]
        if "/" not in f or top in SKIP_TOP or not f.endswith(SOURCES):
            continue
        path = os.path.join(root, f)
        if not os.path.isfile(path):
            continue
        n = sum(1 for _ in open(path, encoding="utf-8", errors="replace"))
        per_top[top] = per_top.get(top, 0) + n
        if n > a.max_file:
            big_files.append((n, f))
        for start, length in functions(path):
            if length > a.max_function:
                big_funcs.append((length, f"{f}:{start}"))
    print("lines per top-level folder (production code):")
    for top, n in sorted(per_top.items(), key=lambda x: -x[1]):
        print(f"  {top:16} {n:6}")
    print(f"files over {a.max_file} lines: {len(big_files)}")
    for n, f in sorted(big_files, reverse=True):
        print(f"  {n:5} {f}")
    print(f"functions over {a.max_function} lines: {len(big_funcs)}")
    for n, f in sorted(big_funcs, reverse=True):
        print(f"  {n:5} {f}")


if __name__ == "__main__":
    main()
