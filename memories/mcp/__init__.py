"""The memory tools and records as MCP resources, registered with the one ``/mcp`` server
(``interfaces.mcp_server``) through ``interfaces.mcp``'s registry: ``tools`` the eight memory tools
(each hands its raw arguments to the same service or selector REST uses, so both surfaces answer
with the same data and error texts), ``descriptions`` their texts, ``resources`` the records
(``mmw://memories/<id>``). Importing this package registers them, as importing ``transcripts.mcp``
and ``ledger.mcp`` registers theirs.
"""

from memories.mcp import resources as resources
from memories.mcp import tools as tools
