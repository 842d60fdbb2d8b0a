"""One exception family, so callers (CLI, batch, hook) can turn any failure into one line."""


def without_frames(e: BaseException) -> BaseException:
    """``e`` fit to be kept and raised again: without its traceback and the exceptions it replaced, which
    hold the failed call's frames (a render's context, macros, closures; a parser's state) for as long as
    it is kept, promote them to the garbage collector's oldest generation, and grow at each re-raise.
    Callers read only its message (and type)."""
    e.__traceback__ = e.__context__ = e.__cause__ = None
    return e


class AutoparserError(Exception):
    """Base error. ``where`` names the file, model or template the problem is in."""

    def __init__(self, message: str, where: str | None = None):
        super().__init__(message)
        self.message = message
        self.where = where

    def __str__(self) -> str:
        return f"{self.where}: {self.message}" if self.where else self.message


class SourceError(AutoparserError):
    """The input could not be read as a chat template (missing, not UTF-8, wrong shape...)."""


class TemplateError(AutoparserError):
    """The chat template cannot be compiled or rendered within bounds."""


class AnalysisError(AutoparserError):
    """The renderings do not reveal an assistant turn to analyse."""


class WorkaroundError(AutoparserError):
    """A workarounds file is malformed."""


class VerificationError(AnalysisError):
    """No response_template inferred from the template round-trips, not even content alone. ``verdict``
    says which fields failed and the first diverging case (``autoparser.verdict``)."""

    def __init__(self, message: str, where: str | None = None, verdict: dict | None = None):
        super().__init__(message, where)
        self.verdict = verdict
