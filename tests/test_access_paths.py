"""The way into each cloud's private nodes, as the generated ssh_config carries it (shipped stacks, mocked)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from conftest import isolated_home, preview, shipped_preview, stack_spec
from typer.testing import CliRunner

from provision.cli.app import app
from provision.planning.access import NEEDS, access_path, render_ssh_config
from provision.spec import load_spec

runner = CliRunner()


def _hosts(config: str) -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = {}
    current: dict[str, str] = {}
    for line in config.splitlines():
        if line.startswith("Host "):
            current = found.setdefault(line.split()[1], {})
        elif line.strip():
            key, value = line.strip().split(" ", 1)
            current[key] = value
    return found


def test_aws_nodes_are_reached_through_ssm_session_manager_by_instance_id() -> None:
    run = shipped_preview("aws-p5-16", stack="aws-p5-16")
    hosts = _hosts(run.outputs["ssh_config"])
    ids = run.outputs["access"]["node_ids"]
    assert len(hosts) == 2 and all(i.startswith("i-") for i in ids)
    proxy = shlex.split(hosts["aws-p5-16-1"]["ProxyCommand"])
    assert proxy[:5] == ["aws", "ssm", "start-session", "--target", ids[1]]
    assert "AWS-StartSSHSession" in proxy and "portNumber=%p" in proxy and proxy[-1] == "us-east-1"
    assert run.outputs["access"]["needs"] == NEEDS["ssm"]


def test_gcp_nodes_are_reached_through_iap_with_the_firewall_for_googles_range() -> None:
    run = shipped_preview("gcp-a3-64", stack="gcp-a3-64")
    names = run.outputs["access"]["node_ids"]
    hosts = _hosts(run.outputs["ssh_config"])
    proxy = shlex.split(hosts["llm-train-3"]["ProxyCommand"])
    assert proxy[:6] == ["gcloud", "compute", "start-iap-tunnel", names[3], "%p", "--listen-on-stdin"]
    assert proxy[6:8] == ["--zone", "us-central1-a"] and "--project" in proxy
    rules = [
        r for r in run.of_type("gcp:compute/firewall:Firewall") if "35.235.240.0/20" in r.inputs.get("sourceRanges", [])
    ]
    assert len(rules) == 1 and rules[0].inputs["allows"] == [{"ports": ["22"], "protocol": "tcp"}]


def test_gcp_iap_can_be_turned_off() -> None:
    data = stack_spec("gcp-a3-64").model_dump(mode="json", exclude_none=True)
    data["gcp"]["allow_iap_ssh"] = False
    run = preview(load_spec(data), stack="gcp-a3-64")
    assert run.outputs["access"]["via"] == "direct" and "ProxyCommand" not in run.outputs["ssh_config"]
    assert not any("35.235.240.0/20" in r.inputs.get("sourceRanges", []) for r in run.resources)


def test_an_opted_in_public_head_node_is_the_jump_host_for_the_others() -> None:
    data = stack_spec("alibaba-gn8-64").model_dump(mode="json", exclude_none=True)
    data["access"]["public_head_node"] = True
    run = preview(load_spec(data), stack="alibaba-gn8-64")
    hosts = _hosts(run.outputs["ssh_config"])
    public = run.outputs["access"]["head_public_ip"]
    assert public and hosts["alibaba-gn8-64-0"]["HostName"] == public
    assert all(hosts[f"alibaba-gn8-64-{r}"]["ProxyJump"] == "alibaba-gn8-64-0" for r in range(1, 8))
    assert "ProxyJump" not in hosts["alibaba-gn8-64-0"]


def test_without_a_private_path_the_config_names_private_ips_and_says_what_is_needed() -> None:
    run = shipped_preview("azure-ndh100-64", stack="azure-ndh100-64")
    assert run.outputs["access"]["via"] == "direct"
    assert "VPN" in run.outputs["access"]["needs"]


def test_identity_file_comes_from_the_users_key_matching_the_spec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolated_home(tmp_path, monkeypatch)
    monkeypatch.chdir(tmp_path)
    user = tmp_path / "user"
    (user / ".ssh").mkdir(parents=True)
    key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHByb3Zpc2lvbi1leGFtcGxlLWtleS1kby1ub3QtdXNl"
    (user / ".ssh" / "other.pub").write_text("ssh-ed25519 AAAAOTHER x\n")
    (user / ".ssh" / "other").write_text("private")
    (user / ".ssh" / "work.pub").write_text(f"{key} me@laptop\n")
    (user / ".ssh" / "work").write_text("private")
    monkeypatch.setenv("HOME", str(user))
    monkeypatch.delenv("PROVISION_SSH_IDENTITY", raising=False)
    spec = tmp_path / "c.yaml"
    spec.write_text(
        "name: idt\ncloud: aws\nregion: us-east-1\ngpu: H100\ngpus: 16\n"
        f"access: {{ssh_public_keys: ['{key} spec-comment']}}\nlifetime: {{ttl: 2h}}\n"
    )
    assert runner.invoke(app, ["up", str(spec), "--mock", "--yes"]).exit_code == 0
    printed = runner.invoke(app, ["ssh", "idt", "--print", "--mock"])
    config = Path(shlex.split(printed.stdout)[2]).read_text()
    assert f"IdentityFile {user / '.ssh' / 'work'}" in config and "IdentitiesOnly yes" in config
    monkeypatch.setenv("PROVISION_SSH_IDENTITY", "~/keys/ci")
    printed = runner.invoke(app, ["ssh", "idt", "1", "--print", "--mock", "--", "nvidia-smi", "-L"])
    argv = shlex.split(printed.stdout)
    assert argv[-3:] == ["idt-1", "--", "nvidia-smi -L"]  # the words as one quoted remote command
    assert f"IdentityFile {user / 'keys' / 'ci'}" in Path(argv[2]).read_text()


def test_access_path_is_pure_and_per_cloud() -> None:
    from provision.clouds.base import plan_spec

    assert access_path(plan_spec(stack_spec("aws-p5-16")))["via"] == "ssm"
    assert access_path(plan_spec(stack_spec("gcp-a3-64")))["via"] == "iap"
    text = render_ssh_config("c", ["10.0.0.1"], {"via": "direct", "user": "u"}, identity_file="/k", known_hosts="/kh")
    assert "HostKeyAlias c-0" in text and "UserKnownHostsFile /kh" in text and "IdentityFile /k" in text


def test_every_command_help_ends_with_an_example() -> None:
    import typer.main

    from provision.cli.app import app as the_app

    group = typer.main.get_command(the_app)
    missing = []
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        if command.hidden:
            continue
        text = runner.invoke(the_app, [name, "--help"]).stdout
        if "Example: provision " not in text:
            missing.append(name)
    assert missing == []


def test_version_and_completion_options() -> None:
    from provision import __version__

    assert runner.invoke(app, ["--version"]).stdout.strip() == f"provision {__version__}"
    assert "--install-completion" in runner.invoke(app, ["--help"]).stdout


def test_status_shows_the_nodes_and_fits_80_columns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolated_home(tmp_path, monkeypatch)
    monkeypatch.delenv("COLUMNS", raising=False)
    assert runner.invoke(app, ["up", "gcp-a3-64", "--mock", "--yes"]).exit_code == 0
    doc = runner.invoke(app, ["status", "gcp-a3-64", "--mock", "--json"])
    nodes = __import__("json").loads(doc.stdout)["nodes"]
    assert [n["name"] for n in nodes] == [f"llm-train-{r}" for r in range(8)]
    assert all(n["state"] == "running" and n["address"] for n in nodes)
    text = runner.invoke(app, ["status", "llm-train", "--mock"]).stdout  # the cluster name works too
    assert "llm-train-7" in text and "(cluster llm-train)" in text
    assert max(len(line) for line in text.splitlines()) <= 80
    down = runner.invoke(app, ["down", "llm-train", "--mock", "--yes"])
    deleted = [line for line in down.output.splitlines() if line.strip().startswith("delete")]
    assert len(deleted) == len({line.strip() for line in deleted}) > 0  # each deletion printed once


def test_enum_options_are_case_insensitive() -> None:
    upper = runner.invoke(app, ["offers", "--cloud", "GCP", "--json"])
    assert upper.exit_code == 0 and {r["cloud"] for r in __import__("json").loads(upper.stdout)} == {"gcp"}
