"""The one MCP server, mounted at ``/mcp``: the official SDK's streamable-HTTP server (stateless,
JSON responses) serving every app's tools and resources.

``endpoint`` is the ASGI app and the server, ``auth`` the SDK token verifier over
``accounts.keys.resolve_key`` (keys and OAuth tokens), ``tools`` the tool machinery (every app's
``ToolSpec`` made an SDK tool, one call path, scopes), ``schemas`` the tools' output schemas,
``budget`` what a tool list costs, ``docs`` the reference pages as resources, ``instructions``
the server's text. The tools and resources themselves are the apps' (``memories.mcp``,
``transcripts.mcp``, ``ledger.mcp``), found through ``interfaces.mcp``'s registry: this package
imports no app's interface.
"""
