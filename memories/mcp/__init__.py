"""The MCP surface: the official SDK's streamable-HTTP server, mounted at ``/mcp``.

``endpoint`` is the ASGI app (stateless, JSON responses), ``auth`` the SDK token verifier over
``accounts.keys.resolve_key``, ``tools`` the eight memory tools and the server's tool machinery —
each tool hands its raw arguments to the same service or selector REST uses, so both surfaces
answer with the same data and error texts. Every app's tools (``transcripts.mcp``,
``ledger.mcp``) reach the server through one registry, ``interfaces.mcp``; importing this package
registers the memory tools, as importing theirs registers them.
"""

from memories.mcp import tools as tools
