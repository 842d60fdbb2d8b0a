"""Stage 4: round-trip an emitted template on the template's own renderings (``roundtrip``) and settle
what is handed out (``verdict``: full, degraded to the fields that verify, or refused)."""

from .roundtrip import VERIFY_TOOLS, Report, template_fields, verify

__all__ = ["VERIFY_TOOLS", "Report", "template_fields", "verify"]
