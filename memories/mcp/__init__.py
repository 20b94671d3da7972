"""The MCP surface: the official SDK's streamable-HTTP server, mounted at ``/mcp``.

``endpoint`` is the ASGI app (stateless, JSON responses), ``auth`` the SDK token verifier over
``accounts.keys.resolve_key``, ``tools`` the eight tools — each hands its raw arguments to the
same service or selector REST uses, so both surfaces answer with the same data and error texts.
"""
