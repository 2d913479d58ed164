#!/usr/bin/env python3
"""Checks that every target can be compiled as a unity build (SWITCHYARD_UNITY_BUILD).

A unity build compiles several .cc files of one target as one translation unit, so a name
that each file keeps to itself -- in an anonymous namespace, declared `static` at namespace
scope, or brought in by a `using` at namespace scope -- must not appear in two files of the
same target. This check reads the sources of each target from a configured build's
compile_commands.json (a normal or a unity build: it reads the unity files' includes) and
fails naming both files and the name, so a new file's helper that shadows another file's
fails here, on every build, not only in CI's unity build.

Usage: check_unity.py BUILD_DIR   (exit 1 and one line per clash when a target has any)
The declarations are found by a light scan (comments and literals removed, braces
followed); what it cannot read it skips, and the unity build in CI is the final word.
"""
import collections
import json
import os
import re
import sys

IDENT = re.compile(r"[A-Za-z_]\w*")
KEYWORDS = {
    "const", "constexpr", "static", "inline", "struct", "class", "enum", "union", "using",
    "template", "typename", "unsigned", "signed", "long", "short", "int", "char", "bool",
    "void", "double", "float", "auto", "noexcept", "override", "final", "explicit",
    "operator", "return", "if", "for", "while", "switch", "new", "delete", "thread_local",
    "mutable", "volatile", "extern", "typedef", "namespace", "friend", "virtual", "decltype",
    "consteval", "constinit", "requires", "std", "size_t",
}


def strip(text):
    """Removes comments, string and character literals (keeps line structure)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = ")" + m.group(1) + '"'
            j = text.find(end, i + m.end())
            out.append('""')
            i = n if j < 0 else j + len(end)
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        elif c == "#":  # preprocessor line (and its continuations)
            while i < n and text[i] != "\n":
                i += 2 if text[i] == "\\" else 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def statement_name(stmt):
    """The name a namespace-scope statement declares, or None."""
    s = re.sub(r"\btemplate\s*<[^{};]*?>\s*", "", stmt).strip()
    if not s or s.startswith(("namespace", "extern", "friend", "static_assert")):
        return None
    m = re.match(r"(?:using\s+namespace\s+)([\w:]+)", s)
    if m:
        return None  # a using-directive: declares no name
    m = re.match(r"using\s+([\w:]+)\s*(=)?", s)
    if m:  # the same alias or using-declaration twice is allowed: keyed by what it names
        target = " ".join(s.split())
        return m.group(1).split("::")[-1] + ("" if not m.group(2) else "") + "\0" + target
    m = re.match(r"(?:enum\s+(?:class|struct)?|struct|class|union)\s+(?:\[\[[^\]]*\]\]\s*)?(\w+)", s)
    if m:
        return m.group(1)
    if "operator" in s:
        return None
    head = re.split(r"[({=;]|\[\s*\d", s, maxsplit=1)[0]
    if re.search(r"\)\s*$", head):
        return None
    names = [w for w in IDENT.findall(head) if w not in KEYWORDS]
    if names and re.search(r"::\s*" + names[-1] + r"\s*$", head):
        return None  # a class member defined out of line
    if not names or re.fullmatch(r"[A-Z][A-Z0-9_]*", names[-1]):
        return None  # nothing, or a macro's use (TEST, BENCHMARK)
    return names[-1]


def file_local_names(path):
    """Names with internal linkage (anonymous namespace, `static`) and namespace-scope
    using-declarations of one .cc file, keyed by enclosing named namespace."""
    try:
        text = strip(open(path, encoding="utf-8").read())
    except OSError:
        return set()
    found = set()
    # Scope stack entries: ("ns", name) for namespaces ("" = anonymous), ("x", None) else.
    stack = []
    stmt = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        in_ns = all(kind == "ns" for kind, _ in stack)
        if c == "{":
            s = "".join(stmt).strip()
            m = re.match(r"(?:inline\s+)?namespace\s*([\w:]*)\s*$", s)
            if in_ns and m is not None:
                stack.append(("ns", m.group(1)))
            else:
                if in_ns:
                    record(s, stack, found)
                stack.append(("x", None))
            stmt = []
        elif c == "}":
            if stack:
                stack.pop()
            stmt = []
        elif c == ";":
            if in_ns:
                record("".join(stmt).strip(), stack, found)
            stmt = []
        elif in_ns:
            stmt.append(c)
        i += 1
    return found


def record(stmt, stack, found):
    stmt = re.sub(r"\[\[.*?\]\]\s*", "", stmt)  # attributes: [[nodiscard]], [[gnu::...]]
    anonymous = any(kind == "ns" and name == "" for kind, name in stack)
    is_static = re.match(r"(?:template\s*<[^;{]*>\s*)?static\b", stmt) is not None
    is_using = re.match(r"using\s+(?!namespace)", stmt) is not None
    if re.match(r"using\s+namespace\b", stmt):
        # A using-directive declares no name: the same one in several files is harmless,
        # and a name it makes ambiguous in a later file of the batch the compiler reports.
        return
    if not (anonymous or is_static or is_using):
        return
    name = statement_name(stmt)
    if name:
        scope = "::".join(name for kind, name in stack if name)
        found.add((scope, name))


def target_sources(build_dir):
    """{target: [source .cc files]} from compile_commands.json."""
    with open(os.path.join(build_dir, "compile_commands.json")) as f:
        entries = json.load(f)
    targets = collections.defaultdict(list)
    for e in entries:
        # The object file names the target (not the -include of a precompiled header, which
        # may be another target's: tests/CMakeLists.txt, sy_test_pch).
        m = re.search(r"CMakeFiles/([^/]+)\.dir/", e.get("output", "")) or re.search(
            r"-o \S*CMakeFiles/([^/]+)\.dir/", e["command"])
        if not m:
            continue
        src = e["file"]
        if not src.endswith((".cc", ".cxx", ".cpp")) or "/proto/switchyard/" in src:
            continue
        if "/Unity/unity_" in src:
            for line in open(src):
                inc = re.match(r'#include "(.+)"', line)
                if inc:
                    targets[m.group(1)].append(inc.group(1))
        else:
            targets[m.group(1)].append(src)
    return targets


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    clashes = []
    for target, sources in sorted(target_sources(sys.argv[1]).items()):
        seen = collections.defaultdict(list)
        for src in sorted(set(sources)):
            for scope, name in file_local_names(src):
                seen[(scope, name)].append(src)
        by_name = collections.defaultdict(list)
        for (scope, key), files in seen.items():
            name, _, form = key.partition("\0")
            by_name[(scope, name)].append((form, files))
        for (scope, name), forms in sorted(by_name.items()):
            files = sorted({f for _, fs in forms for f in fs})
            if len(forms) == 1 and forms[0][0]:  # one alias, the same in every file
                continue
            if len(files) > 1:
                where = ", ".join(os.path.relpath(f) for f in files)
                clashes.append(f"{target}: '{name}' (in {scope or 'the global namespace'}) "
                               f"is file-local in {len(files)} files: {where}")
    for c in clashes:
        print(c)
    if clashes:
        print(f"{len(clashes)} names clash in a unity build: give each file's helper a name "
              "of its own (or move a shared one into a header)", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
