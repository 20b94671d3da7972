from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    """A project's webhook endpoints, the events found for them and their deliveries
    (docs/reference/webhooks.md)."""

    name = "webhooks"
    verbose_name = "Webhooks"
    default_auto_field = "django.db.models.BigAutoField"
