"""The reference pages as MCP resources: ``mmw://docs/<page>``.

Each tool's description names its reference page, ``mmw://docs/<tool>`` (docs/reference/<tool>.md,
Markdown, the same text ``/docs/<tool>.md`` serves): every parameter, bound, answer field and error
is there rather than in the tool list every session reads (``interfaces.mcp_server.budget``). The
pages are public (``/docs/`` needs no key), so reading one needs no scope; they are advertised by a
resource template, not listed among the caller's resources.
"""

from __future__ import annotations

from mcp_types import ResourceTemplate

from interfaces import reference
from mmw.errors import NotFound

DOCS_PREFIX = "mmw://docs/"
DOCS_MIME_TYPE = "text/markdown"
DOCS_TEMPLATE = ResourceTemplate(
    uri_template=DOCS_PREFIX + "{page}",
    name="reference",
    title="An MMW reference page",
    description="Markdown: a tool's name (its parameters, bounds, answer and errors), errors, rest, or README.",
    mime_type=DOCS_MIME_TYPE,
)


def is_doc(resource_uri: str) -> bool:
    return resource_uri.startswith(DOCS_PREFIX)


def read_doc(resource_uri: str) -> str:
    """The reference page at ``resource_uri`` (Markdown; ``NotFound`` for any other name)."""
    text = reference.pages().get(resource_uri[len(DOCS_PREFIX) :]) if is_doc(resource_uri) else None
    if text is None:
        raise NotFound("reference page not found")
    return text
