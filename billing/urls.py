"""Billing URLs, mounted at ``/billing/`` (the Stripe webhook is ``/billing/stripe/webhook``)."""

from django.urls import path

from billing import views

app_name = "billing"

urlpatterns = [
    path("stripe/webhook", views.stripe_webhook, name="stripe-webhook"),
    path("<str:tenant_id>/", views.billing_page, name="page"),
    path("<str:tenant_id>/checkout", views.checkout, name="checkout"),
    path("<str:tenant_id>/portal", views.portal, name="portal"),
]
