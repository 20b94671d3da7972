from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    # allauth's app is "Accounts" too (sign-in e-mail addresses): the admin must not show two.
    verbose_name = "Accounts and projects"
    default_auto_field = "django.db.models.BigAutoField"
