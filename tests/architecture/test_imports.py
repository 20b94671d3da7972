"""The allowed imports between MMW's modules (docs/architecture.md), enforced.

Each module of ours belongs to one layer; a module may import its own layer and the layers
below it, never above. Interfaces (REST, MCP, dashboard, admin, commands, URL maps) sit on top:
no module below imports one — only the composition root (``mmw.urls``, ``mmw.routing``, …)
wires them in. Migrations are left out (they are frozen history, importing only Django).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = (
    "mmw", "interfaces", "accounts", "orgs", "memories", "transcripts", "ledger", "datarights", "webhooks", "billing", "dashboard", "oauth"
)  # fmt: skip

# (layer, module prefixes), lowest first. The longest matching prefix decides a module's layer.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # mmw's own modules are the ground floor (errors, env, text, locks, the Celery app, embedded
    # servers) except those listed as the composition root at the top.
    ("ground", ("mmw",)),  # mmw.outbound (SSRF-guarded outbound HTTP) among them
    # oauth's models and config sit with the tenancy models: the one key resolver reads tokens.
    ("tenancy models", ("accounts", "orgs", "oauth")),
    (
        "tenancy rules",
        (
            "orgs.selectors",
            "accounts.keys",
            "accounts.key_cache",
            "accounts.selectors",
            "accounts.services",
            "orgs.services",
            "accounts.authentication",
            "oauth.services",
            "oauth.selectors",
            "oauth.tasks",
            "oauth.client_metadata",
        ),
    ),
    ("memory core", ("memories", "transcripts", "ledger")),
    # Webhooks read what the memory core wrote (the database is their outbox); nothing below reads them.
    ("webhooks", ("webhooks",)),
    # Each app's rows of an import (``<app>.restore``) extend datarights' importer, so they sit in
    # its layer; datarights finds them through its registry (``restore.base.registered``).
    ("data rights", ("datarights", "memories.restore", "transcripts.restore", "ledger.restore")),
    ("billing", ("billing",)),
    # The kit every app's interfaces share (ApiView, operation, run_sync, ReadOnlyMixin, the
    # reference pages): an app imports it, never another app's interface.
    ("interface kit", ("interfaces",)),
    (
        "interfaces",
        (
            "memories.api", "memories.mcp", "memories.admin", "memories.management", "transcripts.admin", "transcripts.api", "transcripts.urls", "transcripts.mcp", "ledger.api", "ledger.urls", "ledger.mcp",
            "accounts.admin", "accounts.admin_login", "accounts.admin_customer", "accounts.management",
            "orgs.admin", "datarights.admin", "billing.views", "billing.admin", "billing.urls", "billing.webhooks", "billing.management",
            "datarights.api", "datarights.urls", "datarights.management", "webhooks.admin",
            "dashboard", "oauth.provider", "oauth.endpoints", "oauth.admin",
            "interfaces.mcp_server",  # the one /mcp server: every app's tools, through interfaces.mcp
        ),
    ),
    ("composition root", ("mmw.settings", "mmw.urls", "mmw.asgi", "mmw.wsgi", "mmw.routing", "mmw.views")),
)  # fmt: skip
RANK = {name: rank for rank, (name, _) in enumerate(LAYERS)}


def layer_of(module: str) -> str:
    best, best_len = "", -1
    for name, prefixes in LAYERS:
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = name, len(prefix)
    assert best, f"{module} belongs to no layer: add it to LAYERS and docs/architecture.md"
    return best


def our_modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            found[".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")] = path
    return found


def imports_of(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # "from memories import services" imports a module; "from memories.models import Memory" a name
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
    return {n for n in names if n.split(".")[0] in PACKAGES}


def violations() -> list[str]:
    modules = our_modules()
    found = []
    for module, path in sorted(modules.items()):
        mine = RANK[layer_of(module)]
        for target in sorted(imports_of(path)):
            # "from memories import services" names a module; "from memories.models import Memory" a class
            resolved = target if target in modules else target.rsplit(".", 1)[0]
            if resolved not in modules:
                continue
            theirs = RANK[layer_of(resolved)]
            if theirs > mine:
                found.append(f"{module} ({layer_of(module)}) imports {resolved} ({layer_of(resolved)})")
    return found


def app_of(module: str) -> str:
    return module.split(".")[0]


# The memory core's apps sit side by side, but not every way: sessions and the ledger reuse
# memories' core (Guard, ranking, parameter tables), and memories' core never imports them.
NEVER_IMPORTED_BY_MEMORIES_CORE = ("transcripts", "ledger")

# Imports that still break the second rule, each with the reason it is still here. This list can
# only shrink: a test fails when an entry no longer occurs, so fixing one means deleting it.
KNOWN: dict[str, str] = {}


# Modules an app plugs into another app's registry: only their own app imports them (the registry
# finds them by the app registry, as the admin finds ``admin`` modules) — datarights' importer
# never reaches into an app's rows.
REGISTERED = ("memories.restore", "transcripts.restore", "ledger.restore")


def registered_module(module: str) -> bool:
    return any(module == r or module.startswith(r + ".") for r in REGISTERED)


def interface_violations(imports: Callable[[Path], set[str]] = imports_of) -> list[str]:
    """The second rule: no app imports another app's interface (only the composition root wires
    interfaces together) or a module it registers with another app (``REGISTERED``), and the
    memory core's ``memories`` never imports its siblings."""
    modules = our_modules()
    found = []
    for module, path in sorted(modules.items()):
        layer = layer_of(module)
        if layer == "composition root":
            continue
        for target in sorted(imports(path)):
            resolved = target if target in modules else target.rsplit(".", 1)[0]
            if resolved not in modules:
                continue
            if layer_of(resolved) == "interfaces" and app_of(resolved) != app_of(module):
                found.append(f"{module} imports {resolved}, {app_of(resolved)}'s interface")
            elif registered_module(resolved) and app_of(resolved) != app_of(module):
                found.append(
                    f"{module} imports {resolved}, which {app_of(resolved)} registers (find it by the registry)"
                )
            elif (
                layer == "memory core"
                and app_of(module) == "memories"
                and app_of(resolved) in NEVER_IMPORTED_BY_MEMORIES_CORE
            ):
                found.append(f"{module} (memory core) imports {resolved}")
    return sorted(set(found))


def test_no_module_imports_a_layer_above_its_own() -> None:
    assert violations() == []


def test_no_app_imports_another_apps_interface() -> None:
    assert [v for v in interface_violations() if v not in KNOWN] == []


def test_every_known_exception_still_occurs() -> None:
    """A fixed exception is deleted from KNOWN, so the list says what remains."""
    assert sorted(set(KNOWN) - set(interface_violations())) == []


def test_the_interface_rule_catches_a_planted_import() -> None:
    """The check itself can fail: ledger's REST views importing memories' REST views (an import
    the layer rule allows, both being interfaces) is refused, as is memories' core reading sessions."""
    planted = {
        ROOT / "ledger" / "api.py": {"memories.api.views.MemoryCollectionView"},
        ROOT / "memories" / "search.py": {"transcripts.models.Turn"},
        ROOT / "datarights" / "restore" / "importer.py": {"memories.restore.MemoryRows"},
    }
    found = interface_violations(lambda path: imports_of(path) | planted.get(path, set()))
    assert "ledger.api imports memories.api.views, memories's interface" in found
    assert "memories.search (memory core) imports transcripts.models" in found
    assert "memories.search (memory core) imports transcripts.models" not in interface_violations()
    assert (
        "datarights.restore.importer imports memories.restore, which memories registers (find it by the registry)"
        in found
    )


def test_the_rule_catches_a_core_module_importing_billing() -> None:
    """The check itself can fail: billing sits above the memory core."""
    assert RANK[layer_of("billing.gate")] > RANK[layer_of("memories.services")]
    assert RANK[layer_of("memories.api.views")] > RANK[layer_of("billing.gate")]
    assert RANK[layer_of("mmw.routing")] > RANK[layer_of("dashboard.views")]
    assert layer_of("mmw.errors") == "ground"
    assert "memories.admission" in imports_of(ROOT / "billing" / "apps.py")  # billing → memories: allowed
    assert layer_of("transcripts.services") == layer_of("memories.search")  # sessions sit beside memories
    assert RANK[layer_of("billing.gate")] > RANK[layer_of("transcripts.selectors")]
    assert RANK[layer_of("memories.services")] < RANK[layer_of("datarights.restore")] < RANK[layer_of("billing.gate")]
    assert layer_of("ledger.services") == layer_of("memories.guard")  # the ledger sits beside memories
    assert RANK[layer_of("ledger.api")] > RANK[layer_of("billing.gate")]
    assert RANK[layer_of("memories.models")] < RANK[layer_of("webhooks.services")] < RANK[layer_of("datarights.export")]
    assert layer_of("webhooks.admin") == "interfaces"
    assert layer_of("interfaces.mcp_server.endpoint") == "interfaces"
    assert layer_of("interfaces.mcp") == "interface kit"


def bench_imports_in_tests() -> list[str]:
    """Tests stand on their own: a benchmark may use a test helper, never the reverse."""
    found = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            found += [f"{path.relative_to(ROOT)} imports {n}" for n in names if n.split(".")[0] == "bench"]
    return found


def test_no_test_imports_bench() -> None:
    assert bench_imports_in_tests() == []
