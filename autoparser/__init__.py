"""autoparser: infer a transformers ``response_template`` from a model's own chat template."""

from .pipeline import Result, analyze, infer, infer_result, template_hash
from .grammar import grammar
from .errors import AnalysisError, AutoparserError, SourceError, TemplateError, VerificationError, WorkaroundError
from .hook import attach, disable, enable

__all__ = ["infer", "grammar", "infer_result", "analyze", "Result", "template_hash", "AutoparserError", "AnalysisError", "SourceError", "TemplateError", "VerificationError", "WorkaroundError", "attach", "enable", "disable"]
