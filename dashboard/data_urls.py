"""The dashboard's "Data and deletion" pages (mounted at the site root, beside the dashboard's)."""

from django.urls import path

from dashboard.views import data as views

app_name = "datarights"

urlpatterns = [
    path("data/", views.data_home, name="home"),
    path("data/deletions/<int:deletion_id>/cancel", views.deletion_cancel, name="deletion-cancel"),
    path("data/delete-my-user", views.user_delete, name="user-delete"),
    path("a/<str:tenant_id>/data/", views.account_data, name="account"),
    path("a/<str:tenant_id>/data/export", views.account_export, name="export"),
    path("p/<uuid:project_id>/webhooks/", views.project_webhooks, name="webhooks"),
    path("p/<uuid:project_id>/import/", views.project_import, name="import"),
    path("p/<uuid:project_id>/import/<uuid:job_id>", views.import_job_status, name="import-job"),
    path("p/<uuid:project_id>/import/from-service", views.project_import_from, name="import-from"),
]
