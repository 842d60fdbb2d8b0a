"""Writing results and error lines: shared by the CLI, the batch runner and the cache, which must not
import each other."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

_UMASK = os.umask(0)
os.umask(_UMASK)

MAX_ERROR = 400  # characters of one error line (templates raise messages of any size)


def write_atomic(path: str | Path, text: str) -> None:
    """Write via a temporary file and rename, so a killed run never leaves half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        try:  # mkstemp makes 0600 files: keep the replaced file's mode, else the umask's default
            os.chmod(tmp, path.stat().st_mode & 0o7777 if path.exists() else 0o666 & ~_UMASK)
        except OSError:
            pass
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def one_line(text: object) -> str:
    """An error message as one printable line: templates and file names may carry newlines or escapes."""
    text = re.sub(r"\s*[\r\n]+\s*", " | ", str(text).strip())
    text = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}" for c in text)
    return text if len(text) <= MAX_ERROR else text[: MAX_ERROR - 1] + "…"


def record(template: dict, verdict: dict | None) -> str:
    """What ``infer -o`` and ``batch`` write: the response_template with the verdict on it. Readers take
    ``["response_template"]`` (``unwrap``); tokenizer_config.json gets the bare template."""
    import json

    return json.dumps({"response_template": template, "verdict": verdict}, indent=2, ensure_ascii=False) + "\n"


def unwrap(data: object) -> object:
    """The response_template inside a record written by ``record``, or ``data`` itself (a bare template)."""
    if isinstance(data, dict) and "response_template" in data and "fields" not in data:
        return data["response_template"]
    return data
