"""``pip install ./agent`` builds in ``agent/build/`` (setuptools, in the source tree): that folder
is ignored, so a checkout stays clean after the README's install (issue #40, item 8)."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_agent_s_build_folder_is_ignored() -> None:
    for built in (
        "agent/build/lib/mmw_agent/cli.py",
        "agent/build/bdist.linux-x86_64/wheel/x",
        "agent/mmw_agent.egg-info/PKG-INFO",
    ):
        done = subprocess.run(["git", "check-ignore", "-q", built], cwd=ROOT, check=False)
        assert done.returncode == 0, f"{built} would show as untracked"
    kept = subprocess.run(["git", "check-ignore", "-q", "agent/mmw_agent/cli.py"], cwd=ROOT, check=False)
    assert kept.returncode == 1  # the sources themselves are not ignored
