from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AccountsConfig(AppConfig):
    name = "accounts"
    # allauth's app is "Accounts" too (sign-in e-mail addresses): the admin must not show two.
    verbose_name = _("Accounts and projects")
    default_auto_field = "django.db.models.BigAutoField"
