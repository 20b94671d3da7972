"""The sync client's bookkeeping against a stand-in for the session routes (tests/agent/
fake_server.py): nothing without consent, nothing twice, resume after an interruption, only new
turns after an append, a rewritten file read again. The real routes: test_sync_live.py."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from mmw_agent import config, consent, state, sync
from mmw_agent.remote import Remote, Unreachable

from tests.agent.fake_server import FakeSessions

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def fake() -> Iterator[FakeSessions]:
    server = FakeSessions()
    yield server
    server.close()


@pytest.fixture
def remote(local_env: dict[str, str], fake: FakeSessions) -> Remote:
    shutil.copytree(FIXTURES / "claude", local_env["MMW_AGENT_CLAUDE_DIR"], dirs_exist_ok=True)
    shutil.copytree(FIXTURES / "codex", local_env["MMW_AGENT_CODEX_DIR"], dirs_exist_ok=True)
    return Remote(config.Config(url=fake.url, key="mmw_test"))


def give_consent() -> None:
    state.put(consent.KEY, {"given": True, "sources": ["claude-code", "codex"]})


def many_turns(path: Path, n: int, start: int = 0) -> None:
    with path.open("a") as handle:
        for i in range(start, start + n):
            line = {
                "type": "user",
                "sessionId": "big",
                "timestamp": "2026-01-01T00:00:00Z",
                "message": {"role": "user", "content": f"message number {i}"},
            }
            handle.write(json.dumps(line) + "\n")


def test_nothing_is_uploaded_without_consent(remote: Remote, fake: FakeSessions) -> None:
    with pytest.raises(sync.NoConsent):
        sync.run(remote.cfg, remote)
    state.put(consent.KEY, {"given": False, "revoked_at": 1, "sources": []})
    with pytest.raises(sync.NoConsent):
        sync.run(remote.cfg, remote)
    assert fake.sessions == {}
    assert fake.turn_posts == 0


def test_a_second_run_uploads_nothing_and_an_append_only_the_new_turns(
    remote: Remote, fake: FakeSessions, local_env: dict[str, str]
) -> None:
    give_consent()
    first = sync.run(remote.cfg, remote)
    assert first.turns_created == 7  # 4 Claude Code + 3 Codex
    assert first.unknown_lines == 3
    assert set(fake.sessions) == {
        ("claude-code", "5f0c3a9e-1b2d-4c3e-8f4a-0a1b2c3d4e5f"),
        ("codex", "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"),
    }
    assert (
        fake.sessions[("claude-code", "5f0c3a9e-1b2d-4c3e-8f4a-0a1b2c3d4e5f")]["title"] == "Fix the flaky checkout test"
    )
    posts = fake.turn_posts
    again = sync.run(remote.cfg, remote)
    assert again.turns_created == again.turns_unchanged == 0
    assert fake.turn_posts == posts
    claude_file = next(Path(local_env["MMW_AGENT_CLAUDE_DIR"]).rglob("*.jsonl"))
    with claude_file.open("a") as handle:
        handle.write(
            json.dumps(
                {"type": "user", "timestamp": "2026-01-15T09:05:00Z", "message": {"role": "user", "content": "ship it"}}
            )
            + "\n"
        )
    third = sync.run(remote.cfg, remote)
    assert (third.turns_created, third.turns_unchanged) == (1, 0)
    stored = fake.turns[("claude-code", "5f0c3a9e-1b2d-4c3e-8f4a-0a1b2c3d4e5f")]
    assert stored[4] == ("user", "ship it")
    assert sorted(stored) == [0, 1, 2, 3, 4]


def test_an_interrupted_upload_resumes_after_the_last_acknowledged_batch(
    remote: Remote, fake: FakeSessions, local_env: dict[str, str]
) -> None:
    give_consent()
    big = Path(local_env["MMW_AGENT_CLAUDE_DIR"]) / "-p" / "big.jsonl"
    big.parent.mkdir()
    many_turns(big, 1200)
    fake.fail_after = 3  # the Claude fixture and two batches of 500 land, then the server "goes away"
    with pytest.raises(Unreachable):
        sync.run(remote.cfg, remote)
    assert len(fake.turns[("claude-code", "big")]) == 1000
    fake.fail_after = None
    posts = fake.turn_posts
    sync.run(remote.cfg, remote)
    assert sorted(fake.turns[("claude-code", "big")]) == list(range(1200))
    assert fake.turn_posts - posts == 2  # the big file's last 200, then the Codex fixture


def test_a_rewritten_file_is_read_again_and_changed_turns_are_reported_not_overwritten(
    remote: Remote, fake: FakeSessions, local_env: dict[str, str]
) -> None:
    give_consent()
    f = Path(local_env["MMW_AGENT_CLAUDE_DIR"]) / "-p" / "s.jsonl"
    f.parent.mkdir()
    many_turns(f, 3)
    sync.run(remote.cfg, remote)
    f.write_text("")
    many_turns(f, 2)  # shorter, same first turns: rewritten
    report = sync.run(remote.cfg, remote)
    assert (report.turns_created, report.turns_unchanged, report.turns_failed) == (0, 2, 0)
    f.write_text(
        json.dumps(
            {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": "something else entirely, and longer than before to change the head",
                },
            }
        )
        + "\n"
    )
    report = sync.run(remote.cfg, remote)
    assert report.turns_failed == 1
    assert "409 Conflict: turn 0 was stored with other content" in report.errors[0]
    assert fake.turns[("claude-code", "s")][0] == ("user", "message number 0")


def test_revoking_stops_the_next_batch(remote: Remote, fake: FakeSessions, local_env: dict[str, str]) -> None:
    give_consent()
    big = Path(local_env["MMW_AGENT_CLAUDE_DIR"]) / "-p" / "big.jsonl"
    big.parent.mkdir()
    many_turns(big, 1200)

    def revoke_in_the_big_file(label: str, done: int, total: int) -> None:
        if label.endswith("/big"):
            state.put(consent.KEY, {"given": False, "revoked_at": 1, "sources": []})

    with pytest.raises(sync.NoConsent):
        sync.run(remote.cfg, remote, revoke_in_the_big_file)
    assert len(fake.turns[("claude-code", "big")]) == 500  # the batch in flight, no more
    assert ("codex", "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b") not in fake.sessions
