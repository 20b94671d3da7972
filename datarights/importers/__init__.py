"""Importers from other memory services (docs/export-format.md, "Importing from another service").

One reader per service turns its export into items (``items``: bounded reading, the item and
problem shapes): ``mem0``, ``basic_memory``, ``letta``, ``supermemory``. ``services.peer_import``
writes them through ``remember``'s write path, all or nothing unless asked. ``manage.py
import-from`` and the dashboard's project Import tab call it.
"""
