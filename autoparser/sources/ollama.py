"""``ollama:NAME[:TAG]``: a model Ollama has pulled, read from its store without Ollama running.

Ollama keeps a model as a manifest (``manifests/HOST/NAMESPACE/MODEL/TAG``, JSON naming its layers by digest)
and content-addressed blobs (``blobs/sha256-HEX``). The model layer is a GGUF file whose header holds the
chat template in Jinja (``tokenizer.chat_template``), the one the model was trained with; the template layer
beside it is Ollama's own rewrite in Go's template language, which no Jinja renderer reads. So the GGUF is read
(``gguf.load_gguf``). The store is ``$OLLAMA_MODELS``, else ``~/.ollama/models``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path

from ..errors import SourceError
from .gguf import load_gguf
from .template_source import TemplateSource

PREFIX = "ollama:"
REGISTRY = "registry.ollama.ai"  # a name without a host is the public library's
MODEL_LAYER = "application/vnd.ollama.image.model"
MAX_MANIFEST = 1 << 20
_DIGEST = re.compile(r"sha256[:-]([0-9a-f]{64})")


def store() -> Path:
    return Path(os.environ.get("OLLAMA_MODELS") or Path.home() / ".ollama" / "models").expanduser()


def manifest_path(name: str) -> Path:
    """Where Ollama keeps the manifest of ``name``: ``qwen3`` is ``registry.ollama.ai/library/qwen3/latest``,
    ``user/model:tag`` is in the user's namespace, ``hf.co/org/repo:Q4_K_M`` on that host."""
    model, _, tag = name.rpartition(":") if ":" in name and "/" not in name.rpartition(":")[2] else (name, "", "")
    parts = [p for p in model.split("/") if p]
    if not parts or any(p in (".", "..") for p in parts) or not re.fullmatch(r"[\w.\-]*", tag or "x"):
        raise SourceError("is not an Ollama model name (NAME, NAME:TAG, NAMESPACE/NAME:TAG or HOST/NAMESPACE/NAME:TAG)",
                          PREFIX + name)
    if len(parts) == 1:
        parts = [REGISTRY, "library", *parts]
    elif len(parts) == 2:
        parts = [REGISTRY, *parts]
    return store() / "manifests" / Path(*parts) / (tag or "latest")


def load_ollama(name: str, template_name: str | None = None) -> TemplateSource:
    where = PREFIX + name
    path = manifest_path(name)
    if not store().is_dir():
        raise SourceError(f"no Ollama model store at {store()} (set OLLAMA_MODELS to where Ollama keeps its models)", where)
    if not path.is_file():
        raise SourceError(f"not pulled: no manifest at {path} (ollama pull {name})", where)
    try:
        with path.open("rb") as f:
            data = f.read(MAX_MANIFEST + 1)
        if len(data) > MAX_MANIFEST:
            raise ValueError(f"over {MAX_MANIFEST} bytes")
        manifest = json.loads(data)
    except (OSError, ValueError) as e:  # JSON's errors and a bad encoding are ValueErrors too
        raise SourceError(f"cannot read its manifest {path}: {e}", where) from None
    layers = manifest.get("layers") if isinstance(manifest, dict) else None
    digests = [layer.get("digest") for layer in layers or [] if isinstance(layer, dict) and layer.get("mediaType") == MODEL_LAYER]
    found = _DIGEST.fullmatch(digests[0]) if digests and isinstance(digests[0], str) else None
    if found is None:
        raise SourceError(f"its manifest {path} names no model layer ({MODEL_LAYER})", where)
    blob = store() / "blobs" / f"sha256-{found[1]}"
    if not blob.is_file():
        raise SourceError(f"its model layer {blob} is missing (ollama pull {name} again)", where)
    return dataclasses.replace(load_gguf(blob, template_name), where=where)
