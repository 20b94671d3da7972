"""The dashboard keeps no tables of its own. This module exists so ``post_migrate`` is sent for
the app (Django skips apps without a models module), which keeps the Support group current."""
