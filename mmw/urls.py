"""URL map. REST under /api/v1/, the admin under /admin/, health at /healthz."""

from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path
from django.utils.translation import gettext_lazy as _
from django.views.generic import RedirectView

from mmw.views import healthz

admin.site.site_header = _("MMW support")
admin.site.site_title = _("MMW support")
admin.site.index_title = _("Accounts, memories and billing")

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("favicon.ico", RedirectView.as_view(url=static("dashboard/favicon.svg"), permanent=True)),
    path("admin/", admin.site.urls),
    path("api/v1/", include("memories.api.urls")),
    path("api/v1/", include("transcripts.urls")),
    path("api/v1/", include("datarights.urls")),
    path("api/v1/", include("ledger.urls")),
    path("billing/", include("billing.urls")),
    path("accounts/", include("allauth.urls")),
    path("", include("dashboard.data_urls")),
    path("", include("dashboard.urls")),
]

# Exceptions outside DRF's views answer JSON on /api/ (see mmw.api_errors, mmw.boundary).
handler500 = "mmw.api_errors.server_error"
handler404 = "mmw.api_errors.not_found"
handler403 = "mmw.api_errors.permission_denied"
