"""Uploaded sessions and their turns (docs/sessions.md), kept apart from memory records.

A ``Session`` is one conversation of one client (Claude Code, Codex, ...), uploaded by one person
(its author); its ``Turn`` rows keep their order by ``position`` and never change once written
(a replay with the same content is a no-op, other content a per-turn 409). ``forget_session``
only sets ``forgotten_at``.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from django.conf import settings
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from django.db.models import F, Func, Q, Value
from pgvector.django import VectorField

from accounts.models import Account, ApiKey, Project

if TYPE_CHECKING:
    from accounts.keys import Principal


class SessionQuerySet(models.QuerySet["Session"]):
    def live(self) -> SessionQuerySet:
        return self.filter(forgotten_at__isnull=True)

    def visible_to(self, principal: Principal) -> SessionQuerySet:
        """THE scoping rule for sessions: the caller's account and project, then
        its author's own sessions plus those shared with the project. An inactive membership
        (or one of another account) reads nothing; roles do not widen reading."""
        membership = principal.membership
        if not membership.is_active or membership.account_id != principal.account.pk:
            return self.none()
        rule = Q(author_id=principal.user.pk) | Q(shared_with_project=True)
        return self.filter(account_id=principal.account.pk, project_id=principal.project.pk).filter(rule)


class Session(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="sessions")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    api_key = models.ForeignKey(ApiKey, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    client = models.CharField(max_length=100)  # "claude-code", "codex", ...
    client_session_id = models.CharField(max_length=200)  # the client's own id
    title = models.CharField(max_length=1000, blank=True)
    working_directory = models.CharField(max_length=1000, blank=True)  # a label, never read by MMW
    device = models.CharField(max_length=200, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    shared_with_project = models.BooleanField(default=False)
    turn_count = models.PositiveIntegerField(default=0)  # kept by the turn service, for listings

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    forgotten_at = models.DateTimeField(null=True, blank=True)
    forgotten_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    objects = SessionQuerySet.as_manager()

    class Meta:
        constraints = [
            # One session per (author, client, client id) in a project: another member's upload of
            # the same id is their own session and never reveals this one.
            models.UniqueConstraint(
                fields=["project", "author", "client", "client_session_id"], name="session_unique_per_author"
            ),
        ]
        indexes = [
            models.Index(fields=["project", "author", "-started_at"], name="session_project_author"),
            models.Index(fields=["project", "client", "client_session_id"], name="session_client_id"),
        ]

    def __str__(self) -> str:
        return f"{self.client}/{self.client_session_id}"


class Turn(models.Model):
    """One turn of a session. ``content`` is stored after Memory Guard (secrets redacted); a turn
    the Guard refuses is stored as a stub (``is_stub``, ``stub_reason``) so positions stay whole.

    ``content_hash`` is the SHA-256 of the turn *as sent* (role and content), so a replay is
    recognised whatever the Guard did to it. ``context_document`` holds the previous turn's words
    (contextual indexing, docs/sessions.md); ``embedding`` is filled in background batches."""

    id = models.BigAutoField(primary_key=True)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="turns")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    position = models.PositiveIntegerField()
    role = models.CharField(max_length=50)
    occurred_at = models.DateTimeField()
    content = models.TextField()
    content_hash = models.CharField(max_length=64)
    is_stub = models.BooleanField(default=False)
    stub_reason = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    search_document = models.GeneratedField(
        expression=Func(F("content"), Value(""), function="mmw_search_document", output_field=SearchVectorField()),
        output_field=SearchVectorField(),
        db_persist=True,
    )
    context_document = SearchVectorField(null=True, blank=True)
    embedding = VectorField(null=True, blank=True)
    embedding_model = models.CharField(max_length=100, null=True, blank=True)  # noqa: DJ001 - NULL: not embedded

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["session", "position"], name="turn_position_unique"),
        ]
        indexes = [
            GinIndex(fields=["search_document"], name="turn_search_document_gin"),
            GinIndex(fields=["context_document"], name="turn_context_document_gin"),
            models.Index(fields=["project", "occurred_at"], name="turn_project_occurred"),
            models.Index(fields=["session"], name="turn_unembedded", condition=Q(embedding_model__isnull=True)),
            models.Index(  # a project's turns still waiting for their vector (transcripts.selectors.pending_turns)
                fields=["project"],
                name="turn_project_unembedded",
                condition=Q(embedding_model__isnull=True, is_stub=False),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.session_id}#{self.position}"
