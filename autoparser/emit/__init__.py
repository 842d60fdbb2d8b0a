"""Stage 3: the analysis as a response_template; the only package that knows that format
(``template``: the message fields; ``tools``: tool-call fields; ``families``: headed replies)."""

from .template import emit, library, served

__all__ = ["emit", "library", "served"]
