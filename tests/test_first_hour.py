"""First-hour polish: the Azure Bastion ProxyCommand by absolute path, `ssh-config --install` for VS Code,
`size --plot` without colour codes under NO_COLOR."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from conftest import MINIMAL_SPEC, isolated_home
from typer.testing import CliRunner

from provision.cli.app import app

runner = CliRunner()


def test_bastion_proxy_command_names_this_interpreter_not_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from provision.ops.access import ssh_config_text

    isolated_home(tmp_path, monkeypatch)
    outputs = {
        "cluster": "az",
        "hosts": ["10.0.0.4"],
        "access": {"via": "bastion", "user": "u", "bastion": {"name": "az-b", "resource_group": "az-rg"}},
    }
    spec = SimpleNamespace(name="az", access=SimpleNamespace(ssh_user="u", ssh_public_keys=()))
    text = ssh_config_text(SimpleNamespace(spec=spec, stack="az", mock=False, outputs=outputs))
    line = next(x.strip() for x in text.splitlines() if "ProxyCommand" in x)
    assert line.startswith(f"ProxyCommand {sys.executable} -m provision.cli proxy azure-bastion --name az-b")
    # ssh runs it with an empty PATH too.
    done = subprocess.run(
        ["/bin/sh", "-c", line.split(" ", 1)[1].split(" proxy ")[0] + " --version"],
        env={"PATH": "", "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0 and done.stdout.startswith("provision ")


def test_ssh_config_install_adds_one_include_before_the_users_hosts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = isolated_home(tmp_path, monkeypatch)
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    user_config = tmp_path / "user" / ".ssh" / "config"
    user_config.parent.mkdir(parents=True)
    user_config.write_text("Host gh\n  HostName github.com\n")
    spec = tmp_path / "c.yaml"
    spec.write_text(yaml.safe_dump({**MINIMAL_SPEC, "name": "vsc"}))
    assert runner.invoke(app, ["up", str(spec), "--mock", "--yes"]).exit_code == 0
    for _ in range(2):  # idempotent
        out = runner.invoke(app, ["ssh-config", "--install", "--mock"])
        assert out.exit_code == 0, out.output
    text = user_config.read_text()
    include = f"Include {home / 'ssh' / '*' / 'config'}"
    assert text.count(include) == 1 and text.index(include) < text.index("Host gh")
    assert (home / "ssh" / "vsc" / "config").read_text().count("Host vsc-") == 2
    assert oct(user_config.stat().st_mode & 0o777) == "0o600"
    # ssh itself resolves a node through the Include.
    if subprocess.run(["which", "ssh"], capture_output=True).returncode == 0:
        shown = subprocess.run(["ssh", "-F", str(user_config), "-G", "vsc-1"], capture_output=True, text=True)
        assert "hostname 10.0.0.11" in shown.stdout.lower(), shown.stdout[:500]


def test_size_plot_has_no_colour_codes_under_no_color(tmp_path: Path) -> None:
    pytest.importorskip("plotext")
    import os

    # A pseudo-terminal (colour would be on) with NO_COLOR set: the chart has no SGR codes.
    import pty

    argv = ["provision", "size", "--params", "7B", "--tokens", "2T", "--plot"]
    script = f"import sys; from provision.cli import main; sys.argv={argv!r}; main()"
    out_chunks: list[bytes] = []

    def read(fd: int) -> bytes:
        data = os.read(fd, 65536)
        out_chunks.append(data)
        return data

    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "100"}
    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - the child
        os.execve(sys.executable, [sys.executable, "-c", script], env)
    try:
        while True:
            read(fd)
    except OSError:
        pass
    os.waitpid(pid, 0)
    text = b"".join(out_chunks).decode(errors="replace")
    chart = text[text.index("training time by cluster size") :]
    assert "\x1b[" not in chart


def test_up_prints_a_summary_not_a_line_per_node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolated_home(tmp_path, monkeypatch)
    spec = tmp_path / "c.yaml"
    spec.write_text(yaml.safe_dump({**MINIMAL_SPEC, "name": "big", "nodes": 32}))
    up = runner.invoke(app, ["up", str(spec), "--mock", "--yes"])
    assert up.exit_code == 0, up.output
    assert "hostfile: 32 nodes (provision outputs big hostfile)" in up.stdout
    assert "slots=8" not in up.stdout and "Host big-31" not in up.stdout
    full = runner.invoke(app, ["outputs", "big", "hostfile", "--mock"])
    assert full.stdout.count("slots=8") == 32
