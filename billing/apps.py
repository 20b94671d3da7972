from django.apps import AppConfig
from django.db.models.signals import post_migrate, post_save
from django.utils.translation import gettext_lazy as _


class BillingConfig(AppConfig):
    name = "billing"
    default_auto_field = "django.db.models.BigAutoField"
    verbose_name = _("Billing")

    def ready(self) -> None:
        from accounts import limits
        from accounts.models import Account
        from billing import signals, state_cache
        from billing.gate import BillingGatekeeper, check_project_limit, ensure_organization_features
        from billing.services import subscription_end_for_purge
        from datarights import deletion
        from memories import admission

        # The core asks its seams; billing answers them (memories and accounts never import billing).
        admission.install(BillingGatekeeper())
        limits.install(
            check_project_limit=check_project_limit, ensure_organization_features=ensure_organization_features
        )

        if subscription_end_for_purge not in deletion.BEFORE_PURGE:
            deletion.BEFORE_PURGE.append(subscription_end_for_purge)

        post_save.connect(signals.account_created, sender=Account, dispatch_uid="billing.account_created")
        state_cache.connect_invalidation()
        post_migrate.connect(signals.after_migrate, sender=self, dispatch_uid="billing.after_migrate")
