"""What ``infer`` hands out is the same text on every run: a template written into a checkpoint, compared in
review or cached by its hash must not change with the interpreter's string hashing (``PYTHONHASHSEED``)."""

import os
import subprocess
import sys
from pathlib import Path

from conftest import CORPUS, corpus_template

ROOT = Path(__file__).resolve().parents[1]


def test_the_emitted_template_does_not_depend_on_string_hashing(tmp_path):
    # Command R7B's content closes at two end markers of the same length (<|END_THINKING|>, <|END_RESPONSE|>):
    # ordered by a set's iteration, their order in the pattern changed from run to run.
    corpus_template("CohereForAI-c4ai-command-r7b-12-2024-tool_use")  # skips without the shared corpus
    path = CORPUS / "templates" / "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja"
    outs = set()
    for seed in ("0", "1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               "AUTOPARSER_CACHE_DIR": str(tmp_path / seed)}  # each run infers: nothing remembered between them
        run = subprocess.run([sys.executable, "-m", "autoparser", "infer", str(path), "--token", "bos_token=<BOS_TOKEN>",
                              "--token", "eos_token=<|END_OF_TURN_TOKEN|>", "-o", "-"], capture_output=True, text=True, env=env, timeout=120)
        assert run.returncode == 0, run.stderr
        outs.add(run.stdout)
    assert len(outs) == 1
