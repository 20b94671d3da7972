from django.urls import re_path

from datarights import api

urlpatterns = [
    re_path(r"^export/?$", api.ExportView.as_view(), name="export"),
    re_path(r"^import/?$", api.ImportView.as_view(), name="import"),
    re_path(r"^import/(?P<job_id>[^/]{1,100})/?$", api.ImportJobView.as_view(), name="import-job"),
]
