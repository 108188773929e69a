"""Ctrl-C at any moment of ``provision up --mock --json`` (issue 12.5: 130 on interrupt, one JSON document).

Before: of 36 runs interrupted 0.9-1.45 s in, 2 hung forever (Pulumi's ``_sync_await`` waiting on a
task the interrupt had broken), 9 printed asyncio's "does not match the current task" traceback,
and a Ctrl-C after the result was printed killed the process by the signal (exit -2).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, default_signals

from provision.engine.mockrun import _interrupt_stops_the_loop


def test_a_ctrl_c_stops_the_loop_between_steps_and_restores_the_handler() -> None:
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        with _interrupt_stops_the_loop() as interrupted:
            never = loop.create_future()  # what a broken task left Pulumi waiting on
            loop.call_later(0.05, signal.raise_signal, signal.SIGINT)
            with pytest.raises(RuntimeError, match="stopped before Future completed"):
                loop.run_until_complete(never)
        assert interrupted == [True]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        loop.close()
        asyncio.set_event_loop(asyncio.new_event_loop())


def test_a_running_loop_is_left_alone() -> None:
    async def inside() -> list[bool]:
        with _interrupt_stops_the_loop() as interrupted:
            return interrupted

    assert asyncio.run(inside()) == []
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.parametrize("delay", [0.5, 0.9, 1.1, 1.3, 1.6, 2.4])
def test_an_interrupted_up_exits_0_or_130_with_one_json_document(tmp_path: Path, delay: float) -> None:
    env = {**os.environ, "PROVISION_HOME": str(tmp_path / "home"), "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "provision.cli", "up", "aws-p5-ci", "--mock", "--yes", "--json"]
    proc = subprocess.Popen(  # SIGINT's default action, even under a background shell that ignores it
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
        cwd=tmp_path,
        preexec_fn=default_signals,
    )
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail(f"still running 90 s after a Ctrl-C at {delay}s")
    assert proc.returncode in (0, 130), (proc.returncode, err[-500:])
    doc = json.loads(out)
    assert (doc.get("error") == "Interrupted") == (proc.returncode == 130)
    assert "Traceback" not in err and "does not match the current task" not in err
    down = subprocess.run([*cmd[:3], "down", "aws-p5-ci", "--mock", "--yes", "--json"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=90)  # fmt: skip
    assert down.returncode == 0 and not (tmp_path / "home" / "mock" / "aws-p5-ci.json").exists()


def test_a_ctrl_c_while_the_arguments_are_parsed_still_prints_the_interrupted_document(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Parsing the arguments (click's ``make_context``) imports the commands: typer turns a Ctrl-C there into a
    silent ``Exit(130)``, which left ``--json`` callers with empty output (seen at 0.9 s under load)."""
    import typer
    from typer.core import TyperGroup

    from provision.cli.app import build_app

    def interrupted(self: Any, ctx: Any, args: list[str]) -> list[str]:
        raise KeyboardInterrupt

    monkeypatch.setattr(TyperGroup, "parse_args", interrupted)
    group = typer.main.get_command(build_app())
    with pytest.raises(SystemExit) as done:
        group.main(["list", "--json"], prog_name="provision")
    assert done.value.code == 130
    out, err = capsys.readouterr()
    assert json.loads(out)["error"] == "Interrupted" and "interrupted" in err


def test_a_ctrl_c_swallowed_as_unraisable_is_delivered_again() -> None:
    """Python cannot raise from a finalizer, a weakref callback or a C extension's callback: a ``KeyboardInterrupt``
    that lands there is printed as "Exception ignored in" and lost (pydantic-core compiling a spec pattern while the
    command loads its models, seen in the suite as an ``up`` that ran on after the Ctrl-C)."""
    from provision.cli import interrupts_not_lost

    class Dropped:
        def __del__(self) -> None:
            raise KeyboardInterrupt

    seen: list[Any] = []
    before = sys.unraisablehook
    sys.unraisablehook = seen.append  # what would otherwise be printed
    try:
        with pytest.raises(KeyboardInterrupt), interrupts_not_lost():
            Dropped()
            for _ in range(1000):  # ordinary code: where the interrupt arrives again
                pass
        assert seen == []
        Dropped()  # outside the block the caller's hook gets it, and nothing is delivered again
        assert [type(u.exc_value) for u in seen] == [KeyboardInterrupt]
    finally:
        sys.unraisablehook = before


def test_an_up_whose_ctrl_c_a_finalizer_swallowed_still_exits_130(tmp_path: Path) -> None:
    """End to end: the interrupt lands in a finalizer as the command starts; the ``up`` must not run on to exit 0."""
    script = tmp_path / "entry.py"
    script.write_text(
        "import sys\n"
        "import provision.cli.app as app\n"
        "run = app.main\n"
        "class Dropped:\n"
        "    def __del__(self):\n"
        "        raise KeyboardInterrupt\n"
        "def interrupted_run():\n"
        "    Dropped()\n"
        "    run()\n"
        "app.main = interrupted_run\n"
        "sys.argv = ['provision', 'up', 'aws-p5-ci', '--mock', '--yes', '--json']\n"
        "from provision.cli import main\n"
        "main()\n"
    )
    env = {**os.environ, "PROVISION_HOME": str(tmp_path / "home"), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(script)], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=90, preexec_fn=default_signals)  # fmt: skip
    assert done.returncode == 130, (done.returncode, done.stderr[-500:])
    assert json.loads(done.stdout)["error"] == "Interrupted"
    assert "Exception ignored" not in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "home" / "mock" / "aws-p5-ci.json").exists()
