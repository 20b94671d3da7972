"""Slices of the visibility matrix through REST and MCP: both surfaces give the outcomes the
service layer gives (``tests/orgs/matrix.py``), because all three share ``visible_to``."""

from __future__ import annotations

import httpx
import pytest

from orgs import services as org_services
from tests import live
from tests.live import LiveServer, mcp_call
from tests.memories.rest import Api
from tests.orgs import matrix
from tests.orgs.matrix import reader_setup, write_matrix_records
from tests.orgs.world import VISIBILITIES

live_server = live.live_server


def expected_over_http(role: str, visibility: str, operation: str, same_department: bool, active: bool) -> str:
    """Over HTTP a deactivated member's key is refused before anything runs (401)."""
    if not active:
        return "unauthenticated"
    return matrix.expected(
        role=role, visibility=visibility, operation=operation, same_department=same_department, active=True
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("role", "same_department", "active"),
    [("member", False, True), ("auditor", True, True), ("admin", True, False), ("owner", False, True)],
    ids=["member-other-dept", "auditor-same-dept", "admin-deactivated", "owner-other-dept"],
)
def test_rest_gives_the_matrix_outcomes(role: str, same_department: bool, active: bool) -> None:
    org, writer, reader = reader_setup(role, same_department)
    records = write_matrix_records(writer)
    if not active:
        org_services.membership_deactivate(membership=reader.membership, actor=org.founder.user)
    api = Api(reader.key)
    actual = {
        (op, vis): matrix.run_rest(api.call, op, vis, records[(op, vis)])
        for op in matrix.OPERATIONS
        for vis in VISIBILITIES
    }
    wanted = {
        (op, vis): expected_over_http(role, vis, op, same_department, active)
        for op in matrix.OPERATIONS
        for vis in VISIBILITIES
    }
    assert actual == wanted


def mcp_run(url: str, key: str, operation: str, visibility: str, memory_id: str) -> str:
    is_error, answer = mcp_call(
        url, key, matrix.MCP_TOOL_OF[operation], matrix.arguments(operation, visibility, memory_id)
    )
    return matrix.mcp_outcome(operation, memory_id, is_error, answer)


@pytest.mark.slow
def test_mcp_gives_the_matrix_outcomes(live_server: LiveServer) -> None:
    org, writer, reader = reader_setup("member", same_department=False)
    auditor = org.add("auditor@acme.test", "auditor", departments=["red"])
    sleeper = org.add("sleeper@acme.test", "member", departments=["red"])
    org_services.membership_deactivate(membership=sleeper.membership, actor=org.founder.user)
    records = write_matrix_records(writer)

    cells: dict[tuple[str, str, str], str] = {}
    wanted: dict[tuple[str, str, str], str] = {}
    # A member of another department: every operation on every visibility.
    for op in matrix.OPERATIONS:
        for vis in VISIBILITIES:
            cells[("member", op, vis)] = mcp_run(live_server, reader.key, op, vis, records[(op, vis)])
            wanted[("member", op, vis)] = matrix.expected(
                role="member", visibility=vis, operation=op, same_department=False, active=True
            )
    # An auditor of the author's department: reads department records, writes nothing.
    for op in matrix.OPERATIONS:
        cells[("auditor", op, "department")] = mcp_run(
            live_server, auditor.key, op, "department", records[(op, "department")]
        )
        wanted[("auditor", op, "department")] = matrix.expected(
            role="auditor", visibility="department", operation=op, same_department=True, active=True
        )
    assert cells == wanted

    # A deactivated member's key is refused at the door (HTTP 401), like any invalid key.
    response = httpx.post(
        f"{live_server}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
        headers={
            "Authorization": f"Bearer {sleeper.key}",
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        },
        timeout=10.0,
    )
    assert response.status_code == 401
