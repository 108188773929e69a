"""A Slurm cluster's per-cluster secret and per-node files, sent over SSH the way the node-to-node key is.

* the **munge key** (1024 random bytes, munge(7)'s recommended size, https://github.com/dun/munge/wiki/Installation-Guide
  "Creating a Secret Key") is made once per cluster on this machine, 0600 next to the node-to-node key
  (:func:`provision.ops.access.cluster_key`), and sent to each node on stdin; it is never in user data, in a
  command line or in Pulumi state;
* ``/etc/slurm/*.conf`` rendered by :mod:`provision.planning.slurm` from the plan and the nodes' addresses;
* the node's Slurm name (``/etc/provision/slurm-node``) and ``/etc/default/slurmd`` (``SLURMD_OPTIONS="-N NAME"``).

:func:`slurm_prepare_script` installs them as root (the key 0400, owned by ``munge``, as munged requires)
and restarts munge and the node's Slurm daemon. ``$PROVISION_ROOT`` prefixes every path (tests).
"""

from __future__ import annotations

import base64
import secrets
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from provision.spec.errors import CloudError

MUNGE_KEY = "/etc/munge/munge.key"
SLURM_DIR = "/etc/slurm"
NODE_NAME_FILE = "/etc/provision/slurm-node"
SLURMD_DEFAULTS = "/etc/default/slurmd"
KEY_BYTES = 1024


def munge_key(cluster: Any) -> Path:
    """The cluster's munge key file (made once, 0600, beside the node-to-node key)."""
    from provision.ops.access import ssh_dir

    path = ssh_dir(cluster) / "munge.key"
    if not path.exists():
        path.touch(mode=0o600)
        path.write_bytes(secrets.token_bytes(KEY_BYTES))
    path.chmod(0o600)
    return path


def slurm_payload(files: Mapping[str, str], key: bytes, node_name: str | None) -> str:
    """The records (``path\\nbase64\\n``) a node gets: the key, ``/etc/slurm/<name>`` per rendered file and,
    for a GPU node, its Slurm name and slurmd's options."""
    records: list[tuple[str, bytes]] = [(MUNGE_KEY, key)]
    records += [(f"{SLURM_DIR}/{name}", text.encode()) for name, text in sorted(files.items())]
    if node_name is not None:
        records += [
            (NODE_NAME_FILE, f"{node_name}\n".encode()),
            (SLURMD_DEFAULTS, f'SLURMD_OPTIONS="-N {node_name}"\n'.encode()),
        ]
    return "".join(f"{p}\n{base64.b64encode(b).decode()}\n" for p, b in records)


def slurm_prepare_script() -> str:
    """The root script that installs :func:`slurm_payload`'s records and restarts the daemons (none in a sandbox)."""
    return (
        'set -eu; umask 077; R="${PROVISION_ROOT:-}"; '
        f'install -d -m 0755 "$R{SLURM_DIR}" "$R/etc/default" "$R/etc/provision"; install -d -m 0700 "$R/etc/munge"; '
        "while IFS= read -r p && IFS= read -r b; do "
        f'case "$p" in {MUNGE_KEY}) m=0400; o=munge;; *) m=0644; o=root;; esac; '
        'printf %s "$b" | base64 -d > "$R$p.tmp"; chmod "$m" "$R$p.tmp"; chown "$o:" "$R$p.tmp"; mv "$R$p.tmp" "$R$p"; '
        "done; "
        f'chown munge: "$R/etc/munge"; '
        'if [ -z "$R" ]; then systemctl restart munge; '
        "if systemctl cat slurmctld >/dev/null 2>&1; then systemctl restart slurmctld; fi; "
        "if systemctl cat slurmd >/dev/null 2>&1; then systemctl restart slurmd; fi; fi"
    )


def prepare_slurm_nodes(
    cluster: Any, files: Mapping[str, str], *, timeout: float = 120, sudo: str = "sudo -n"
) -> list[Any]:
    """Send every GPU node the munge key, the rendered files and its Slurm name (``<cluster>-<rank>``), on stdin.

    Raises:
        CloudError: a node could not be written (names the nodes).
    """
    from provision.ops.exec import run_on_nodes
    from provision.planning.slurm import node_names

    key = munge_key(cluster).read_bytes()
    names = node_names(cluster.spec.name, len(cluster.outputs.get("hosts") or []))
    script = f"{sudo} bash -c {shlex.quote(slurm_prepare_script())}".strip()
    wrote = run_on_nodes(cluster, script, timeout=timeout, stdin=lambda r: slurm_payload(files, key, names[r]))
    failed = [r for r in wrote if not r.ok]
    if failed:
        raise CloudError(
            "cannot set up Slurm on " + ", ".join(f"{r.node} ({r.error or r.stderr.strip()})" for r in failed)
        )
    return wrote
