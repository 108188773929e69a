"""An attached volume (``storage.shared.volume``), read from its own stack through a ``pulumi.StackReference``.

A volume is its own stack, ``vol-<name>`` (:data:`provision.spec.volume.STACK_PREFIX`), in the same Pulumi project.
Its outputs are the contract a cluster reads (Pulumi Python SDK, ``pulumi/stack_reference.py``:
``StackReference.require_output``):

* ``mount_source``: what the nodes mount, in the form the cluster's own filesystem of that kind has
  (``<dns>@tcp:/<mount name>`` for FSx, ``<ip>@tcp:/<fs>`` for Lustre, ``<ip>:/<share>`` for NFS, the JSON list of
  access points for Parallelstore); the Alibaba nodes look the NFS domain up at boot instead, by the
  filesystem's description (``filesystem_description``);
* ``filesystem_id``: the cloud's id of the filesystem;
* ``network``: the ids the cluster's reachability resources need (per cloud: :func:`network_field`).

Under the mocked cloud the reference answers with the volume's recorded outputs
(:meth:`provision.clouds.mocking.CloudMocks._stack_reference`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pulumi

from provision.spec.volume import STACK_PREFIX

if TYPE_CHECKING:
    from provision.planning.plan import ClusterPlan


@dataclass(frozen=True)
class VolumeRef:
    """The attached volume's outputs, as the cluster program reads them."""

    name: str
    stack: str
    reference: pulumi.StackReference
    mount_source: pulumi.Output[str]
    filesystem_id: pulumi.Output[str]
    network: pulumi.Output[dict[str, Any]]

    def network_field(self, key: str) -> pulumi.Output[Any]:
        """One id of the volume's network; the run fails naming the volume when its stack has none."""
        return self.network.apply(lambda n: _field(self.stack, n, key))


def _field(stack: str, network: dict[str, Any], key: str) -> Any:
    if key not in network:
        raise pulumi.RunError(
            f"volume stack {stack} has no network.{key} output, which the attaching cluster needs to reach it; "
            "to fix: recreate the volume with this version of provision (provision volume create)"
        )
    return network[key]


def volume_stack(name: str) -> str:
    """The volume's stack name (deterministic: renaming it would orphan the volume)."""
    return STACK_PREFIX + name


def volume_reference(plan: ClusterPlan[Any], parent: pulumi.Resource) -> VolumeRef | None:
    """The reference to the plan's attached volume, or ``None`` when the cluster has its own filesystem (or none)."""
    if plan.storage is None or plan.storage.volume is None:
        return None
    name = plan.storage.volume
    stack = volume_stack(name)
    ref = pulumi.StackReference(f"{plan.name}-volume", stack_name=stack, opts=pulumi.ResourceOptions(parent=parent))
    return VolumeRef(
        name=name,
        stack=stack,
        reference=ref,
        mount_source=ref.require_output("mount_source"),
        filesystem_id=ref.require_output("filesystem_id"),
        network=ref.get_output("network").apply(lambda n: dict(n or {})),
    )


def attached_summary(summary: dict[str, Any], volume: str) -> dict[str, Any]:
    """The ``shared_fs`` output of an attached volume: the own filesystem's summary plus the volume's name."""
    return {**summary, "volume": volume, "retain": True}
