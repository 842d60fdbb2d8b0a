"""docs/MODELS.md stays true: its corpus columns (verdict, tool-call format, reasoning mode) are what
``benchmarks/models_page.py`` computes today, exactly, and every set lists exactly the templates it holds.
The whole page, real-output scores included, is checked by ``python benchmarks/models_page.py --check``
(half a minute to a minute: too slow for the suite); here the corpus' results come from the pipeline's
memo, which ``tests/test_corpus.py`` has filled."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("models_page", ROOT / "benchmarks" / "models_page.py")
models_page = importlib.util.module_from_spec(_spec)
sys.modules["models_page"] = models_page
_spec.loader.exec_module(models_page)

pytestmark = pytest.mark.skipif(not models_page.SETS["corpus"].is_dir(), reason="../shared/corpus is absent")


def _sections() -> dict[str, dict[str, list[str]]]:
    """set -> template -> its row's cells, read from the page."""
    out: dict[str, dict[str, list[str]]] = {}
    current = None
    for line in models_page.PAGE.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            word = line[3:].split(" ")[0]
            current = out.setdefault(word, {}) if word in models_page.SETS else None
        elif current is not None and line.startswith("| ") and not line.startswith(("| template", "| ---")):
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            current[cells[0]] = cells[1:]
    return out


def test_every_template_is_listed():
    page = _sections()
    for which, d in models_page.SETS.items():
        assert sorted(page.get(which, {})) == sorted(p.stem for p in d.glob("*.jinja")), f"{which}: regenerate docs/MODELS.md"


def test_corpus_columns_are_todays():
    page = _sections()["corpus"]
    for which, path in models_page.templates():
        if which != "corpus":
            continue
        row = models_page.row((which, path))
        assert page[row["name"]][:3] == [row["verdict"], row["tools"], row["reasoning"]], (
            f"{row['name']}: the page says {page[row['name']][:3]}, today {row['verdict']}, {row['tools']}, {row['reasoning']}; "
            "regenerate with python benchmarks/models_page.py")
