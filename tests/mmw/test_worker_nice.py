"""A Celery worker lowers its own CPU priority before its pool forks (issue #37): computing vectors
must not take the CPU a request or /healthz waits for on the same cores."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from mmw import celery


def test_a_worker_is_niced_by_default_and_not_when_told(monkeypatch: pytest.MonkeyPatch) -> None:
    applied: list[int] = []
    monkeypatch.setattr(os, "nice", applied.append)
    monkeypatch.delenv("MMW_WORKER_NICE", raising=False)
    assert celery.lower_worker_priority() == 10
    monkeypatch.setenv("MMW_WORKER_NICE", "0")
    assert celery.lower_worker_priority() == 0
    assert applied == [10]


def test_the_signal_runs_at_worker_start_and_really_lowers_the_priority() -> None:
    """``worker_init`` is what a starting worker sends: its receiver changes the process's nice value."""
    script = (
        "import os; from mmw import celery; from celery.signals import worker_init; "
        "before = os.nice(0); worker_init.send(sender=None); print(os.nice(0) - before)"
    )
    env = {**os.environ, "MMW_WORKER_NICE": "3", "DJANGO_SETTINGS_MODULE": "mmw.settings.test"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "3"
