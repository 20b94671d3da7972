"""REST routes of uploaded sessions (docs/reference/sessions.md), under /api/v1/."""

from django.urls import re_path

from transcripts import api

urlpatterns = [
    re_path(r"^sessions/?$", api.SessionListView.as_view(), name="sessions"),
    re_path(r"^sessions/search/?$", api.SessionSearchView.as_view(), name="sessions-search"),
    re_path(
        r"^sessions/(?P<client>[^/]+)/(?P<session_id>[^/]+)/turns/?$",
        api.SessionTurnsView.as_view(),
        name="session-turns",
    ),
    re_path(r"^sessions/(?P<client>[^/]+)/(?P<session_id>[^/]+)/?$", api.SessionDetailView.as_view(), name="session"),
]
