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
import json
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
from schemathesis.core import NotSet
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
REFUSALS = ["400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429"]
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
    server_error_inputs: collections.Counter[str] = field(default_factory=collections.Counter)

    @property
    def total(self) -> int:
        return sum(self.cases.values())

    def record(self, label: str, case: Any, response: Any, error: BaseException | None) -> None:
        self.cases[label] += 1
        if response is not None and response.status_code >= 500:
            self.server_errors += 1
            self.server_error_inputs[suspect(case)] += 1
        if error is None:
            return
        for failure in _failures(error):
            status = response.status_code if response is not None else "no response"
            kind = f"{label}: {type(failure).__name__} ({status}) {getattr(failure, 'title', '')}".strip()
            self.failures[kind] += 1
            shown = self.examples.setdefault(kind, [])
            if len(shown) < EXAMPLE_LIMIT:
                body = " ".join(response.text.split())[:160] if response is not None else ""
                shown.append(f"{_request_line(case)} -> {body}")

    def report(self) -> str:
        lines = [
            f"schemathesis: {self.total} cases over {len(self.cases)} operations in {self.seconds:.0f} s; "
            f"{self.server_errors} answered 5xx; {sum(self.failures.values())} failed a check",
        ]
        lines += [f"  {label}: {count} cases" for label, count in sorted(self.cases.items())]
        lines += [f"  {label}: no invalid input to generate" for label in self.no_negative]
        lines += [f"  5xx x{n}: input with {what}" for what, n in self.server_error_inputs.most_common()]
        for kind, count in self.failures.most_common():
            lines.append(f"  FAIL x{count}: {kind}")
            lines += [f"    e.g. {example}" for example in self.examples[kind][:3]]
        return "\n".join(lines)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def suspect(case: Any) -> str:
    """What is unusual about a case's input: the first of NUL, an unpaired surrogate, a control
    character, a string over 1,000 characters; else "nothing unusual"."""
    parts = [case.path_parameters, case.query, case.headers, case.body]
    texts = [t for part in parts if part is not None and not isinstance(part, NotSet) for t in _strings(part)]
    if any("\x00" in t for t in texts):
        return "a NUL character"
    if any(0xD800 <= ord(c) <= 0xDFFF for t in texts for c in t):
        return "an unpaired surrogate"
    if any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for t in texts for c in t):
        return "a control character"
    if any(len(t) > 1_000 for t in texts):
        return "a string over 1,000 characters"
    return "nothing unusual"


def _request_line(case: Any) -> str:
    """The request in one line (method, path with parameters, query, body), for the report."""
    path = case.formatted_path if hasattr(case, "formatted_path") else case.path
    body = (
        "" if isinstance(case.body, NotSet) else f" body={json.dumps(case.body, ensure_ascii=True, default=repr)[:200]}"
    )
    query = f" query={json.dumps(case.query, ensure_ascii=True)[:200]}" if case.query else ""
    return f"{case.method} {path}{query}{body}"


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
    # Sanitization off: it would print every parameter whose name contains "key" (fact_key) as
    # [Filtered]; the one secret sent, the API key, is never printed (headers are not shown).
    # Invalid input may be refused with any documented 4xx, 413 (too large) included.
    config = SchemathesisConfig.from_dict(
        {
            "auth": {"openapi": {"bearerAuth": {"bearer": key}}},
            "output": {"sanitization": {"enabled": False}},
            "checks": {"negative_data_rejection": {"expected-statuses": REFUSALS}},
        }
    )
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
        if case.query:
            # An empty list sends nothing, so an "unknown parameter" case would reach the server as
            # a valid request; send it as one empty value instead.
            case.query = {name: "" if value == [] else value for name, value in case.query.items()}
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
