"""The house shows the pipeline: each module imports only its own stage and earlier ones, and nothing
imports in a circle. Imports are read from the source (``ast``), so a lazy import inside a function
counts too; each module is also imported alone in a fresh interpreter, which fails on a circle."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "autoparser"

# Stage of each top-level module or subpackage (lower may not import higher).
STAGES = {
    "errors": 0, "files": 0, "sources": 1, "render": 1, "analysis": 2, "emit": 3, "verify": 4, "pipeline": 5,
    "output": 6, "serve": 6, "cache": 6, "hook": 7, "batch": 7, "grammar": 6, "plugin": 8, "launch": 8, "cli": 9, "__main__": 10,
}


def _modules() -> list[str]:
    out = []
    for p in sorted(PKG.rglob("*.py")):
        parts = list(p.relative_to(PKG.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out.append(".".join(parts))
    return out


def _stage(module: str) -> int | None:
    parts = module.split(".")
    return STAGES.get(parts[1]) if len(parts) > 1 else None


def _imports(module: str) -> set[str]:
    """Every autoparser module ``module`` imports, resolved to a module name (``from . import x`` -> x)."""
    path = PKG.parent / (module.replace(".", "/") + ".py")
    if not path.exists():
        path = PKG.parent / module.replace(".", "/") / "__init__.py"
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    known = set(_modules())
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                out.add(sub if sub in known else target)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return {m for m in out if m == "autoparser" or m.startswith("autoparser.")}


MODULES = _modules()


@pytest.mark.parametrize("module", [m for m in MODULES if _stage(m) is not None])
def test_no_import_from_a_later_stage(module):
    mine = _stage(module)
    later = sorted(m for m in _imports(module) if (s := _stage(m)) is not None and s > mine)
    assert not later, f"{module} (stage {mine}) imports later stages: {later}"


def test_every_module_has_a_stage():
    assert [m for m in MODULES if m != "autoparser" and _stage(m) is None] == []


def test_no_circle_between_modules():
    graph = {m: {i for i in _imports(m) if i in MODULES and i != "autoparser" and not m.startswith(i + ".") and i != m}
             for m in MODULES}
    seen, stack, cycles = set(), [], []

    def visit(m):
        if m in stack:
            cycles.append(stack[stack.index(m):] + [m])
            return
        if m in seen:
            return
        seen.add(m)
        stack.append(m)
        for n in sorted(graph.get(m, ())):
            visit(n)
        stack.pop()

    for m in MODULES:
        visit(m)
    assert not cycles, " ; ".join(" -> ".join(c) for c in cycles)


def test_each_module_imports_alone():
    """A fresh interpreter per module: an import circle that only bites in one order fails here."""
    code = "import importlib, sys\nfor m in sys.argv[1:]:\n    importlib.import_module(m)\n"
    failed = []
    for m in (m for m in MODULES if not m.endswith("__main__")):  # __main__ runs the CLI
        run = subprocess.run([sys.executable, "-c", code, m], capture_output=True, text=True, timeout=120)
        if run.returncode:
            failed.append(f"{m}: {run.stderr.strip().splitlines()[-1] if run.stderr.strip() else run.returncode}")
    assert not failed, failed
