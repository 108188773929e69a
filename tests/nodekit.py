"""Test helpers for node bootstraps: plans of the shipped stacks, and running a rendered bootstrap in a sandbox.

:func:`run_bootstrap` writes the files of a rendered ``#cloud-config`` under a sandbox root (as cloud-init
would), then runs the real runner with ``PROVISION_ROOT`` set and every system command (apt-get,
systemctl, mount, mdadm, curl, docker, ...) replaced by a stub that logs its arguments. Every path the
steps write is under ``PROVISION_ROOT``, so the host is never touched.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from conftest import FIXED_NOW, ROOT, stack_spec

from provision.clouds.base import get_adapter
from provision.planning.bootstrap import materialize, parse

#: The VM stacks: nodes of `scheduler: kubernetes` stacks run the managed service's node image, not our bootstrap.
STACKS = sorted(
    name
    for name in (p.name[len("Pulumi.") : -len(".yaml")] for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))
    if stack_spec(name).scheduler.kind == "none"
)

#: Commands a bootstrap may call that must not really run in a test.
STUBBED = [
    "apt-get",
    "apt-mark",
    "dpkg-query",
    "dpkg-deb",
    "systemctl",
    "curl",
    "mount",
    "umount",
    "mountpoint",
    "mdadm",
    "mkfs.xfs",
    "modprobe",
    "rmmod",
    "useradd",
    "id",
    "getent",
    "chown",
    "dkms",
    "docker",
    "udevadm",
    "ip",
    "shutdown",
    "fuser",
    "lsblk",
    "nvidia-ctk",
    "gpg",
    "iptables",
    "ldconfig",
    "lnetctl",
    "unzip",
    "lustre_rmmod",
    "add-nvidia-repositories",
    "sleep",
    "install",
    "tar",
    "aws",
]

STUB = """#!/bin/bash
name=$(basename "$0")
printf '%s\\n' "$name $*" >>"$STUB_LOG"
key=${name//[^A-Za-z0-9]/_}
out="STUB_OUT_$key"
code="STUB_EXIT_$key"
if [ -n "${!out:-}" ]; then printf '%s\\n' "${!out}"; fi
exit "${!code:-0}"
"""
#: Defaults that make the stubs answer like a fresh Ubuntu node.
STUB_DEFAULTS = {
    "STUB_EXIT_mountpoint": "1",  # nothing is mounted yet
    "STUB_EXIT_fuser": "1",  # nobody holds the dpkg lock
    "STUB_OUT_getent": "ubuntu:x:1000:1000::/home/ubuntu:/bin/bash",
    "STUB_OUT_id": "ubuntu",
    "STUB_OUT_lsblk": "",
    # Alibaba's boot-time file system lookup: one try against a closed local port, never the real metadata service.
    "PROVISION_FS_LOOKUP_ATTEMPTS": "1",
    "PROVISION_CPFS_METADATA": "http://127.0.0.1:9/latest",
    # Azure's boot-time filesystem address lookup (the fs-address step): one try.
    "PROVISION_FS_WAIT_SECONDS": "20",
    # `aws ssm get-parameter` of the FSx mount source (the fsx-source step), as the mocked cloud's FSx names it
    "STUB_OUT_aws": "fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com@tcp:/abcdefgh",
}
#: Directories an Ubuntu node has.
NODE_DIRS = [
    "etc/apt/apt.conf.d",
    "etc/apt/sources.list.d",
    "etc/apt/keyrings",
    "etc/sudoers.d",
    "etc/modprobe.d",
    "etc/modules-load.d",
    "etc/ld.so.conf.d",
    "etc/security/limits.d",
    "etc/systemd/system",
    "proc/sys/kernel/random",
    "var/lib/dpkg",
    "home/ubuntu",
    "var/log",
    "sys/class/net",
]


def plan_of(stack: str, **update: Any) -> Any:
    spec = stack_spec(stack)
    plan = get_adapter(spec.cloud).plan(spec, now=FIXED_NOW, owner="test")
    return plan.model_copy(update=update) if update else plan


def stubs(tmp: Path) -> Path:
    bin_dir = tmp / "stubs"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name in STUBBED:
        path = bin_dir / name
        path.write_text(STUB)
        path.chmod(0o755)
    if not (bin_dir / "python3").exists():
        (bin_dir / "python3").symlink_to(sys.executable)
    return bin_dir


def sandbox(tmp: Path, user_data: str) -> Path:
    root = tmp / "node"
    for d in NODE_DIRS:
        (root / d).mkdir(parents=True, exist_ok=True)
    (root / "proc/sys/kernel/random/boot_id").write_text("boot-1\n")
    materialize(user_data, root)
    return root


def run_bootstrap(tmp: Path, user_data: str, root: Path | None = None, **env: str) -> dict[str, Any]:
    """Run the rendered bootstrap's runner in a sandbox; returns ``{"rc", "state", "log", "root", "output"}``."""
    root = root or sandbox(tmp, user_data)
    log = tmp / "stub.log"
    full_env = {
        **os.environ,
        **STUB_DEFAULTS,
        "PATH": f"{stubs(tmp)}{os.pathsep}{os.environ.get('PATH', '')}",
        "PROVISION_ROOT": str(root),
        "PROVISION_NO_REBOOT": "1",
        "STUB_LOG": str(log),
        **env,
    }
    p = subprocess.run(
        # -S: the runner is standard library only (a real node has none of this venv's packages); without the
        # venv's site start-up (its .pth files) each run starts in about a third of the time.
        [sys.executable, "-S", str(root / "usr/local/lib/provision/provision-bootstrap")],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    state = json.loads((root / "var/lib/provision/bootstrap.json").read_text())
    return {
        "rc": p.returncode,
        "state": state,
        "log": log.read_text() if log.exists() else "",
        "root": root,
        "output": p.stdout + p.stderr,
    }


def run_step(tmp: Path, root: Path, step: str, bin_dir: Path | None = None, **env: str) -> dict[str, Any]:
    """Run one rendered step (``NN-<step>.sh``) in ``root`` with the stubs (``bin_dir``: stubs already written).

    Returns ``{"rc", "err", "log"}``.
    """
    script = next((root / "usr/local/lib/provision/steps").glob(f"*-{step}.sh"))
    log = tmp / "stub.log"
    full_env = {
        **os.environ,
        **STUB_DEFAULTS,
        "PATH": f"{bin_dir or stubs(tmp)}{os.pathsep}{os.environ.get('PATH', '')}",
        "PROVISION_ROOT": str(root),
        "STUB_LOG": str(log),
        **env,
    }
    p = subprocess.run(["bash", str(script)], env=full_env, capture_output=True, text=True, timeout=120)
    return {"rc": p.returncode, "err": p.stderr, "log": log.read_text() if log.exists() else ""}


def files_of(user_data: str) -> dict[str, str]:
    """Path -> content of every file the user data writes."""
    return {f["path"]: f["content"] for f in parse(user_data)["write_files"]}


def scripts_of(user_data: str) -> dict[str, str]:
    """Every shell script the user data writes (steps, the library, helpers)."""
    return {
        path: text
        for path, text in files_of(user_data).items()
        if path.endswith(".sh") or text.startswith("#!/bin/bash") or path.endswith(("/rxdm-run", "/provision-net"))
    }
