from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class DatarightsConfig(AppConfig):
    """Export, import and deletion with retention (docs/data.md, docs/export-format.md)."""

    name = "datarights"
    verbose_name = _("Deletions and imports")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from accounts import refusals

        # A refused key of an account being deleted says so (accounts never import datarights).
        refusals.install(pending_deletion=_pending_deletion)


def _pending_deletion(account_id: int) -> bool:
    """Whether the account has an open deletion request."""
    from datarights.models import AccountDeletion

    return AccountDeletion.objects.filter(account_id=account_id, cancelled_at__isnull=True).exists()
