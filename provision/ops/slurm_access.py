"""The way onto a Slurm cluster's controller (login) node: ``provision ssh TARGET`` lands there.

A ``scheduler: slurm`` cluster's build publishes a ``slurm`` stack output (``controller``: its name,
``<cluster>-ctl``; ``address``: its private IP; ``instance_id``: what the cloud's private path needs, e.g. the
EC2 instance id SSM starts a session to). :func:`controller_ssh_block` is its ``Host <cluster>-ctl`` entry, reached
the way the GPU nodes are (SSM, IAP, the bastion, or through node 0 when the head node is public).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from provision.planning.access import render_ssh_config


def controller(outputs: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ``slurm`` output when the cluster has a controller with an address, else ``None``."""
    slurm = outputs.get("slurm")
    if isinstance(slurm, Mapping) and slurm.get("controller") and slurm.get("address"):
        return slurm
    return None


def is_controller(name: str, word: str) -> bool:
    """Whether ``word`` names the controller of cluster ``name`` (``<name>-ctl``, ``ctl`` or ``controller``)."""
    return word.lower() in ("ctl", "controller", f"{name}-ctl".lower())


def controller_ssh_block(name: str, slurm: Mapping[str, Any], path: Mapping[str, Any], **kw: Any) -> str:
    """``Host <name>-ctl``: the controller through the cluster's way in (``kw`` as :func:`render_ssh_config`; a
    ``pinned`` ``<name>-ctl`` (its key read from the cloud) gets ``StrictHostKeyChecking yes``)."""
    if f"{name}-ctl" in kw.get("pinned", ()):
        kw = {**kw, "pinned": {*kw["pinned"], f"{name}-ctl-0"}}  # render_ssh_config's alias for it
    text = render_ssh_config(
        f"{name}-ctl",
        [str(slurm["address"])],
        {**path, "via": "direct" if path.get("via") == "head" else path.get("via")},
        node_ids=[str(slurm.get("instance_id") or slurm["controller"])],
        **kw,
    )
    # render_ssh_config names hosts <name>-<rank>; the controller has one name.
    text = text.replace(f"Host {name}-ctl-0\n", f"Host {name}-ctl\n").replace(
        f"HostKeyAlias {name}-ctl-0\n", f"HostKeyAlias {name}-ctl\n"
    )
    if path.get("via") == "head":  # a public head node: the controller is private, reached through node 0
        text = text.replace(
            "  StrictHostKeyChecking accept-new\n", f"  StrictHostKeyChecking accept-new\n  ProxyJump {name}-0\n"
        )
    return text
