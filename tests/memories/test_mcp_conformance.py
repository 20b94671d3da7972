"""The official MCP conformance suite (``@modelcontextprotocol/conformance``, pinned in
scripts/ensure_conformance.sh) against the live ``/mcp`` (issues #18 and #41), once per revision
served: 0.1.16 for the handshake revisions (2025-11-25), 0.2.0-alpha.12 with
``--requirements 2026-07-28`` for the stateless one.

The suite sends no auth header, so a loopback proxy adds a key (``conformance_proxy``). Its
server scenarios are written against the SDK's reference server ("everything" server) and many
call that server's fixture tools, prompts and resources; those are listed below as not
applicable with the reason, and the test checks each still fails for that reason — so a real
defect cannot hide among them — and that every scenario of the suite is in one list or the other
(a new version's scenarios must be looked at). The applicable ones must pass.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests import live
from tests.conftest import Tenancy
from tests.live import LiveServer, mcp_call
from tests.memories.conformance_proxy import KeyProxy

live_server = live.live_server

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / "var" / "conformance" / "node_modules" / ".bin" / "conformance"
# The suite for revision 2026-07-28, installed beside the other (scripts/ensure_conformance.sh)
BIN_2026 = ROOT / "var" / "conformance" / "0.2.0-alpha.12" / "node_modules" / ".bin" / "conformance"


def suite_env() -> dict[str, str]:
    """The environment the suites run in: Node 22 (npm's ``node`` package, beside the first
    suite in ``.bin``) ahead of the system's Node 20 for their ``#!/usr/bin/env node``."""
    return {**os.environ, "PATH": f"{BIN.parent}{os.pathsep}{os.environ.get('PATH', '')}"}


# scenario → the check ids allowed to end in WARNING (with why); every other check must succeed
APPLICABLE: dict[str, dict[str, str]] = {
    "server-initialize": {},
    "ping": {},
    "tools-list": {},
    "resources-list": {},
    "dns-rebinding-protection": {},
    # MMW's /mcp is stateless (no Mcp-Session-Id); the suite warns and checks nothing else
    "server-sse-multiple-streams": {"server-sse-multiple-streams-session": "stateless server: no session id"},
}
FIXTURE_TOOL = "calls a fixture tool of the SDK's reference server (test_*); MMW serves its own tools"
NO_LOGGING = "MMW does not offer the logging capability (logging/setLevel)"
NO_PROMPTS = "MMW serves no prompts (no prompts capability)"
FIXTURE_RESOURCE = "reads a fixture resource of the reference server (test://…); MMW's are mmw://memories/<id>"
NO_SUBSCRIBE = "MMW does not offer resource subscriptions (subscribe: false)"
# scenario → (reason, the error the suite reports, which shows it is that reason)
NOT_APPLICABLE: dict[str, tuple[str, str]] = {
    "logging-set-level": (NO_LOGGING, "Method not found"),
    "tools-call-with-logging": (NO_LOGGING, "Method not found"),
    "completion-complete": ("MMW offers no completions (no prompts or resource templates)", "Method not found"),
    **{
        name: (FIXTURE_TOOL, "Unknown tool: test_")
        for name in (
            "tools-call-simple-text",
            "tools-call-image",
            "tools-call-audio",
            "tools-call-embedded-resource",
            "tools-call-mixed-content",
            "tools-call-error",
            "tools-call-with-progress",
            "tools-call-sampling",
            "tools-call-elicitation",
            "elicitation-sep1034-defaults",
            "elicitation-sep1330-enums",
        )
    },
    **{
        name: (FIXTURE_RESOURCE, "memory not found")
        for name in ("resources-read-text", "resources-read-binary", "resources-templates-read")
    },
    "resources-subscribe": (NO_SUBSCRIBE, "Method not found"),
    "resources-unsubscribe": (NO_SUBSCRIBE, "Method not found"),
    **{
        name: (NO_PROMPTS, "Method not found")
        for name in (
            "prompts-list",
            "prompts-get-simple",
            "prompts-get-with-args",
            "prompts-get-embedded-resource",
            "prompts-get-with-image",
        )
    },
}


# Scenarios the suite lists but keeps out of its active suite (pending), with why they would not
# apply either: the test only checks they are still pending.
PENDING = {
    "json-schema-2020-12": "looks for the reference server's fixture tool json_schema_2020_12_tool",
    "server-sse-polling": "calls the reference server's fixture tool test_reconnection; MMW is stateless",
}


@pytest.fixture(scope="session")
def conformance() -> Path:
    """The suite's CLI, installed into var/conformance if missing (needs node and npm: a missing
    one fails the test with the installer's message rather than skipping it)."""
    installed = subprocess.run(
        ["bash", str(ROOT / "scripts" / "ensure_conformance.sh")], capture_output=True, text=True, timeout=600
    )
    assert installed.returncode == 0, f"scripts/ensure_conformance.sh failed:\n{installed.stderr}"
    return BIN


def server_scenarios(cli: Path) -> set[str]:
    listed = subprocess.run(
        [str(cli), "list", "--server"], capture_output=True, text=True, timeout=60, check=True, env=suite_env()
    )
    return set(re.findall(r"^\s+- (\S+)", listed.stdout, flags=re.MULTILINE))


def results(folder: Path) -> dict[str, list[dict[str, Any]]]:
    """scenario → its checks, from the suite's output folders ``server-<scenario>-<timestamp>``."""
    found: dict[str, list[dict[str, Any]]] = {}
    for checks in folder.glob("server-*/checks.json"):
        scenario = re.sub(r"^server-|-\d{4}-\d\d-\d\dT.*$", "", checks.parent.name)
        found[scenario] = json.loads(checks.read_text())
    return found


def test_the_official_conformance_suite_passes_its_applicable_server_scenarios(
    conformance: Path, live_server: LiveServer, tenancy: Tenancy, tmp_path: Path
) -> None:
    scenarios = server_scenarios(conformance)
    with KeyProxy(live_server.url, tenancy.alice.key) as proxy:
        run = subprocess.run(
            [str(conformance), "server", "--url", f"{proxy.url}/mcp", "--output-dir", str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=600,
            env=suite_env(),
        )
    checked = results(tmp_path)
    assert scenarios == set(APPLICABLE) | set(NOT_APPLICABLE) | set(PENDING)
    assert set(checked) == set(APPLICABLE) | set(NOT_APPLICABLE), run.stdout[-2000:]
    for scenario, warnings in APPLICABLE.items():
        for check in checked[scenario]:
            allowed = ("SUCCESS", "INFO", "WARNING") if check["id"] in warnings else ("SUCCESS", "INFO")
            assert check["status"] in allowed, (scenario, check)
    for scenario, (reason, error) in NOT_APPLICABLE.items():
        failures = [c for c in checked[scenario] if c["status"] == "FAILURE"]
        assert failures, f"{scenario} passes now: move it to APPLICABLE ({reason})"
        assert all(error in (c.get("errorMessage") or "") for c in failures), (scenario, reason, failures)


# Revision 2026-07-28 (suite 0.2.0-alpha.12, ``--requirements 2026-07-28``). Each scenario maps the
# checks allowed not to succeed to (their status, why, a text the suite reports that shows it is
# that reason); every other check of the scenario must succeed. A scenario whose every check is
# listed is not applicable as a whole.
Outcome = tuple[str, str, str]
NO_COMPLETIONS = "MMW offers no completions (no prompts, and its resource templates take no completion)"
NO_INPUT_REQUESTS = (
    "calls a fixture tool of the reference server that asks the client for input (InputRequiredResult); "
    "no MMW tool needs input from the client"
)
DIAGNOSTIC_TOOL = "needs a diagnostic tool of the reference server in tools/list; MMW lists its own tools"
NOTHING_PUSHED = (
    "MMW pushes nothing (no listChanged, no subscribe) and does not serve subscriptions/listen, "
    "so there is no stream to check"
)
NO_HEADER_PARAMS = "no MMW tool declares a parameter mirrored in an Mcp-Param-* header (x-mcp-header)"


def failing(reason: str, text: str, *checks: str) -> dict[str, Outcome]:
    return {check: ("FAILURE", reason, text) for check in checks}


def skipped(reason: str, text: str, *checks: str) -> dict[str, Outcome]:
    return {check: ("SKIPPED", reason, text) for check in checks}


REQUIRED_2026: dict[str, dict[str, Outcome]] = {
    "server-stateless": {
        **failing(
            DIAGNOSTIC_TOOL,
            "diagnostic tool 'test_missing_capability'",
            "sep-2575-server-rejects-undeclared-capability",
            "sep-2575-missing-capability-http-400",
        ),
        **failing(
            DIAGNOSTIC_TOOL,
            "diagnostic tool 'test_streaming_elicitation'",
            "sep-2575-http-server-no-independent-requests-on-stream",
        ),
        **failing(DIAGNOSTIC_TOOL, "diagnostic tool 'test_logging_tool'", "sep-2575-server-no-log-without-loglevel"),
        **skipped(
            NOTHING_PUSHED,
            "Server advertises no subscription-delivered capability",
            "sep-2575-server-sends-subscription-ack",
            "sep-2575-server-tags-subscription-id",
            "sep-2575-server-honors-notification-filter",
        ),
        **skipped(
            NOTHING_PUSHED,
            "did not declare tools.listChanged",
            "sep-2575-server-sends-tools-list-changed-on-subscription",
        ),
        **skipped(
            NOTHING_PUSHED,
            "did not declare prompts.listChanged",
            "sep-2575-server-sends-prompts-list-changed-on-subscription",
        ),
    },
    "tools-list": {},
    "resources-list": {},
    "sep-2164-resource-not-found": {},
    "dns-rebinding-protection": {},
    # MMW's /mcp answers JSON, one POST at a time; the scenario checks what there is to check
    "server-sse-multiple-streams": {},
    "caching": failing(NO_PROMPTS, "Method not found", "sep-2549-prompts-list-caching-hints"),
    "input-required-result-unsupported-methods": {},
    "input-required-result-validate-input": {},
    "completion-complete": failing(NO_COMPLETIONS, "Method not found", "completion-complete"),
    **{
        name: failing(FIXTURE_TOOL, "Unknown tool: test_", name)
        for name in (
            "tools-call-simple-text",
            "tools-call-image",
            "tools-call-audio",
            "tools-call-embedded-resource",
            "tools-call-mixed-content",
            "tools-call-error",
            "tools-call-with-progress",
        )
    },
    **{
        name: failing(FIXTURE_RESOURCE, "memory not found", name)
        for name in ("resources-read-text", "resources-read-binary", "resources-templates-read")
    },
    **{
        name: failing(NO_PROMPTS, "Method not found", name)
        for name in (
            "prompts-list",
            "prompts-get-simple",
            "prompts-get-with-args",
            "prompts-get-embedded-resource",
            "prompts-get-with-image",
        )
    },
    "input-required-result-basic-elicitation": failing(
        NO_INPUT_REQUESTS, "Unknown tool: test_input_required_result_elicitation", "sep-2322-elicitation-incomplete"
    ),
    "input-required-result-basic-sampling": failing(
        NO_INPUT_REQUESTS, "Unknown tool: test_input_required_result_sampling", "sep-2322-sampling-incomplete"
    ),
    "input-required-result-basic-list-roots": failing(
        NO_INPUT_REQUESTS, "Unknown tool: test_input_required_result_list_roots", "sep-2322-list-roots-incomplete"
    ),
    "input-required-result-request-state": failing(
        NO_INPUT_REQUESTS,
        "Unknown tool: test_input_required_result_request_state",
        "sep-2322-request-state-incomplete",
    ),
    "input-required-result-multiple-input-requests": failing(
        NO_INPUT_REQUESTS,
        "Unknown tool: test_input_required_result_multiple_inputs",
        "sep-2322-multiple-inputs-incomplete",
    ),
    "input-required-result-multi-round": failing(
        NO_INPUT_REQUESTS, "Expected InputRequiredResult", "sep-2322-multi-round-r1"
    ),
    "input-required-result-missing-input-response": {
        "sep-2322-missing-response-rerequests": ("WARNING", NO_INPUT_REQUESTS, "instead of re-requesting")
    },
    # prompts/get of the reference server's prompt that asks for input
    "input-required-result-non-tool-request": failing(NO_PROMPTS, "Method not found", "sep-2322-non-tool-incomplete"),
    "input-required-result-result-type": failing(
        NO_INPUT_REQUESTS, "Unknown tool: test_input_required_result_elicitation", "sep-2322-result-type-included"
    ),
    "input-required-result-tampered-state": failing(
        NO_INPUT_REQUESTS, "could not get initial InputRequiredResult", "sep-2322-reject-tampered-state"
    ),
    "input-required-result-capability-check": failing(
        NO_INPUT_REQUESTS,
        "Unknown tool: test_input_required_result_capabilities",
        "sep-2322-respect-client-capabilities",
    ),
    "input-required-result-ignore-extra-params": {
        "sep-2322-ignore-unexpected-params": (
            "WARNING",
            NO_INPUT_REQUESTS,
            "Unknown tool: test_input_required_result_elicitation",
        )
    },
}
# Run as well, though not scored for 2026-07-28 (the suite keeps them pending): checked the same way.
PENDING_2026: dict[str, dict[str, Outcome]] = {
    "http-header-validation": {},
    "json-schema-2020-12": failing(
        "looks for the reference server's fixture tool json_schema_2020_12_tool",
        "Tool 'json_schema_2020_12_tool' not found",
        "json-schema-2020-12-tool-found",
    ),
    "http-custom-header-server-validation": failing(
        NO_HEADER_PARAMS,
        "no tool with x-mcp-header annotations",
        "sep-2243-server-no-xmcp-tool",
        "sep-2243-server-decode-base64",
        "sep-2243-server-validate-param-match",
        "sep-2243-server-reject-invalid-param-chars",
        "sep-2243-server-reject-param-mismatch",
    ),
}
# Run as well, not scored, not checked: the tasks extension (io.modelcontextprotocol/tasks), which
# MMW does not offer (its tools answer at once).
TASKS_EXTENSION = {
    "tasks-lifecycle",
    "tasks-capability-negotiation",
    "tasks-wire-fields",
    "tasks-request-state-removal",
    "tasks-mrtr-input",
    "tasks-request-headers",
    "tasks-dispatch-and-envelope",
    "tasks-status-notifications",
    "tasks-required-task-error",
    "tasks-mrtr-composition",
}


@pytest.fixture(scope="session")
def conformance_2026(conformance: Path) -> Path:
    """The suite for revision 2026-07-28 (installed by the same script as ``conformance``)."""
    return BIN_2026


def required_server_scenarios(cli: Path, revision: str) -> set[str]:
    """The server scenarios the suite requires for ``revision`` (its ``list --requirements``)."""
    listed = subprocess.run(
        [str(cli), "list", "--server", "--requirements", revision],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env=suite_env(),
    )
    section = listed.stdout.split("Server scenarios", 1)[1].split("\n\n", 1)[0]
    return set(re.findall(r"^\s+- (\S+)", section, flags=re.MULTILINE))


def unexpected(checked: dict[str, list[dict[str, Any]]], expected: dict[str, dict[str, Outcome]]) -> list[str]:
    """What in ``checked`` departs from ``expected``: a check that did not succeed without being
    listed, a listed one that now succeeds or fails for another reason, a listed one not seen."""
    found: list[str] = []
    for scenario, allowed in expected.items():
        checks = checked.get(scenario, [])
        for check in checks:
            outcome = allowed.get(check["id"])
            said = f"{check.get('errorMessage') or ''} {json.dumps(check.get('details'))}"
            if outcome is None:
                if check["status"] not in ("SUCCESS", "INFO"):
                    found.append(f"{scenario}: {check['id']} {check['status']}: {said[:300]}")
            elif check["status"] != outcome[0] or outcome[2] not in said:
                found.append(f"{scenario}: {check['id']} is {check['status']} ({said[:300]}), expected {outcome}")
        seen = {check["id"] for check in checks}
        found += [f"{scenario}: {check} was not reported (drop it from the table)" for check in allowed.keys() - seen]
    return found


def test_the_official_conformance_suite_passes_what_revision_2026_07_28_requires(
    conformance_2026: Path, live_server: LiveServer, tenancy: Tenancy, tmp_path: Path
) -> None:
    # a record to read: the caching scenario reads the first resource listed (skipped when none)
    is_error, saved = mcp_call(live_server, tenancy.alice.key, "remember", {"content": "conformance reads this"})
    assert not is_error, saved
    required = required_server_scenarios(conformance_2026, "2026-07-28")
    with KeyProxy(live_server.url, tenancy.alice.key) as proxy:
        run = subprocess.run(
            [
                *(str(conformance_2026), "server", "--url", f"{proxy.url}/mcp"),
                *("--requirements", "2026-07-28", "--output-dir", str(tmp_path)),
            ],
            capture_output=True,
            text=True,
            timeout=900,
            env=suite_env(),
        )
    checked = results(tmp_path)
    assert required == set(REQUIRED_2026)
    assert set(checked) == required | set(PENDING_2026) | TASKS_EXTENSION, run.stdout[-2000:]
    assert unexpected(checked, REQUIRED_2026 | PENDING_2026) == []
