"""Every systemd unit, mount unit and fstab line the node steps write passes ``systemd-analyze verify``.

The files come from what the nodes really get: the rendered cloud-config of each shipped VM stack (units in
``write_files``, units written by a step's heredoc, fstab lines a step appends) and GCP's storage scripts
(rendered at deploy time from the file system's address). fstab lines go through systemd's own
``systemd-fstab-generator`` (what turns them into mount units at boot), then every unit through
``systemd-analyze verify`` (Debian's systemd; ``.ci/run`` installs it), the way cloud-config goes through
``cloud-init schema`` in tests/test_node_bootstrap.py.

A unit may need units only the node image has (Docker on GCP's image): those are stand-ins in
:data:`NODE_IMAGE_UNITS`; commands that packages a step installs are in :data:`NODE_COMMANDS`. Each says where it
comes from; nothing else is assumed.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from nodekit import STACKS, files_of, plan_of

from provision.ops.nodes import mock_user_data

SYSTEMD_ANALYZE = shutil.which("systemd-analyze")
FSTAB_GENERATOR = next(
    (
        p
        for p in (
            "/usr/lib/systemd/system-generators/systemd-fstab-generator",
            "/lib/systemd/system-generators/systemd-fstab-generator",
        )
        if os.access(p, os.X_OK)
    ),
    None,
)
UNIT_SUFFIXES = (".service", ".timer", ".mount", ".automount", ".socket", ".path", ".target")

#: Units the nodes' image (or an earlier step) provides, and the container running the suite does not.
NODE_IMAGE_UNITS = {
    # GCP's Deep Learning VM / COS images run Docker (GPUDirect-TCPX(O) receive path: "Run the RxDM container",
    # cloud.google.com/compute/docs/gpus/gpudirect); images/gcp/provision-rxdm.service requires it.
    "docker.service": "[Unit]\nDescription=stand-in: Docker of the node image\n[Service]\nExecStart=/bin/true\n",
}

#: Commands units run that packages a step installs on the node (absent from the container running the suite):
#: ``systemd-analyze verify`` reports them as "not executable"; only these are tolerated.
NODE_COMMANDS = {
    "/usr/bin/daos_agent": "daos-client (images/gcp/daos-client.sh installs it)",
    "/bin/dfuse": "daos-client (images/gcp/daos-client.sh installs it)",
    "/bin/fusermount3": "fuse3 (a dependency of daos-client)",
    # Ubuntu server images (Azure's Ubuntu-HPC image among them) ship iptables (priority "important" in Ubuntu's
    # archive: packages.ubuntu.com/jammy/iptables); provision-imds-root.service runs it.
    "/usr/sbin/iptables": "iptables (in Ubuntu's server and cloud images)",
}

_HEREDOC_UNIT = re.compile(r"cat >\s*(/etc/systemd/system/[\w@.-]+)\s*<<-?'?(\w+)'?\n(.*?)\n\2\n", re.S)
_FSTAB_REST = re.compile(r"""line="\$src"' (.*?)'$""", re.M)
_ECHO_FSTAB = re.compile(r"echo (\S+|'[^']*') >> /etc/fstab")


def _need(tool: str | None, name: str) -> None:
    if tool is None:
        if os.environ.get("CI"):
            pytest.fail(f"{name} is missing; .ci/run installs it")
        pytest.skip(f"{name} is not installed")


def _env_values(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        if "=" in line and not line.startswith("#"):
            key, _, value = line.partition("=")
            out[key] = " ".join(shlex.split(value)) if value else ""
    return out


def _from_scripts(scripts: list[str]) -> tuple[dict[str, str], list[str]]:
    units: dict[str, str] = {}
    fstab: list[str] = []
    for text in scripts:
        for path, _, body in _HEREDOC_UNIT.findall(text):
            units[Path(path).name] = body + "\n"
        fstab += [shlex.split(m)[0] for m in _ECHO_FSTAB.findall(text)]
    return units, fstab


def node_files(stack: str) -> tuple[dict[str, str], list[str]]:
    """(unit file name -> text, fstab lines) a node of ``stack`` writes."""
    plan = plan_of(stack)
    files = files_of(mock_user_data(plan))
    units = {
        Path(p).name: t for p, t in files.items() if p.startswith("/etc/systemd/system/") and p.endswith(UNIT_SUFFIXES)
    }
    scripts = [t for p, t in files.items() if not p.startswith("/etc/systemd/")]
    if plan.cloud == "gcp" and plan.storage is not None:  # GCP's mount scripts are rendered at deploy time
        from provision.clouds.gcp import storage

        # The address comes from project metadata at boot (the $src the lookup sets): a mocked one here.
        kind = plan.storage.kind
        mounted = {
            "managed-lustre": (
                "10.0.0.2@tcp:/lustrefs",
                lambda: storage._fstab_mount(plan, "lustre", "lustre-client.sh"),
            ),
            "filestore": ("10.0.0.3:/share", lambda: storage._fstab_mount(plan, "nfs", None)),
            "parallelstore": ('["10.0.0.4"]', lambda: storage._daos_mount(plan)),
        }
        src, script = mounted[kind][0], mounted[kind][1]()
        scripts.append(script.replace('"$line"', shlex.quote(src + " ".join([""] + _FSTAB_REST.findall(script)))))
    more_units, fstab = _from_scripts(scripts)
    units.update(more_units)
    env = _env_values(files.get("/etc/provision/bootstrap.env", ""))
    if env.get("SHARED_MOUNT"):  # images/common/steps/shared-mount.sh: printf '%s %s %s %s 0 0'
        source = env.get("SHARED_SOURCE") or "cpfs-domain.example.com:/share"  # looked up on the node (Alibaba CPFS)
        fstab.append(f"{source} {env['SHARED_MOUNT']} {env['SHARED_FSTYPE']} {env['SHARED_OPTIONS']} 0 0")
    return units, fstab


def verify(tmp: Path, units: dict[str, str], fstab: list[str]) -> subprocess.CompletedProcess[str]:
    """Generate the mount units of ``fstab`` with systemd's generator, then ``systemd-analyze verify`` all."""
    written, generated, image = tmp / "units", tmp / "generated", tmp / "image"
    for d in (written, generated, image):
        d.mkdir(parents=True, exist_ok=True)
    for name, text in units.items():
        (written / name).write_text(text)
    for name, text in NODE_IMAGE_UNITS.items():
        (image / name).write_text(text)
    (tmp / "fstab").write_text("".join(line + "\n" for line in fstab))
    env = {**os.environ, "SYSTEMD_FSTAB": str(tmp / "fstab"), "SYSTEMD_LOG_LEVEL": "notice"}
    gen = subprocess.run([FSTAB_GENERATOR, *[str(generated)] * 3], env=env, capture_output=True, text=True)
    assert gen.returncode == 0, f"systemd-fstab-generator refused the fstab:\n{''.join(fstab)}\n{gen.stderr}"
    targets = sorted(str(p) for d in (written, generated) for p in d.glob("*") if p.suffix in UNIT_SUFFIXES)
    assert targets, "nothing to verify"
    env["SYSTEMD_UNIT_PATH"] = f"{written}:{generated}:{image}:"  # the trailing ':' appends systemd's own path
    return subprocess.run([SYSTEMD_ANALYZE, "verify", "--man=no", *targets], env=env, capture_output=True, text=True)


@pytest.mark.parametrize("stack", STACKS)
def test_every_unit_mount_and_fstab_line_passes_systemd_analyze_verify(stack: str, tmp_path: Path) -> None:
    _need(SYSTEMD_ANALYZE, "systemd-analyze (apt-get install systemd)")
    _need(FSTAB_GENERATOR, "systemd-fstab-generator (apt-get install systemd)")
    units, fstab = node_files(stack)
    out = verify(tmp_path, units, fstab)
    problems = [
        line
        for line in out.stderr.splitlines()
        if line.strip()
        and not any(f"Command {cmd} is not executable: No such file or directory" in line for cmd in NODE_COMMANDS)
    ]
    assert not problems, (
        f"{stack}: systemd-analyze verify refused the node's units:\n{out.stdout}{out.stderr}\n"
        f"fstab:\n" + "\n".join(fstab)
    )


def test_verify_catches_a_mount_that_requires_a_missing_unit(tmp_path: Path) -> None:
    """The check can fail: an fstab line requiring a unit the node lacks (RHEL's network.service on Ubuntu)."""
    _need(SYSTEMD_ANALYZE, "systemd-analyze")
    _need(FSTAB_GENERATOR, "systemd-fstab-generator")
    line = "fs-1.fsx.us-east-1.amazonaws.com@tcp:/abc /shared lustre _netdev,x-systemd.requires=network.service 0 0"
    out = verify(tmp_path, {}, [line])
    assert out.returncode != 0
    assert "network.service" in out.stderr


def test_the_aws_shared_mount_survives_a_reboot() -> None:
    """The FSx fstab line must not require ``network.service``: Ubuntu 22.04 (the DLAMI) has no such unit, so
    after a reboot ``/shared``'s automount could not start its mount (systemd.mount(5), ``x-systemd.requires``)."""
    units, fstab = node_files("aws-p5-64")
    (line,) = [x for x in fstab if " /shared " in x]
    assert "network.service" not in line
    assert "_netdev" in line
