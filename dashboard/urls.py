"""Dashboard URLs, mounted at the site root (allauth's pages are under /accounts/)."""

from django.urls import path

from dashboard.views import account, connections, docs, ledger, org, project, sessions

app_name = "dashboard"

urlpatterns = [
    path("", account.home, name="home"),
    path("language", account.language, name="language"),
    path("docs/", docs.docs_page, name="docs"),
    path("docs/<slug:name>.md", docs.docs_markdown, name="docs-markdown"),
    path("docs/<slug:name>", docs.docs_page, name="docs-page"),
    path("llms.txt", docs.llms_txt, name="llms-txt"),
    path("oauth/consent/<str:public_id>", connections.consent, name="oauth-consent"),
    path("connected-apps/", connections.connected_apps, name="connected-apps"),
    path("connected-apps/<int:grant_id>/revoke", connections.connected_app_revoke, name="connected-app-revoke"),
    path("organizations/new", account.organization_create, name="organization-create"),
    path("sign-in/<str:token>/", account.sign_in_link, name="sign-in-link"),
    path("invitations/accept/", org.invitation_accept, name="invitation-accept"),
    path("a/<str:tenant_id>/", account.projects, name="projects"),
    path("a/<str:tenant_id>/usage/", account.usage, name="usage"),
    path("a/<str:tenant_id>/billing/", account.billing, name="billing"),
    path("a/<str:tenant_id>/members/", org.members, name="members"),
    path("a/<str:tenant_id>/members/<int:membership_id>", org.member_action, name="member-action"),
    path("a/<str:tenant_id>/invitations/<int:invitation_id>/revoke", org.invitation_revoke, name="invitation-revoke"),
    path("a/<str:tenant_id>/departments/", org.departments, name="departments"),
    path("a/<str:tenant_id>/invitations/<int:invitation_id>/resend", org.invitation_resend, name="invitation-resend"),
    path("a/<str:tenant_id>/audit/", org.audit, name="audit"),
    path("a/<str:tenant_id>/audit.csv", org.audit_csv, name="audit-csv"),
    path("a/<str:tenant_id>/settings/", org.organization_settings, name="organization-settings"),
    path("p/<uuid:project_id>/", project.memories, name="memories"),
    path("p/<uuid:project_id>/export.<str:fmt>", project.memories_export, name="memories-export"),
    path("p/<uuid:project_id>/memories/<uuid:memory_id>/", project.memory_detail, name="memory"),
    path("p/<uuid:project_id>/memories/<uuid:memory_id>/forget", project.memory_forget_view, name="memory-forget"),
    path("p/<uuid:project_id>/memories/<uuid:memory_id>/keep", project.memory_keep_view, name="memory-keep"),
    path("p/<uuid:project_id>/forget-source/", project.forget_source, name="forget-source"),
    path("p/<uuid:project_id>/forget-selected", project.memory_forget_selected, name="forget-selected"),
    path("p/<uuid:project_id>/sessions/", sessions.sessions, name="sessions"),
    path("p/<uuid:project_id>/sessions/<uuid:session_pk>/", sessions.session_detail, name="session"),
    path("p/<uuid:project_id>/sessions/<uuid:session_pk>/share", sessions.session_share_view, name="session-share"),
    path("p/<uuid:project_id>/sessions/<uuid:session_pk>/forget", sessions.session_forget_view, name="session-forget"),
    path("p/<uuid:project_id>/ledger/", ledger.ledger, name="ledger"),
    path("p/<uuid:project_id>/ledger/export.csv", ledger.ledger_export, name="ledger-export"),
    path("p/<uuid:project_id>/ledger/<uuid:entry_id>/complete", ledger.ledger_complete_view, name="ledger-complete"),
    path("p/<uuid:project_id>/ledger/<uuid:entry_id>/reverse", ledger.ledger_reverse_view, name="ledger-reverse"),
    path("p/<uuid:project_id>/workspaces/", project.workspaces, name="workspaces"),
    path(
        "p/<uuid:project_id>/workspaces/<uuid:workspace_id>/delete", project.workspace_delete, name="workspace-delete"
    ),
    path("p/<uuid:project_id>/keys/", project.keys, name="keys"),
    path("p/<uuid:project_id>/keys/<int:key_id>/revoke", project.key_revoke, name="key-revoke"),
    path("p/<uuid:project_id>/keys/<int:key_id>/first-call", project.key_first_call, name="key-first-call"),
    path("p/<uuid:project_id>/settings/", project.settings_view, name="settings"),
]
