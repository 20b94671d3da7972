"""The ``mmw-agent`` command.

mmw-agent                         the stdio MCP server (what MCP clients start)
mmw-agent login --url URL       (asks for the key; or pipe it on stdin)
mmw-agent status [--json]
mmw-agent consent [--revoke]
mmw-agent sync [--json]
"""

from __future__ import annotations

import argparse
import getpass
import json
import logging
import sys
from typing import Any

import anyio

from mmw_agent import config, consent, proxy, state, status, sync
from mmw_agent.config import Config, ConfigError
from mmw_agent.remote import KeyRefused, Remote, Unreachable, error_message


def _read_key(args: argparse.Namespace) -> str | None:
    """The key: asked for in a terminal (not echoed), else one line of stdin (``… | mmw-agent
    login --url URL``); ``--key`` still works but leaves the key in the shell's history."""
    if args.key:
        print("mmw-agent: --key leaves the key in your shell history; next time let login ask for it.", file=sys.stderr)
        return str(args.key)
    if sys.stdin.isatty():
        return getpass.getpass("API key (mmw_…, not shown as you type): ").strip() or None
    line = sys.stdin.readline().strip()
    return line or None


def _login(args: argparse.Namespace) -> int:
    url = config.normalise_url(args.url)
    key = _read_key(args)
    if not key:
        print("login failed: no API key given (type it at the prompt, or pipe it on stdin)", file=sys.stderr)
        return 2
    cfg = Config(url=url, key=key)
    remote = Remote(cfg, timeout=15.0)
    try:
        response = remote.rest("GET", "/workspaces")
    except (Unreachable, KeyRefused) as exc:
        print(f"login failed: {exc}", file=sys.stderr)
        return 1
    if response.status_code != 200:
        print(f"login failed: {error_message(response)}", file=sys.stderr)
        return 1
    answer: dict[str, Any] = response.json()
    stored = config.read_stored()
    stored.update(url=url, key=key, tenant_id=answer.get("tenant_id") or "", project_id=answer.get("project_id") or "")
    path = config.save(stored)
    state.note_contact(ok=True)
    print(f"Logged in to {url} as {consent.scope_words(remote, stored['project_id'])}; saved to {path}")
    return 0


def _status(cfg: Config, args: argparse.Namespace) -> int:
    remote = Remote(cfg, timeout=5.0)
    status.check_server(remote)
    report = status.collect(cfg)
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
        return 0
    given = report["consent"]
    print(f"server        {report['server']}  reachable: {report['reachable']}  last contact: {report['last_contact']}")
    if given["given"]:
        print(f"consent       given {given['at']} for {', '.join(given['sources'])}")
    elif given["revoked_at"]:
        print(f"consent       revoked {given['revoked_at']} (nothing is uploaded)")
    else:
        print("consent       not given (nothing is uploaded; run `mmw-agent consent`)")
    for source in report["sources"]:
        print(f"source        {source['client']}: {source['session_files']} session files in {source['folder']}")
    s, t = report["sessions"], report["turns"]
    print(f"sessions      uploaded {s['uploaded']}, {_pending(s['pending'])}, failed {s['failed']}")
    print(f"turns         uploaded {t['uploaded']}, {_pending(t['pending'])}, failed {t['failed']}")
    print(f"vectors       {_awaiting(report['awaiting_vectors'])}")
    q = report["queued_writes"]
    print(f"queued writes pending {q['pending']}, replayed {q['done']}, refused {q['failed']}")
    if report["last_error"]:
        print(f"last error    {report['last_error']['at']}: {report['last_error']['message']}")
    return 0


def _awaiting(noted: dict[str, Any] | None) -> str:
    """What the server said waits for its vector, in words."""
    if noted is None:
        return "not reported by the server"
    if not noted["turns"] and not noted["records"]:
        return "everything uploaded is findable by meaning"
    return (
        f"{noted['turns']} turns and {noted['records']} records awaiting their vectors on the server "
        "(found by keywords meanwhile; counted up to 1000)"
    )


def _pending(count: object) -> str:
    return "pending: counted after consent" if count is None else f"pending {count}"


def _sync(cfg: Config, args: argparse.Namespace) -> int:
    """Send the queued writes (as the MCP server's replay would), then upload new sessions when
    consent was given; report in words (``--json``: one JSON object)."""
    remote = Remote(cfg)
    before = state.queue_counts()
    anyio.run(proxy.Proxy(cfg).replay)
    after = state.queue_counts()
    writes = {
        "sent": after["done"] - before["done"],
        "refused": after["failed"] - before["failed"],
        "waiting": after["pending"],
    }
    answer: dict[str, Any] = {"queued_writes": writes}
    no_consent = ""
    try:
        consent.flush_pending(remote)
        report = sync.run(cfg, remote, None if args.json else sync.terminal_progress)
    except sync.NoConsent as exc:
        answer["sessions"] = None
        no_consent = str(exc)
    except (Unreachable, KeyRefused) as exc:
        state.note_contact(ok=False, error=str(exc))
        print(f"sync stopped: {exc} (what was acknowledged is kept; run it again later)", file=sys.stderr)
        return 1
    else:
        state.note_contact(ok=True)
        answer["sessions"] = report.as_dict()
        if report.errors:
            state.note_error(report.errors[-1])
    status.check_server(remote)  # what still waits for its vector, for the words and `status`
    answer["awaiting_vectors"] = status.awaiting()
    if args.json:
        extra = {"awaiting_vectors": answer.get("awaiting_vectors")}
        print(json.dumps({**(answer["sessions"] or {}), "queued_writes": writes, **extra}, ensure_ascii=False))
    else:
        print(_sync_words(answer))
    if no_consent:
        print(no_consent, file=sys.stderr)
        return 2  # uploads are off (the queued writes, which are not uploads, were sent)
    return 0


def _sync_words(answer: dict[str, Any]) -> str:
    w = answer["queued_writes"]
    lines = [f"Queued writes: {w['sent']} sent, {w['refused']} refused, {w['waiting']} still waiting."]
    if w["refused"]:
        lines.append("  The server refused some: `mmw-agent status` lists them with its reason.")
    r = answer["sessions"]
    if r is None:
        lines.append("Sessions: not uploaded (no consent; run `mmw-agent consent`).")
    else:
        lines.append(
            f"Sessions: {r['sessions']} sent from {r['files']} files; turns {r['turns_created']} new, "
            f"{r['turns_unchanged']} already there, {r['turns_failed']} failed."
        )
        lines += [f"  error: {e}" for e in r["errors"]]
    if "awaiting_vectors" in answer:
        lines.append(f"Vectors: {_awaiting(answer['awaiting_vectors'])}.")
    return "\n".join(lines)


def _consent(cfg: Config, args: argparse.Namespace) -> int:
    remote = Remote(cfg, timeout=15.0)
    if args.revoke:
        return consent.revoke(cfg, remote)
    return consent.ask(cfg, remote)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mmw-agent", description="MMW's local agent (no command: the stdio MCP server)")
    sub = p.add_subparsers(dest="command")
    login = sub.add_parser("login", help="check the key against the server and store it (mode 0600)")
    login.add_argument("--url", required=True, help="the server's base URL, e.g. https://mmw.example.com")
    login.add_argument(
        "--key", help="an API key (mmw_…); better left out: login then asks for it (or reads it from stdin)"
    )
    st = sub.add_parser("status", help="server, consent, uploads, queued writes")
    st.add_argument("--json", action="store_true")
    c = sub.add_parser("consent", help="allow uploading session history (asks in the terminal)")
    c.add_argument("--revoke", action="store_true", help="stop all uploads now and tell the server")
    sy = sub.add_parser("sync", help="send queued writes and upload new sessions and turns now")
    sy.add_argument("--json", action="store_true", help="one JSON object instead of sentences")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="mmw-agent: %(levelname)s %(message)s")
    try:
        if args.command == "login":
            return _login(args)
        cfg = config.load()
        if args.command is None:
            anyio.run(proxy.serve, cfg)
            return 0
        if args.command == "status":
            return _status(cfg, args)
        if args.command == "consent":
            return _consent(cfg, args)
        if args.command == "sync":
            return _sync(cfg, args)
    except ConfigError as exc:
        print(f"mmw-agent: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 2


if __name__ == "__main__":
    sys.exit(main())
