"""REST views of the ledger (docs/ledger.md, docs/reference/ledger_*.md): parse, call, format.

Each route takes the same JSON object as the MCP tool of the same name and hands it to
``ledger.services`` / ``ledger.selectors`` raw, so both surfaces validate and answer alike. The
answers' OpenAPI schemas are generated from the presenters' ``TypedDict``s, as the tools'
``outputSchema`` are."""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from interfaces.rest import ApiView, body, principal_of
from interfaces.schema import Schema, operation, register_components
from ledger import inputs, presenters, selectors, services
from memories.inputs import json_schema

_COMPONENTS = "#/components/schemas/{model}"
ANSWERS: dict[str, Any] = {
    "LedgerRecorded": presenters.Recorded,
    "LedgerListed": presenters.Listed,
    "LedgerBalances": presenters.Balances,
    "LedgerUpcoming": presenters.Upcoming,
}


def ledger_schemas() -> dict[str, Schema]:
    """The answers' component schemas (and the shapes they use), from their ``TypedDict``s."""
    found: dict[str, Schema] = {}
    for name, answer in ANSWERS.items():
        schema = TypeAdapter(answer).json_schema(mode="serialization", ref_template=_COMPONENTS)
        found.update(schema.pop("$defs", {}))
        found[name] = schema
    found.pop("Author", None)  # the memory answers' Author component is the same shape
    return found


register_components(ledger_schemas)


class LedgerRecordView(ApiView):
    @operation(
        "ledger_record",
        "ledger_record: append a transaction or a reminder",
        answer="LedgerRecorded",
        status=201,
        errors=(409,),
        body=json_schema(inputs.RECORD),
        also=((200, "A replay: this reference was recorded before with the same content."),),
    )
    def post(self, request: Request) -> Response:
        answer = services.ledger_record(principal=principal_of(request), payload=body(request))
        return Response(answer, status=status.HTTP_200_OK if answer["replayed"] else status.HTTP_201_CREATED)


class LedgerListView(ApiView):
    @operation("ledger_list", "ledger_list: entries, filtered, one page", answer="LedgerListed",
               body=json_schema(inputs.LIST))  # fmt: skip
    def post(self, request: Request) -> Response:
        return Response(selectors.ledger_list(principal=principal_of(request), payload=body(request)))


class LedgerBalanceView(ApiView):
    @operation("ledger_balance", "ledger_balance: sums per currency (category, month)", answer="LedgerBalances",
               body=json_schema(inputs.BALANCE))  # fmt: skip
    def post(self, request: Request) -> Response:
        return Response(selectors.ledger_balance(principal=principal_of(request), payload=body(request)))


class LedgerReverseView(ApiView):
    @operation("ledger_reverse", "ledger_reverse: append the entry that cancels another", answer="LedgerRecorded",
               status=201, errors=(404, 409), body=json_schema(inputs.REVERSE))  # fmt: skip
    def post(self, request: Request) -> Response:
        answer = services.ledger_reverse(principal=principal_of(request), payload=body(request))
        return Response(answer, status=status.HTTP_201_CREATED)


class LedgerUpcomingView(ApiView):
    @operation("ledger_upcoming", "ledger_upcoming: reminders falling due, repeats expanded",
               answer="LedgerUpcoming", body=json_schema(inputs.UPCOMING))  # fmt: skip
    def post(self, request: Request) -> Response:
        return Response(selectors.ledger_upcoming(principal=principal_of(request), payload=body(request)))


class LedgerCompleteView(ApiView):
    @operation("ledger_complete", "ledger_complete: append the transaction that pays one reminder occurrence",
               answer="LedgerRecorded", status=201, errors=(404, 409), body=json_schema(inputs.COMPLETE))  # fmt: skip
    def post(self, request: Request) -> Response:
        answer = services.ledger_complete(principal=principal_of(request), payload=body(request))
        return Response(answer, status=status.HTTP_201_CREATED)
