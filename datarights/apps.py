from django.apps import AppConfig


class DatarightsConfig(AppConfig):
    """Export, import and deletion with retention (docs/data.md, docs/export-format.md)."""

    name = "datarights"
    default_auto_field = "django.db.models.BigAutoField"
