from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class WebhooksConfig(AppConfig):
    """A project's webhook endpoints, the events found for them and their deliveries
    (docs/reference/webhooks.md)."""

    name = "webhooks"
    verbose_name = _("Webhooks")
    default_auto_field = "django.db.models.BigAutoField"
