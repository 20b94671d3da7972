"""``mmw-agent`` in a real pseudo-terminal: what the interactive tests of the agent type and read."""

from __future__ import annotations

import os
import pty
import select
import time

from tests.agent.conftest import AGENT_CMD


def in_terminal(env: dict[str, str], args: list[str], prompt: bytes, answer: str) -> tuple[int, str]:
    """Run ``mmw-agent <args>`` with a pty as its terminal; type ``answer`` once ``prompt`` shows.
    Its exit code and everything it printed (within 60 s)."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: exec the agent
        os.execve(AGENT_CMD[0], [*AGENT_CMD, *args], env)  # noqa: S606 - exec the agent in the child
    output, typed = b"", False
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            output += chunk
        if not typed and prompt in output:
            os.write(fd, (answer + "\n").encode())
            typed = True
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), output.decode(errors="replace")
