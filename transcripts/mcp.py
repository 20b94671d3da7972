"""Uploaded sessions' MCP tools (docs/reference/search_sessions.md, forget_session.md): each hands
its raw arguments to the selector or service ``transcripts.api`` calls; registered with the one
``/mcp`` server (``interfaces.mcp``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from accounts.keys import Principal
from interfaces.mcp import ERASE, READ, ToolSpec, register
from transcripts import inputs as session_inputs
from transcripts import presenters as session_presenters
from transcripts import selectors as session_selectors
from transcripts import services as session_services

_SEARCH_SESSIONS = """\
Search past conversations (sessions uploaded by mmw-agent) for what was said but not stored as \
a record. Each hit is a turn with its session and the turns around it (the answer is often the \
next). Reference: mmw://docs/search_sessions"""

_FORGET_SESSION = """\
Forget one uploaded session and its turns (a soft delete, audited) when a person asks to \
remove a conversation; it cannot be uploaded again. Reference: mmw://docs/forget_session"""


def _search_sessions(
    principal: Principal, arguments: Any, headers: Mapping[str, str]
) -> session_presenters.SessionsFound:
    return session_selectors.session_search(principal=principal, payload=arguments)


def _forget_session(
    principal: Principal, arguments: Any, headers: Mapping[str, str]
) -> session_presenters.SessionForgotten:
    return session_services.session_forget(principal=principal, payload=arguments)


SESSION_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "search_sessions",
        "Search past sessions",
        session_inputs.SEARCH_SESSIONS,
        _SEARCH_SESSIONS,
        _search_sessions,
        READ,
        session_presenters.SessionsFound,
    ),
    ToolSpec(
        "forget_session",
        "Forget a session",
        session_inputs.FORGET_SESSION,
        _FORGET_SESSION,
        _forget_session,
        ERASE,
        session_presenters.SessionForgotten,
    ),
)
register("transcripts", *SESSION_TOOLS)
