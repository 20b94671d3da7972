"""Plans and subscriptions (built by the billing work)."""
