"""Host keys verified from the cloud, not trusted on first use.

When the cloud reports the nodes' host keys (read through its API, which authenticates the
node: the key a node publishes at boot), every connection checks the node against them: the keys
are written into the cluster's known_hosts *before* the first connection, so a node presenting
another key is refused. A node that was replaced (a new VM behind the same rank) has a new key in
the cloud's report: it is re-pinned with a message, and the ``prepared-*`` markers are dropped so
the next ``launch`` prepares the nodes again (the others' ``/etc/provision/known_hosts`` must learn
the new key too). Without a report from the cloud the first contact still records the key it sees.

:func:`cloud_host_keys` reads the report: the ``host_keys`` output of the cluster (alias or rank
to ``ssh-ed25519 <base64>``) when a program filled it, else the cloud's API with the user's
credentials (:func:`read_from_cloud`): EC2 console output (:mod:`provision.clouds.aws.hostkeys`),
Compute Engine guest attributes (:mod:`provision.clouds.gcp.hostkeys`), ECS console output
(:mod:`provision.clouds.alibaba.hostkeys`, by the instance ids in ``access.node_ids``), the boot
diagnostics serial logs of the VMs of the scale sets the ``scale_sets`` output names
(:mod:`provision.clouds.azure.hostkeys`). A Slurm cluster's controller (``<name>-ctl``) is read the same way, by
the instance the ``slurm`` output names (on Azure: its own VM's serial log).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

_KEY = re.compile(r"^(ssh-ed25519|ecdsa-sha2-nistp256|ssh-rsa) [A-Za-z0-9+/]+={0,2}$")


def read_from_cloud(cluster: Any) -> dict[int | str, str]:
    """``rank -> "type base64"`` read from the cloud's API for the nodes the outputs name, plus ``<name>-ctl`` for
    a Slurm cluster's controller (the ``slurm`` output's instance); ``{}`` if none.

    Only the machines' identities in the cloud (instance ids / names from the stack outputs) are used,
    never an address or a key the machines answer with.
    """
    outputs = getattr(cluster, "outputs", None) or {}
    if getattr(cluster, "mock", False):
        return {}
    out: dict[int | str, str] = {rank: key for rank, key in _read_nodes(cluster, outputs).items()}
    slurm = outputs.get("slurm")
    instance = str(slurm.get("instance_id") or "") if isinstance(slurm, dict) else ""
    if instance:
        key = _read_controller(cluster, outputs, instance)
        if key:
            out[f"{cluster.spec.name}-ctl"] = key
    return out


def _gcp_where(cluster: Any, outputs: dict[str, Any]) -> tuple[str | None, str | None]:
    """Where the MIG put the nodes, as the stack reports it: the hosts' internal DNS names
    (NAME.ZONE.c.PROJECT.internal), else the zone / project outputs; the spec last."""
    access = dict(outputs.get("access") or {})
    dns = str((outputs.get("hosts") or [""])[0] or "").split(".")
    zone, project = (dns[1], dns[3]) if len(dns) == 5 and dns[2] == "c" and dns[4] == "internal" else (None, None)
    options = cluster.spec.cloud_options() if callable(getattr(cluster.spec, "cloud_options", None)) else None
    project = project or outputs.get("project") or access.get("project") or getattr(options, "project", None)
    zone = zone or outputs.get("zone") or access.get("zone") or getattr(cluster.spec, "zone", None)
    return (str(project) if project else None), (str(zone) if zone else None)


def _read_nodes(cluster: Any, outputs: dict[str, Any]) -> dict[int, str]:
    ids = [str(i or "") for i in (dict(outputs.get("access") or {}).get("node_ids") or [])]
    cloud = getattr(cluster.spec, "cloud", None)
    if cloud == "azure" and outputs.get("scale_sets"):
        from provision.clouds.azure import hostkeys as azure

        return azure.read_scale_sets(dict(outputs))
    if not ids:
        return {}
    if cloud == "aws":
        from provision.clouds.aws import hostkeys as aws

        return aws.read_host_keys(ids, cluster.spec.region)
    if cloud == "gcp":
        from provision.clouds.gcp import hostkeys as gcp

        project, zone = _gcp_where(cluster, outputs)
        if project and zone:
            return gcp.read_host_keys(ids, project, zone)
    if cloud == "alibaba":
        from provision.clouds.alibaba import hostkeys as alibaba

        return alibaba.read_host_keys(ids, cluster.spec.region)
    return {}


def _read_controller(cluster: Any, outputs: dict[str, Any], instance: str) -> str | None:
    """The Slurm controller's key through the same API as its cloud's nodes (its instance id / VM name)."""
    cloud = getattr(cluster.spec, "cloud", None)
    found: dict[int, str] = {}
    if cloud == "aws":
        from provision.clouds.aws import hostkeys as aws

        found = aws.read_host_keys([instance], cluster.spec.region)
    elif cloud == "gcp":
        from provision.clouds.gcp import hostkeys as gcp

        project, zone = _gcp_where(cluster, outputs)
        found = gcp.read_host_keys([instance], project, zone) if project and zone else {}
    elif cloud == "alibaba":
        from provision.clouds.alibaba import hostkeys as alibaba

        found = alibaba.read_host_keys([instance], cluster.spec.region)
    elif cloud == "azure":
        from provision.clouds.azure import hostkeys as azure

        return azure.read_vm(dict(outputs), instance)
    return found.get(0)


def cloud_host_keys(cluster: Any) -> dict[str, str]:
    """``alias -> "type base64"`` as the cloud reports the nodes' host keys; ``{}`` when it reports none."""
    raw = (getattr(cluster, "outputs", None) or {}).get("host_keys") or {}
    if not raw:
        try:
            raw = read_from_cloud(cluster)
        except Exception as e:  # noqa: BLE001  (no credentials, throttled: say so, keep first-use recording)
            sys.stderr.write(
                f"provision: could not read the nodes' host keys from the cloud ({type(e).__name__}: {e}); "
                "a node's key is recorded on first contact instead\n"
            )
            raw = {}
    name = cluster.spec.name
    out = {}
    for node, key in dict(raw).items():
        alias = f"{name}-{node}" if str(node).isdigit() else str(node)
        text = " ".join(str(key).split()[:2])
        if _KEY.match(text):
            out[alias] = text
    return out


def _read(path: Path) -> dict[str, str]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return {}
    found = {}
    for line in lines:
        alias, _, key = line.partition(" ")
        if alias:
            found[alias] = " ".join(key.split()[:2])
    return found


def _write_private(path: Path, text: str) -> None:
    """Replace ``path`` with ``text``, readable by its owner only (as the rest of the ssh folder)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def pin_from_cloud(cluster: Any, known_hosts: Path) -> set[str]:
    """Write the cloud's host keys into ``known_hosts`` before any connection; the aliases pinned so.

    A node whose pinned key differs from the cloud's was replaced: its new key is pinned, a
    message says so, and the ``prepared-*`` markers beside ``known_hosts`` are removed.
    """
    keys = cloud_host_keys(cluster)
    if not keys:
        return set()
    current = _read(known_hosts)
    replaced = sorted(a for a, k in keys.items() if a in current and current[a] != k)
    merged = {**current, **keys}
    if merged != current:
        _write_private(known_hosts, "".join(f"{a} {k}\n" for a, k in merged.items()))
    if replaced:
        for marker in known_hosts.parent.glob("prepared-*"):
            marker.unlink(missing_ok=True)
        sys.stderr.write(
            f"provision: {', '.join(replaced)} changed host key: the node was replaced; pinned the key the cloud "
            f"reports for it ({known_hosts}); the nodes will be prepared again on the next launch\n"
        )
    return set(keys)
