"""The README's SDK examples run as printed against a live server: ``pip install
./clients/python`` into a fresh virtualenv (var/sdk-readme, git-ignored) and its Python example;
``npm install ./clients/typescript`` in a scratch folder and its JavaScript example. Each is read
from README.md, so an example that stops working fails here."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from accounts.models import ALL_SCOPES
from tests import live
from tests.conftest import Tenancy
from tests.factories import issue_key
from tests.live import LiveServer

live_server = live.live_server
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / "var" / "sdk-readme"


def blocks() -> dict[str, list[str]]:
    """The fenced blocks of the README's SDK section, by language."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("### From Python and TypeScript: the SDKs", 1)[1].split("\n### ", 1)[0]
    found: dict[str, list[str]] = {}
    for language, code in re.findall(r"```(\w+)\n(.*?)```", section, flags=re.S):
        found.setdefault(language, []).append(code)
    return found


def run(command: list[str] | str, cwd: Path, env: dict[str, str], timeout: int = 600) -> str:
    done = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, shell=isinstance(command, str)
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


@pytest.fixture
def env(live_server: LiveServer, tenancy: Tenancy) -> dict[str, str]:
    key = issue_key(tenancy.alice.user, tenancy.alice.project, scopes=ALL_SCOPES, device_label="readme")
    return {**os.environ, "MMW_URL": str(live_server), "MMW_API_KEY": key}


def test_the_python_example_runs_as_printed(env: dict[str, str], tmp_path: Path) -> None:
    code = blocks()
    install = next(c for c in code["sh"] if "pip install" in c).strip()
    assert install == "pip install ./clients/python"
    if not (VENV / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    venv_env = {**env, "PATH": f"{VENV / 'bin'}{os.pathsep}{env['PATH']}", "VIRTUAL_ENV": str(VENV)}
    venv_env.pop("PYTHONPATH", None)
    # From a copy: a build writes build/ and *.egg-info beside the sources, and tests leave the tree as it was.
    shutil.copytree(
        ROOT / "clients" / "python",
        tmp_path / "clients" / "python",
        ignore=shutil.ignore_patterns("build", "*.egg-info"),
    )
    run(f"{install} --quiet --disable-pip-version-check", tmp_path, venv_env)
    (tmp_path / "example.py").write_text(code["python"][0])
    out = run([str(VENV / "bin" / "python"), str(tmp_path / "example.py")], tmp_path, venv_env)
    assert "version 1" in out
    assert "unverified Deploys go through staging first" in out


def test_the_typescript_example_runs_as_printed(env: dict[str, str], tmp_path: Path) -> None:
    code = blocks()
    install = next(c for c in code["sh"] if "npm install" in c).strip()
    assert install == "npm install ./clients/typescript"
    (tmp_path / "clients").mkdir()
    (tmp_path / "clients" / "typescript").symlink_to(ROOT / "clients" / "typescript")
    run(f"{install} --no-audit --no-fund --silent", tmp_path, env)
    (tmp_path / "example.mjs").write_text(code["js"][0])
    out = run(["node", "example.mjs"], tmp_path, env)
    assert "version 1" in out
    assert "unverified Deploys go through staging first" in out
