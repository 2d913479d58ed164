#!/usr/bin/env python3
"""scripts/check_layering.py on small trees made here: it fails on an include the table of
docs/design.md does not allow (naming the file, line and rule), passes on allowed ones,
and refuses a table it cannot read. The ctest `layering` runs it on the repository."""
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "check_layering.py")

TABLE = """# Design

<!-- layering:begin -->
| module | may include |
|---|---|
| `base` | |
| `kv_tiers` | `base` |
| `kv_tiers/transport` | `base`, `kv_tiers` |
| `service` | `base`, `kv_tiers` |
<!-- layering:end -->
"""


def tree(files, table=TABLE):
    root = tempfile.mkdtemp()
    os.makedirs(os.path.join(root, "docs"))
    with open(os.path.join(root, "docs", "design.md"), "w") as f:
        f.write(table)
    for path, text in files.items():
        os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
        with open(os.path.join(root, path), "w") as f:
            f.write(text)
    return root


def run(root):
    p = subprocess.run([sys.executable, SCRIPT, "--root", root], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


class CheckLayeringTest(unittest.TestCase):
    def test_allowed_includes_pass(self):
        code, out = run(tree({
            "base/status.h": '#include <string>\n',
            "kv_tiers/tier.h": '#include "base/status.h"\n',
            "kv_tiers/transport/peer.cc": '#include "kv_tiers/tier.h"\n#include "base/status.h"\n',
            "service/service.cc": '#include "service/service.h"\n#include "kv_tiers/tier.h"\n',
            "tests/anything_test.cc": '#include "service/service.h"\n',
        }))
        self.assertEqual(code, 0, out)
        self.assertIn("every include follows the dependency rule", out)

    def test_a_wrong_include_fails_naming_file_line_and_rule(self):
        code, out = run(tree({
            "base/status.h": '#pragma once\n#include "service/service.h"\n',
            "service/service.h": '#include "base/status.h"\n',
        }))
        self.assertEqual(code, 1, out)
        self.assertIn("base/status.h:2: includes service/service.h, but base may include only "
                      "no other module", out)

    def test_a_parent_module_may_not_include_its_sub_module(self):
        code, out = run(tree({"kv_tiers/tier.cc": '#include "kv_tiers/transport/peer.h"\n'}))
        self.assertEqual(code, 1, out)
        self.assertIn("kv_tiers/tier.cc:1: includes kv_tiers/transport/peer.h, but kv_tiers may "
                      "include only base", out)

    def test_rows_list_every_module_allowed_not_its_closure(self):
        # service may include kv_tiers, and kv_tiers/transport may include kv_tiers, but
        # service may not reach kv_tiers/transport through them.
        code, out = run(tree({"service/s.cc": '#include "kv_tiers/transport/peer.h"\n'}))
        self.assertEqual(code, 1, out)
        self.assertIn("service/s.cc:1: includes kv_tiers/transport/peer.h", out)

    def test_a_table_naming_an_unknown_module_is_refused(self):
        bad = TABLE.replace("| `service` | `base`, `kv_tiers` |", "| `service` | `driver` |")
        code, out = run(tree({}, table=bad))
        self.assertEqual(code, 2, out)
        self.assertIn("service may include driver, which has no row", out)

    def test_no_table_is_refused(self):
        code, out = run(tree({}, table="# Design\n"))
        self.assertEqual(code, 2, out)
        self.assertIn("no table between", out)


if __name__ == "__main__":
    unittest.main()
