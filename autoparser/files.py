"""Where autoparser keeps files, and how it writes them: below every stage, since the sources (a GGUF header read
from the Hub), the cache of results and the CLI's outputs all keep files and must not import each other."""

from __future__ import annotations

import os
import sys
from pathlib import Path

_UMASK = os.umask(0)
os.umask(_UMASK)


def cache_dir() -> Path:
    """``$AUTOPARSER_CACHE_DIR``, else the platform's user cache directory + ``autoparser``."""
    env = os.environ.get("AUTOPARSER_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    if sys.platform == "win32" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"]) / "autoparser" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "autoparser"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "autoparser"


def write_atomic(path: str | Path, text: str) -> None:
    """Write via a temporary file and rename, so a killed run never leaves half a file."""
    import tempfile

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
