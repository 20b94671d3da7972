"""Memory Guard: screens every text field of every write (docs/guard.md).

Pure Python, no Django.  ``screen_text``/``screen_fields`` refuse poisoning (raise
:class:`GuardRejection` with a short named reason) and redact secrets as
``[REDACTED:<rule_id>:<first 8 hex of sha256(secret)>]``.  The rules are one table,
:data:`RULES`.  Behaviour, limits and benchmark figures: ``docs/guard.md``.
"""

from memories.guard.rules import RULES
from memories.guard.screen import screen_fields, screen_text
from memories.guard.types import GuardRejection, Redaction, Rule, ScreenResult

__all__ = ["RULES", "GuardRejection", "Redaction", "Rule", "ScreenResult", "screen_fields", "screen_text"]
