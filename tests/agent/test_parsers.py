"""The transcript parsers on fixture files of our own making (formats: mmw_agent.parsers)."""

from __future__ import annotations

from pathlib import Path

from mmw_agent import parsers

FIXTURES = Path(__file__).parent / "fixtures"
CLAUDE_FILE = next((FIXTURES / "claude").rglob("*.jsonl"))
CODEX_FILE = next((FIXTURES / "codex").rglob("rollout-*.jsonl"))
EVERYTHING = parsers.Options(include_tool_output=True, include_reasoning=True)


def test_claude_code_text_turns_and_one_line_tool_calls_without_boilerplate() -> None:
    parsed = parsers.parse_claude(CLAUDE_FILE.read_bytes())
    assert [(t.role, t.content[:30]) for t in parsed.turns] == [
        ("user", "The checkout test fails one ru"),
        ("assistant", "I will look at the retry loop "),
        ("tool", "→ Bash: pytest tests/test_chec"),
        ("assistant", "The payment retry reuses the i"),
    ]
    assert parsed.title == "Fix the flaky checkout test"
    assert parsed.session_id == "5f0c3a9e-1b2d-4c3e-8f4a-0a1b2c3d4e5f"
    assert parsed.working_directory == "/home/dev/shop"
    assert parsed.turns[0].occurred_at == "2026-01-15T09:00:05.000Z"
    assert parsed.unknown == 2  # the line that is not JSON, and the unknown kind
    assert parsed.end == len(CLAUDE_FILE.read_bytes())


def test_claude_code_tool_output_and_reasoning_only_when_asked() -> None:
    roles = [t.role for t in parsers.parse_claude(CLAUDE_FILE.read_bytes(), options=EVERYTHING).turns]
    assert roles == ["user", "reasoning", "assistant", "tool", "tool_output", "assistant"]


def test_codex_turns_skip_injected_context_developer_prompts_and_events() -> None:
    parsed = parsers.parse_codex(CODEX_FILE.read_bytes())
    assert [t.role for t in parsed.turns] == ["user", "tool", "assistant"]
    assert parsed.turns[0].content == "Why does terraform plan want to recreate the bastion host every time?"
    assert parsed.turns[1].content == "→ shell: bash -lc grep -n ami modules/bastion/main.tf"
    assert parsed.session_id == "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
    assert parsed.working_directory == "/home/dev/infra"
    assert parsed.unknown == 1  # the unheard-of response item


def test_codex_tool_output_and_reasoning_only_when_asked() -> None:
    roles = [t.role for t in parsers.parse_codex(CODEX_FILE.read_bytes(), options=EVERYTHING).turns]
    assert roles == ["user", "reasoning", "tool", "tool_output", "assistant"]


def test_a_half_written_last_line_waits_and_reading_resumes_at_an_offset() -> None:
    data = CODEX_FILE.read_bytes()
    cut = data.rindex(b"\n", 0, len(data) - 1) + 40  # into the last line
    first = parsers.parse_codex(data[:cut])
    assert first.end < cut
    rest = parsers.parse_codex(data, first.end)
    assert len(first.turns) + len(rest.turns) == 3
    assert rest.end == len(data)


def test_garbage_never_raises() -> None:
    junk = b'\xff\xfe\n{"type": 3}\n[1,2]\n{"type":"user","message":"x"}\n{"type":"assistant","message":{"content":[1,{"type":"tool_use"}]}}\n'
    claude = parsers.parse_claude(junk)
    codex = parsers.parse_codex(junk)
    assert claude.unknown == 4
    assert [t.content for t in claude.turns] == ["→ tool"]
    assert codex.unknown == 5
