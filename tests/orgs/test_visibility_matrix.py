"""The visibility matrix through the service layer: roles × visibility × operation × same/other
department × active/deactivated, every cell asserted (see ``tests/orgs/matrix.py``)."""

from __future__ import annotations

import dataclasses

import pytest

from accounts.keys import resolve_key
from orgs import services as org_services
from orgs.models import Membership
from tests.orgs import matrix
from tests.orgs.matrix import reader_setup, write_matrix_records
from tests.orgs.world import ROLES, VISIBILITIES, make_org, write

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("active", [True, False], ids=["active", "deactivated"])
@pytest.mark.parametrize("same_department", [True, False], ids=["same-dept", "other-dept"])
@pytest.mark.parametrize("role", ROLES)
def test_every_cell_of_the_visibility_matrix_holds_in_the_service_layer(
    role: str, same_department: bool, active: bool
) -> None:
    org, writer, reader = reader_setup(role, same_department)
    records = write_matrix_records(writer)
    principal = reader.principal()
    if not active:
        org_services.membership_deactivate(membership=reader.membership, actor=org.founder.user)
        assert resolve_key(reader.key) is None, "a deactivated member's key must stop at once"
        # Even a principal built before the deactivation, once it carries the deactivated
        # membership, reads and writes nothing.
        principal = dataclasses.replace(principal, membership=Membership.objects.get(pk=reader.membership.pk))

    actual = {
        (op, vis): matrix.run_service(principal, op, vis, records[(op, vis)])
        for op in matrix.OPERATIONS
        for vis in VISIBILITIES
    }
    wanted = {
        (op, vis): matrix.expected(
            role=role, visibility=vis, operation=op, same_department=same_department, active=active
        )
        for op in matrix.OPERATIONS
        for vis in VISIBILITIES
    }
    assert actual == wanted


def test_the_author_reads_and_forgets_their_own_records_of_every_visibility() -> None:
    org = make_org()
    writer = org.add("writer@acme.test", "member", departments=["red"])
    records = write_matrix_records(writer)
    principal = writer.principal()
    actual = {key: matrix.run_service(principal, *key, records[key]) for key in records}
    wanted = {
        (op, vis): matrix.expected(role="member", visibility="project", operation=op, same_department=True, active=True)
        for op, vis in records
    }
    assert actual == wanted


def test_an_auditor_author_is_refused_before_anything_is_stored() -> None:
    org = make_org()
    auditor = org.add("auditor@acme.test", "auditor", departments=["red"])
    with pytest.raises(Exception, match=matrix.MAY_NOT_WRITE):
        write(auditor, "project", "auditors write nothing")
