"""Billing URLs, mounted at ``/billing/`` (the Stripe webhook is ``/billing/stripe/webhook``)."""

from django.urls import path

from billing import api

app_name = "billing"

urlpatterns = [
    path("stripe/webhook", api.stripe_webhook, name="stripe-webhook"),
    path("<str:tenant_id>/", api.billing_page, name="page"),
    path("<str:tenant_id>/checkout", api.checkout, name="checkout"),
    path("<str:tenant_id>/portal", api.portal, name="portal"),
]
