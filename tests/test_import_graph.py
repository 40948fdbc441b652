"""The import graph has no cycle and ctxbench.core stands alone (issue 18), counting the imports
inside functions too (issue 28: they hid three circles): checked by scripts/check_imports.py, run
here on ctxbench and on small packages made to fail."""

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("check_imports", ROOT / "scripts" / "check_imports.py")
check_imports = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_imports)


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "pkg"
    for name, text in {"__init__.py": "", **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_ctxbench_has_no_import_cycle_and_core_imports_nothing_of_it():
    assert check_imports.problems(ROOT / "ctxbench") == []


def test_the_check_finds_module_and_subpackage_cycles(tmp_path):
    root = _package(
        tmp_path,
        {
            "a.py": "from pkg import b\n",
            "b.py": "import pkg.a\n",
            "x/__init__.py": "",
            "x/one.py": "from pkg.y.two import f\n",
            "y/__init__.py": "",
            "y/two.py": "from typing import TYPE_CHECKING\nfrom pkg.x import three\n"
            "if TYPE_CHECKING:\n    import pkg.a\n",
            "x/three.py": "def g():\n    import pkg.a\n",
            "core.py": "from pkg.x import three\n",
            "c.py": "import pkg.d\n",
            "d.py": "class D:\n    def f(self):\n        from pkg import c\n",  # run later, still an edge
            "e.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import f\n",
            "f.py": "import pkg.e\n",
        },
    )
    found = check_imports.problems(root)
    assert "import cycle among modules: pkg.a, pkg.b" in found
    assert "import cycle among modules: pkg.c, pkg.d" in found
    assert "import cycle among subpackages: pkg.x, pkg.y" in found  # x.one -> y.two -> x.three: no module cycle
    assert "pkg.core must import nothing of pkg, imports pkg.x, pkg.x.three" in found
    assert len(found) == 4  # an import under TYPE_CHECKING never runs: not an edge (e, f)


def test_a_pending_edge_is_left_out_until_it_is_gone(tmp_path):
    root = _package(tmp_path, {"a.py": "from pkg import b\n", "b.py": "def f():\n    import pkg.a\n"})
    assert check_imports.problems(root, pending=frozenset({("pkg.b", "pkg.a")})) == []
    (root / "b.py").write_text("")
    assert check_imports.problems(root, pending=frozenset({("pkg.b", "pkg.a")})) == [
        "pending edge pkg.b -> pkg.a is gone: remove its mark"
    ]


def test_the_script_exits_non_zero_on_a_cycle(tmp_path):
    root = _package(tmp_path, {"a.py": "from . import b\n", "b.py": "from . import a\n"})
    script = ROOT / "scripts" / "check_imports.py"
    bad = subprocess.run([sys.executable, script, root], capture_output=True, text=True)
    good = subprocess.run([sys.executable, script, ROOT / "ctxbench"], capture_output=True, text=True)
    assert (bad.returncode, good.returncode) == (1, 0), bad.stdout + good.stdout
    assert "pkg.a, pkg.b" in bad.stdout
