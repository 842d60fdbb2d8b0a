"""Resolve a SOURCE argument: a local path, else a Hub model id.

For a Hub id only the few small files that hold the chat template and the special tokens are fetched,
through ``hf_hub_download``: they land in the ordinary HF cache, and ``HF_TOKEN``, ``HF_ENDPOINT`` and
``HF_HUB_OFFLINE`` work as everywhere else. The downloaded files sit in one snapshot folder, which is then
read by the same code as a local model directory, so the precedence is the local one (and transformers'):
``additional_chat_templates/NAME.jinja`` for a named template, else ``chat_template.jinja``, else
``chat_template.json``, else ``tokenizer_config.json``. Every Hub failure becomes one ``SourceError``
naming the model.
"""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

from ..errors import SourceError
from .local import TemplateSource, load_dir, load_path

HUB_FILES = ("tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja", "chat_template.json")
_COMMIT = re.compile(r"[0-9a-f]{40}")
_LOCAL_SUFFIXES = (".jinja", ".j2", ".json", ".txt")
_ABSENT = "absent"  # the repo does not have the file
_UNKNOWN = "unknown"  # offline or unreachable, and the cache does not know


def resolve(source: str, revision: str | None = None, name: str | None = None) -> TemplateSource:
    """A local file or directory if ``source`` exists, else a Hub model id."""
    if Path(source).exists():
        return load_path(source, name)
    if _looks_local(source):
        raise SourceError("no such file or directory", source)
    return from_hub(source, revision, name)


def _looks_local(source: str) -> bool:
    """Paths that cannot be Hub ids: better "no such file" than "no such model" for a typo'd path."""
    if not source or source.startswith(("/", "./", "../", "~", ".\\")) or os.path.isabs(source):
        return True
    if source.count("/") > 1 or source.lower().endswith(_LOCAL_SUFFIXES):
        return True
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(source)
    except HFValidationError:
        return True
    return False


def from_hub(repo_id: str, revision: str | None = None, name: str | None = None) -> TemplateSource:
    label = f"{repo_id}@{revision}" if revision else repo_id
    wanted = list(HUB_FILES)
    if name and name != "default":
        wanted.append(f"additional_chat_templates/{name}.jinja")
    snapshot: Path | None = None
    unknown = []
    rev = revision
    for filename in wanted:
        got = _fetch(repo_id, filename, rev, label)
        if got == _UNKNOWN:
            unknown.append(filename)
        elif got != _ABSENT and snapshot is None:
            snapshot = Path(got).parents[filename.count("/")]
            if _COMMIT.fullmatch(snapshot.name):
                rev = snapshot.name  # pin the rest to the same commit (and skip their network calls once cached)
    if snapshot is None:
        if unknown:
            raise SourceError(_unreachable(), label)
        raise SourceError("has no chat template on the Hub (no chat_template.jinja, chat_template.json or tokenizer_config.json)", label)
    prefix = str(snapshot)
    shown = f"hf://{label}"

    def relabel(where: str | None) -> str:
        if not where or where == prefix:
            return label
        return shown + where[len(prefix):].replace(os.sep, "/") if where.startswith(prefix) else where

    try:
        src = load_dir(snapshot, name)
    except SourceError as e:
        raise SourceError(e.message, relabel(e.where)) from None
    return dataclasses.replace(src, where=relabel(src.where))


def _unreachable() -> str:
    from huggingface_hub import constants

    if constants.is_offline_mode():
        return "not in the local Hugging Face cache, and offline mode is on (HF_HUB_OFFLINE)"
    return f"cannot reach the Hub at {constants.ENDPOINT}, and not in the local Hugging Face cache"


def _fetch(repo_id: str, filename: str, revision: str | None, label: str) -> str:
    """The cached path of one repo file, ``_ABSENT`` or ``_UNKNOWN``; repo-level failures raise."""
    from huggingface_hub import hf_hub_download, try_to_load_from_cache
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        RemoteEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )
    from huggingface_hub.file_download import _CACHED_NO_EXIST

    def cached() -> str | None:
        hit = try_to_load_from_cache(repo_id, filename, revision=revision)
        return _ABSENT if hit is _CACHED_NO_EXIST else hit if isinstance(hit, str) else None

    if revision and _COMMIT.fullmatch(revision) and (hit := cached()):
        return hit
    try:
        return hf_hub_download(repo_id, filename, revision=revision)
    except GatedRepoError:
        raise SourceError("is a gated model: accept its conditions on the Hub and set HF_TOKEN", label) from None
    except RepositoryNotFoundError:
        raise SourceError("no such local path, and no such model on the Hub (a private model needs HF_TOKEN)", label) from None
    except RevisionNotFoundError:
        raise SourceError(f"revision {revision!r} not found on the Hub", label) from None
    except RemoteEntryNotFoundError:
        return _ABSENT
    except LocalEntryNotFoundError as e:
        cause = e.__cause__
        if isinstance(cause, HfHubHTTPError) and cause.response is not None and cause.response.status_code in (401, 403):
            raise SourceError(f"access denied by the Hub (HTTP {cause.response.status_code}): set HF_TOKEN to a token with access", label) from None
        return cached() or _UNKNOWN
    except HfHubHTTPError as e:
        status = e.response.status_code if e.response is not None else "?"
        if status in (401, 403):
            raise SourceError(f"access denied by the Hub (HTTP {status}): set HF_TOKEN to a token with access", label) from None
        raise SourceError(f"Hub error (HTTP {status}) while downloading {filename}", label) from None
    except (OSError, ValueError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise SourceError(f"cannot download {filename}: {first}", label) from None
