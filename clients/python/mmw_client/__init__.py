"""mmw-client: a typed Python client for MMW's REST API (docs/sdk.md).

    from mmw_client import MMWClient

    with MMWClient("http://127.0.0.1:8000", api_key="mmw_…") as mmw:
        saved = mmw.remember("Deploys go through staging first", fact_key="deploy-process")
        found = mmw.search("how do we deploy?")

``AsyncMMWClient`` has the same methods, awaited. Errors are ``mmw_client.errors`` classes, one
per code the server answers. Retries never write twice: see ``mmw_client._core``.
"""

from mmw_client import errors, types
from mmw_client._core import NO_RETRIES, Call, Retries
from mmw_client.async_client import AsyncMMWClient
from mmw_client.client import MMWClient
from mmw_client.errors import MMWError, TransportError, stored

__all__ = [
    "NO_RETRIES",
    "AsyncMMWClient",
    "Call",
    "MMWClient",
    "MMWError",
    "Retries",
    "TransportError",
    "errors",
    "stored",
    "types",
]
__version__ = "0.1.0"
