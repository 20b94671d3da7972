from django.apps import AppConfig


class OrgsConfig(AppConfig):
    name = "orgs"
    default_auto_field = "django.db.models.BigAutoField"
