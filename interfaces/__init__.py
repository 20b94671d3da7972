"""The interface kit: what every app's REST views, MCP tools and admin share, so that no app
imports another app's interface (docs/architecture.md). ``rest`` (``ApiView``, ``principal_of``,
``body``), ``schema`` (``operation``, the error statuses, one registry of component schemas),
``threads`` (``run_sync``: sync services off the event loop), ``admin`` (``ReadOnlyMixin``),
``reference`` (the reference pages and every tool's parameter table)."""
