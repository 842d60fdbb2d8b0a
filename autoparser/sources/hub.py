"""Resolve a SOURCE argument: a local path, else a Hub model id.

For a Hub id only the few small files that hold the chat template and the special tokens are fetched,
through ``hf_hub_download``: they land in the ordinary HF cache, and ``HF_TOKEN``, ``HF_ENDPOINT`` and
``HF_HUB_OFFLINE`` work as everywhere else. The downloaded files sit in one snapshot folder, which is then
read by the same code as a local model directory, so the precedence is the local one (and transformers'):
``additional_chat_templates/NAME.jinja`` for a named template, else ``chat_template.jinja``, else
``chat_template.json``, else ``tokenizer_config.json``; with no name, a ``tool_use`` template (a file or a
config entry) is chosen, the default beside it (``template_source.TOOLS_TEMPLATE``). Every Hub failure becomes one
``SourceError`` naming the model.

A Hub that cannot be reached costs seconds, not minutes: huggingface_hub retries a file it has no copy
of for about a minute, per file, and waits 10 s per file for a Hub that accepts connections but never
answers. So the Hub is first asked once, with no retries and a short bound (``CACHED_WAIT`` when the cache
holds the model, ``HUB_WAIT`` when it does not), which commit is current. No answer: a cached model is read
from the cache (with a note saying so), an uncached one is one line saying what to do; and the same Hub is
not asked again for ``REMEMBER`` seconds (a batch of many models waits once).
"""

from __future__ import annotations

import dataclasses
import os
import re
import threading
import time
from pathlib import Path

from ..errors import SourceError
from . import gguf_cache, ollama
from .gguf import REMOTE_BLOCK, gguf_choice, read_metadata, source_from_metadata
from .local import load_dir, load_path
from .template_source import TOOLS_TEMPLATE, NoTemplate, TemplateSource

HUB_FILES = ("tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja", "chat_template.json",
             "generation_config.json")  # the last for the tokens the model stops on (``template_source.STOP_TOKENS``)
_COMMIT = re.compile(r"[0-9a-f]{40}")
_LOCAL_SUFFIXES = (".jinja", ".j2", ".json", ".txt", ".gguf")
_ABSENT = "absent"  # the repo does not have the file
_UNKNOWN = "unknown"  # offline or unreachable, and the cache does not know


def resolve(source: str, revision: str | None = None, name: str | None = None) -> TemplateSource:
    """A local file or directory if ``source`` exists, a model Ollama pulled (``ollama:NAME``), else a Hub model id."""
    if source.startswith(ollama.PREFIX) and not Path(source).exists():
        if revision:
            raise SourceError("--revision names a Hub revision; an Ollama model is named by its tag (ollama:NAME:TAG)", source)
        return ollama.load_ollama(source[len(ollama.PREFIX):], name)
    if Path(source).exists():
        return load_path(source, name)
    if (ref := _reference(source, revision)) is not None:
        repo_id, revision, file, quant = ref
        if file or quant:
            commit, why = _reachable(repo_id, revision, source)
            return _from_gguf(repo_id, revision, name, source, file=file, quant=quant, commit=commit, unreachable=why)
        return from_hub(repo_id, revision, name)
    if _looks_local(source):
        raise SourceError("no such file or directory", source)
    return from_hub(source, revision, name)


# llama.cpp's ``-hf ORG/NAME:Q4_K_M``; Ollama's ``hf.co/ORG/NAME:Q4_K_M`` (the tag optional there)
_QUANT = re.compile(r"(?:(?:hf\.co|huggingface\.co)/)?(?P<repo>[\w.\-]+/[\w.\-]+):(?P<quant>[\w.\-]+)"
                    r"|(?:hf\.co|huggingface\.co)/(?P<bare>[\w.\-]+/[\w.\-]+)")
_URL = re.compile(r"https?://(?P<host>[^/?#]+)/(?P<path>[^?#]*)(?:[?#].*)?")
_HUB_HOSTS = ("huggingface.co", "www.huggingface.co", "hf.co")


def _reference(source: str, revision: str | None) -> tuple[str, str | None, str | None, str | None] | None:
    """What a Hub URL or a quantisation-tagged id names: (repo id, revision, a GGUF file, a quantisation); None
    for anything else. A page's URL names its repo (``/ORG/NAME``), a revision (``/tree/REV``) or a file
    (``/blob/REV/PATH``, ``/resolve/REV/PATH``); only a GGUF file is read as itself, any other names its repo."""
    from urllib.parse import unquote, urlsplit

    if m := _QUANT.fullmatch(source):
        return m["repo"] or m["bare"], revision, None, m["quant"]
    m = _URL.fullmatch(source)
    if m is None:
        return None
    from huggingface_hub import constants

    if m["host"].lower() not in (*_HUB_HOSTS, urlsplit(constants.ENDPOINT).netloc.lower()):
        raise SourceError(f"is not a Hugging Face Hub URL (host {m['host']}); give a model id, a Hub URL or a local path", source)
    parts = [unquote(p) for p in m["path"].split("/") if p]
    if parts[:1] in (["datasets"], ["spaces"]):
        raise SourceError(f"is a {parts[0][:-1]}'s URL, not a model's", source)
    if len(parts) < 2 or (len(parts) > 2 and (parts[2] not in ("tree", "blob", "resolve") or len(parts) < 4)):
        raise SourceError("is not a model's Hub URL (https://huggingface.co/ORG/NAME[/tree/REV | /blob/REV/FILE])", source)
    asked = parts[3] if len(parts) > 3 else None
    if asked and revision and asked != revision:
        raise SourceError(f"names revision {asked!r}, and --revision {revision!r}", source)
    file = "/".join(parts[4:]) if parts[2:3] in (["blob"], ["resolve"]) else ""
    return f"{parts[0]}/{parts[1]}", asked or revision, file if file.lower().endswith(".gguf") else None, None


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


CACHED_WAIT = 1.0  # seconds the Hub gets to name its current commit when the cache can answer without it
HUB_WAIT = 5.0  # ... when nothing else can answer


def from_hub(repo_id: str, revision: str | None = None, name: str | None = None) -> TemplateSource:
    label = f"{repo_id}@{revision}" if revision else repo_id
    wanted = list(HUB_FILES)
    if name and name != "default":
        wanted.append(f"additional_chat_templates/{name}.jinja")
    elif name is None:  # the template transformers renders requests with tools with, chosen where no name is asked
        wanted.append(f"additional_chat_templates/{TOOLS_TEMPLATE}.jinja")
    files, notes, commit, why = _files(repo_id, wanted, revision, label)
    snapshot = next((Path(got).parents[f.count("/")] for f, got in files.items() if got not in (_ABSENT, _UNKNOWN)), None)
    if snapshot is None:
        if _UNKNOWN in files.values():
            raise SourceError(_unreachable(), label)
        return _from_gguf(repo_id, revision, name, label, commit=commit, unreachable=why)
    prefix = str(snapshot)
    shown = f"hf://{label}"

    def relabel(where: str | None) -> str:
        if not where or where == prefix:
            return label
        return shown + where[len(prefix):].replace(os.sep, "/") if where.startswith(prefix) else where

    try:
        src = load_dir(snapshot, name)
    except NoTemplate as e:  # a config without a template beside the GGUF files that hold it
        try:
            return _from_gguf(repo_id, revision, name, label, commit=commit, unreachable=why)
        except NoTemplate:
            raise SourceError(e.message, relabel(e.where)) from None
    except SourceError as e:
        raise SourceError(e.message, relabel(e.where)) from None
    return dataclasses.replace(src, where=relabel(src.where), notes=tuple(notes))


def _files(repo_id: str, wanted: list[str], revision: str | None,
           label: str) -> tuple[dict[str, str], list[str], str | None, str | None]:
    """Each wanted file's cached path, ``_ABSENT`` or ``_UNKNOWN``; notes for the user; the commit the Hub named
    (None where it was not asked or named none); why the Hub gave no answer, where the cache knows the repo has
    none of the files (a GGUF repo, which ``_from_gguf`` may read from its own cache)."""
    from huggingface_hub import constants

    cached = {f: _cached(repo_id, f, revision or "main") for f in wanted}
    if constants.is_offline_mode() or (revision and _COMMIT.fullmatch(revision) and None not in cached.values()):
        return {f: got or _UNKNOWN for f, got in cached.items()}, [], None, None  # nothing to ask the Hub
    copy = next((Path(got).parents[f.count("/")] for f, got in cached.items() if got not in (None, _ABSENT)), None)
    try:
        commit = _asked(repo_id, revision, label, _wait(cached=copy is not None))
    except _Unreachable as e:
        if copy is None and set(cached.values()) == {_ABSENT}:
            return cached, [], None, str(e)
        if copy is None:
            raise SourceError(_unreachable(str(e)), label) from None
        note = (f"the Hub did not answer ({e}): using the cached copy (commit {copy.name[:7]}); "
                "HF_HUB_OFFLINE=1 skips asking")
        return {f: got or _UNKNOWN for f, got in cached.items()}, [note], None, None
    if copy is not None and commit == copy.name and None not in cached.values():
        return cached, [], commit, None  # the cache is current: no file needs the network
    files: dict[str, str] = {}
    rev = revision
    for f in wanted:
        got = files[f] = _fetch(repo_id, f, rev, label)
        if got not in (_ABSENT, _UNKNOWN) and not (rev and _COMMIT.fullmatch(rev)):
            snapshot = Path(got).parents[f.count("/")]
            if _COMMIT.fullmatch(snapshot.name):
                rev = snapshot.name  # pin the rest to the same commit (and skip their network calls once cached)
    return files, [], commit, None


def _reachable(repo_id: str, revision: str | None, label: str) -> tuple[str | None, str | None]:
    """(the commit the Hub names, why it gave no answer): the Hub asked once, as ``_files`` asks it, before a GGUF
    is listed and read (huggingface_hub would retry an unreachable Hub for half a minute, printing each retry);
    offline it is not asked, and ``_from_gguf`` says so itself."""
    from huggingface_hub import constants

    if constants.is_offline_mode():
        return None, None
    try:
        return _asked(repo_id, revision, label, _wait(cached=False)), None
    except _Unreachable as e:
        return None, str(e)


def _wait(cached: bool) -> float:
    """How long the Hub gets: ``HF_HUB_ETAG_TIMEOUT`` when the user set it (huggingface_hub's own knob for
    this question), else ``CACHED_WAIT`` or ``HUB_WAIT``."""
    from huggingface_hub import constants

    if constants.HF_HUB_ETAG_TIMEOUT != constants.DEFAULT_ETAG_TIMEOUT:
        return float(constants.HF_HUB_ETAG_TIMEOUT)
    return CACHED_WAIT if cached else HUB_WAIT


class _Unreachable(Exception):
    """The Hub gave no usable answer in time (the message says what happened)."""


REMEMBER = 60.0  # seconds a Hub that gave no answer is not asked again (a batch of many models waits once)
_silent: dict[str, tuple[float, float, str]] = {}  # endpoint -> (when it gave no answer, how long it had, what happened)


def _asked(repo_id: str, revision: str | None, label: str, wait: float) -> str | None:
    """``_current_commit``, unless the same endpoint gave no answer in the last ``REMEMBER`` seconds with at
    least as long to answer (no answer in CACHED_WAIT does not settle whether it answers in HUB_WAIT)."""
    from huggingface_hub import constants

    endpoint = constants.ENDPOINT
    when, had, why = _silent.get(endpoint, (None, 0.0, ""))
    if when is not None and time.monotonic() - when < REMEMBER and had >= wait:
        raise _Unreachable(why)
    try:
        return _current_commit(repo_id, revision, label, wait)
    except _Unreachable as e:
        _silent[endpoint] = (time.monotonic(), wait, str(e))
        raise


def cached_file(repo_id: str, filename: str) -> Path | None:
    """A file of a Hub model already in the HF cache (main), asking nothing of the network; None otherwise."""
    got = _cached(repo_id, filename, "main")
    return Path(got) if got not in (None, _ABSENT) else None


def _cached(repo_id: str, filename: str, revision: str) -> str | None:
    """The cached path of a file, ``_ABSENT`` when the cache knows the repo lacks it, None when it does not know."""
    from huggingface_hub import try_to_load_from_cache
    from huggingface_hub.file_download import _CACHED_NO_EXIST

    try:
        hit = try_to_load_from_cache(repo_id, filename, revision=revision)
    except (OSError, ValueError):
        return None
    return _ABSENT if hit is _CACHED_NO_EXIST else hit if isinstance(hit, str) else None


def _current_commit(repo_id: str, revision: str | None, label: str, wait: float) -> str | None:
    """The commit ``revision`` (default main) names on the Hub now, asked once (one HEAD, no retries) and
    given ``wait`` seconds in all, name resolution included (which no HTTP timeout bounds, hence the thread).
    None when the Hub answered without one. Repo-level refusals raise SourceError; no answer raises _Unreachable."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_url
    from huggingface_hub.errors import HfHubHTTPError, RemoteEntryNotFoundError

    url = hf_hub_url(repo_id, HUB_FILES[0], revision=revision)
    box: dict = {}

    def ask() -> None:
        try:
            box["meta"] = get_hf_file_metadata(url, timeout=wait)
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
            box["error"] = e

    asking = threading.Thread(target=ask, daemon=True, name="autoparser-hub")
    asking.start()
    asking.join(wait)
    if asking.is_alive():
        raise _Unreachable(f"no answer within {wait:g} s")
    e = box.get("error")
    if e is None:
        return box["meta"].commit_hash
    refusal = _refusal(e, revision, label)
    if refusal is not None:
        raise refusal from None
    if isinstance(e, RemoteEntryNotFoundError):  # the repo has no tokenizer_config.json; the answer still names the commit
        return e.response.headers.get("X-Repo-Commit") if e.response is not None else None
    if isinstance(e, HfHubHTTPError):
        raise _Unreachable(f"HTTP {e.response.status_code}" if e.response is not None else _first_line(e))
    if isinstance(e, TimeoutError) or any("Timeout" in c.__name__ for c in type(e).__mro__):
        # the HTTP library's own timeout (httpx's ReadTimeout) can fire a moment before the thread's: the same fact
        raise _Unreachable(f"no answer within {wait:g} s")
    if isinstance(e, Exception):  # connection refused, timed out, no such host: each HTTP library spells these its own way
        raise _Unreachable(_first_line(e))
    raise e


def _refusal(e: BaseException, revision: str | None, label: str) -> SourceError | None:
    """The Hub's no to this repo or revision (missing, gated, no access) as one SourceError; None for anything else."""
    from huggingface_hub.errors import GatedRepoError, HfHubHTTPError, RepositoryNotFoundError, RevisionNotFoundError

    if isinstance(e, GatedRepoError):
        return SourceError("is a gated model: accept its conditions on the Hub and set HF_TOKEN", label)
    if isinstance(e, RepositoryNotFoundError):
        return SourceError("no such local path, and no such model on the Hub (a private model needs HF_TOKEN)", label)
    if isinstance(e, RevisionNotFoundError):
        return SourceError(f"revision {revision!r} not found on the Hub", label)
    status = e.response.status_code if isinstance(e, HfHubHTTPError) and e.response is not None else None
    if status in (401, 403):
        return SourceError(f"access denied by the Hub (HTTP {status}): set HF_TOKEN to a token with access", label)
    return None


def _hub_error(e, revision: str | None, label: str, doing: str) -> SourceError:
    """The Hub's refusal of the repo or revision (``_refusal``), else its HTTP error while ``doing``."""
    refusal = _refusal(e, revision, label)
    if refusal is not None:
        return refusal
    status = e.response.status_code if e.response is not None else "?"
    return SourceError(f"Hub error (HTTP {status}) while {doing}", label)


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0]}" if text else type(e).__name__


def _unreachable(why: str | None = None) -> str:
    from huggingface_hub import constants

    if constants.is_offline_mode():
        return "not in the local Hugging Face cache, and offline mode is on (HF_HUB_OFFLINE)"
    return (f"cannot reach the Hub at {constants.ENDPOINT}" + (f" ({why})" if why else "") + ", and not in the local Hugging "
            "Face cache: fetch it once where the Hub is reachable (later runs can set HF_HUB_OFFLINE=1), or give a local model directory")


def _fetch(repo_id: str, filename: str, revision: str | None, label: str) -> str:
    """The cached path of one repo file, ``_ABSENT`` or ``_UNKNOWN``; repo-level failures raise. Called once
    the Hub has answered ``_current_commit``, so its waits are bounded by ``HUB_WAIT``."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError, RemoteEntryNotFoundError

    if revision and _COMMIT.fullmatch(revision) and (hit := _cached(repo_id, filename, revision)):
        return hit
    try:
        return hf_hub_download(repo_id, filename, revision=revision, etag_timeout=HUB_WAIT)
    except RemoteEntryNotFoundError:
        return _ABSENT
    except LocalEntryNotFoundError as e:
        refusal = _refusal(e.__cause__, revision, label) if e.__cause__ is not None else None
        if refusal is not None:
            raise refusal from None
        return _cached(repo_id, filename, revision or "main") or _UNKNOWN
    except HfHubHTTPError as e:
        raise _hub_error(e, revision, label, f"downloading {filename}") from None
    except (OSError, ValueError) as e:
        raise SourceError(f"cannot download {filename}: {_first_line(e)}", label) from None


GGUF_READ = 30.0  # seconds one byte-range read of a GGUF header may take


def _from_gguf(repo_id: str, revision: str | None, name: str | None, label: str, *, file: str | None = None,
               quant: str | None = None, commit: str | None = None, unreachable: str | None = None) -> TemplateSource:
    """A repo of GGUF files only (a llama.cpp quantisation): the chat template is read from the header of one
    of them by byte ranges (a few MB of a file of many GB; ``gguf.read_metadata``): ``file``, else one whose
    name holds ``quant``, else any (they hold the same template). What it says is kept (``gguf_cache``): read
    again while the Hub names the same ``commit``, and where the Hub is offline or gave no answer (``unreachable``)."""
    from huggingface_hub import HfApi, constants, hf_hub_url
    from huggingface_hub.errors import HfHubHTTPError

    kept = gguf_cache.recall(repo_id, revision, file, quant)
    offline = constants.is_offline_mode()
    if kept is not None:
        read_at, chosen, meta = kept
        pinned = bool(revision and _COMMIT.fullmatch(revision))  # a commit's files never change
        if (commit is not None and commit == read_at) or (pinned and read_at == revision):
            return source_from_metadata(meta, _gguf_where(repo_id, revision, chosen), name)
        if offline or unreachable is not None:
            why = "offline mode is on (HF_HUB_OFFLINE)" if offline else f"the Hub did not answer ({unreachable})"
            at = f" at commit {read_at[:7]}" if read_at else ""
            src = source_from_metadata(meta, _gguf_where(repo_id, revision, chosen), name)
            return dataclasses.replace(src, notes=(f"{why}: using the GGUF header read from the Hub before{at}",))
    if offline:
        raise SourceError("has no chat template in the local Hugging Face cache, and offline mode is on (HF_HUB_OFFLINE): "
                          "a GGUF repo is read once where the Hub is reachable; or point at a downloaded .gguf file", label)
    if unreachable is not None:
        raise SourceError(_unreachable(unreachable), label)
    try:
        names = [file] if file else HfApi().list_repo_files(repo_id, revision=revision)
    except HfHubHTTPError as e:
        raise _hub_error(e, revision, label, "listing the model's files") from None
    except (OSError, ValueError) as e:
        raise SourceError(f"cannot list the model's files: {_first_line(e)}", label) from None
    if quant:
        word = re.compile(rf"(?<![a-z0-9]){re.escape(quant)}(?![a-z0-9])", re.IGNORECASE)  # Q4_K_M, not IQ4_K_M
        tagged = [n for n in names if word.search(Path(n).name)]
        if not tagged and gguf_choice(names):
            have = sorted(Path(n).name for n in names if n.lower().endswith(".gguf"))
            raise SourceError(f"has no .gguf file named for {quant!r} (has {', '.join(have[:8])}{', …' if len(have) > 8 else ''})", label)
        names = tagged
    chosen = file or gguf_choice(names)
    if chosen is None:
        raise NoTemplate("has no chat template on the Hub (no chat_template.jinja, chat_template.json, "
                         "tokenizer_config.json or .gguf file)", label)
    where = _gguf_where(repo_id, revision, chosen)
    meta = read_metadata(_ranges(hf_hub_url(repo_id, chosen, revision=revision), where), where, REMOTE_BLOCK)
    src = source_from_metadata(meta, where, name)  # (a header with no template is not kept: it raised)
    gguf_cache.keep(repo_id, revision, file, quant, commit, chosen, meta)
    return src


def _gguf_where(repo_id: str, revision: str | None, chosen: str) -> str:
    return f"hf://{repo_id}{'@' + revision if revision else ''}/{chosen}"


def _ranges(url: str, where: str):
    """``fetch(offset, size)`` over HTTP byte ranges of ``url``. A server that ignores the range (200, the whole
    file) is read only as far as the range's end, then dropped."""
    from huggingface_hub.errors import HfHubHTTPError
    from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status

    headers = build_hf_headers()

    def fetch(offset: int, size: int) -> bytes:
        try:
            with get_session().stream("GET", url, headers={**headers, "Range": f"bytes={offset}-{offset + size - 1}"},
                                      timeout=GGUF_READ) as r:
                if r.status_code == 416:  # the range starts past the file's end
                    return b""
                hf_raise_for_status(r)
                skip = offset if r.status_code == 200 else 0
                data = bytearray()
                for chunk in r.iter_bytes():
                    data += chunk
                    if len(data) >= skip + size:
                        break
                return bytes(data[skip:skip + size])
        except HfHubHTTPError as e:
            raise _hub_error(e, None, where, "reading the GGUF header") from None
        except Exception as e:  # noqa: BLE001 - the HTTP library's connection and timeout errors, each its own class
            raise SourceError(f"cannot read the GGUF header: {_first_line(e)}", where) from None

    return fetch
