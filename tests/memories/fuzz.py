"""Schemathesis against the served OpenAPI schema, on a live server: the harness behind
``tests/memories/test_schemathesis.py`` (``make test``: a few dozen examples per operation) and
``make fuzz`` (``MMW_FUZZ_EXAMPLES``: >= 10,000 cases in all).

Every operation gets hypothesis-generated cases from the schema, positive (valid by the schema)
and negative (invalid by it), with a fixed seed (``derandomize``). Each case is sent with a real
key and its response checked: no 5xx, a documented status code, the documented content type,
headers and body schema. Failures are *counted*, not raised at the first one, so a run reports
every class it found (``Tally``); the test then asserts the tally is empty.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    negative_data_rejection,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.config import SchemathesisConfig
from schemathesis.core.failures import FailureGroup
from schemathesis.core.result import Ok

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    negative_data_rejection,
]
EXAMPLE_LIMIT = 8  # examples of each failure class kept for the report


@dataclass
class Tally:
    """What a run did: cases per operation, 5xx responses, failures by class (check + status)."""

    cases: collections.Counter[str] = field(default_factory=collections.Counter)
    server_errors: int = 0
    failures: collections.Counter[str] = field(default_factory=collections.Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)
    seconds: float = 0.0
    no_negative: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.cases.values())

    def record(self, label: str, case: Any, response: Any, error: BaseException | None) -> None:
        self.cases[label] += 1
        if response is not None and response.status_code >= 500:
            self.server_errors += 1
        if error is None:
            return
        for failure in _failures(error):
            status = response.status_code if response is not None else "no response"
            kind = f"{label}: {type(failure).__name__} ({status}) {getattr(failure, 'title', '')}".strip()
            self.failures[kind] += 1
            shown = self.examples.setdefault(kind, [])
            if len(shown) < EXAMPLE_LIMIT:
                body = response.text[:200] if response is not None else ""
                shown.append(f"{case.as_curl_command()}\n    -> {body}")

    def report(self) -> str:
        lines = [
            f"schemathesis: {self.total} cases over {len(self.cases)} operations in {self.seconds:.0f} s; "
            f"{self.server_errors} answered 5xx; {sum(self.failures.values())} failed a check",
        ]
        lines += [f"  {label}: {count} cases" for label, count in sorted(self.cases.items())]
        lines += [f"  {label}: no invalid input to generate" for label in self.no_negative]
        for kind, count in self.failures.most_common():
            lines.append(f"  FAIL x{count}: {kind}")
            lines += [f"    e.g. {example}" for example in self.examples[kind][:3]]
        return "\n".join(lines)


def _failures(error: BaseException) -> Iterator[BaseException]:
    inner = getattr(error, "exceptions", None)
    if inner:
        for item in inner:
            yield from _failures(item)
    else:
        yield error


def run(base_url: str, key: str, *, examples_per_mode: int) -> Tally:
    """Fuzz every operation of the served schema: ``examples_per_mode`` positive and as many
    negative examples each (fewer when an operation has fewer distinct inputs)."""
    # The key is declared for the schema's bearer scheme, so negative cases never count a request
    # without it as "invalid data accepted" (the key is sent with every case).
    config = SchemathesisConfig.from_dict({"auth": {"openapi": {"bearerAuth": {"bearer": key}}}})
    schema = schemathesis.openapi.from_url(f"{base_url}/api/v1/schema/", config=config)
    tally = Tally()
    started = time.monotonic()
    headers = {"Authorization": f"Bearer {key}"}
    for result in schema.get_all_operations():
        if not isinstance(result, Ok):
            raise AssertionError(f"the schema has an operation schemathesis cannot load: {result.err()}")
        operation = result.ok()
        label = f"{operation.method.upper()} {operation.path}"
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            _fuzz_operation(operation, f"{label} [{mode.value}]", mode, base_url, headers, examples_per_mode, tally)
    tally.seconds = time.monotonic() - started
    return tally


def _fuzz_operation(
    operation: Any,
    label: str,
    mode: GenerationMode,
    base_url: str,
    headers: dict[str, str],
    examples: int,
    tally: Tally,
) -> None:
    @settings(
        max_examples=examples,
        derandomize=True,
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(generation_mode=mode))
    def one(case: Any) -> None:
        response = None
        try:
            response = case.call(base_url=base_url, headers=headers, timeout=60)
            case.validate_response(response, checks=CHECKS, headers=headers)
        except (AssertionError, FailureGroup) as error:  # a Failure is an AssertionError
            tally.record(label, case, response, error)
        else:
            tally.record(label, case, response, None)

    try:
        one()
    except Unsatisfiable:  # nothing to make invalid (an operation without parameters or body)
        tally.no_negative.append(label)
