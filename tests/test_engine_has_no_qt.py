"""The engine must run without Qt: nothing under app/engine imports PySide6, pyqtgraph or app.ui."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[1] / "app" / "engine"
FORBIDDEN = ("PySide6", "pyqtgraph", "app.ui", "shiboken6")


def test_no_qt_import_statements() -> None:
    offenders = []
    for path in ENGINE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [f"{path.name}: {n}" for n in names if n.startswith(FORBIDDEN)]
    assert offenders == []


def test_importing_every_engine_module_loads_no_qt() -> None:
    modules = sorted(
        ".".join(p.relative_to(ENGINE.parents[1]).with_suffix("").parts)
        for p in ENGINE.rglob("*.py")
        if p.name != "__init__.py"
    )
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        f"bad = [m for m in sys.modules if m.startswith({FORBIDDEN!r})]\n"
        "print(bad); sys.exit(1 if bad else 0)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ENGINE.parents[1], check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
