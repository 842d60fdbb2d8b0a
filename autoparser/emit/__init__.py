"""Stage 3: the analysis as a response_template; the only package that knows that format
(``template``: the message fields; ``tools``: tool-call fields; ``families``: headed replies)."""

from .template import emit

__all__ = ["emit"]
