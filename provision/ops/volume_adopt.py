"""A real ``down`` (the Automation API) of a cluster whose own filesystem has ``storage.shared.retain: true``.

The cluster program marks the filesystem, and the network it sits in, ``retain_on_delete``
(``clouds/<cloud>/storage.py``, ``network.py``): ``pulumi destroy`` deletes everything else and leaves those in
the cloud, out of any stack. On the clouds of :data:`ADOPTING` they then become a volume, the Pulumi way:

1. before the destroy, the cluster stack's state (``pulumi stack export``) gives every resource the engine will
   retain (``retainOnDelete``) with its id and recorded inputs, and the stack's outputs give the filesystem's kind,
   size and tier;
2. after it, a stack ``vol-<cluster name>`` (``-2``, ``-3``, ... when taken, as under ``--mock``:
   :func:`provision.ops.volumes.retain_at_down`) runs ``up`` on a program that declares those resources with
   their recorded inputs and ``import_=<id>`` (:mod:`provision.clouds.adopt`), and adds what the cluster's
   ``destroy`` took and the volume needs (``clouds/<cloud>/volume.py`` ``adopt_volume``). It records the outputs
   every volume records, so ``volume list`` lists it and ``storage.shared.volume: NAME`` attaches it; its
   ``volume delete`` deletes the filesystem and its network.

Importing the network too (rather than the filesystem alone) is forced: the filesystem's network interfaces sit in
the node subnet and its security group, so neither can be deleted while it exists (EC2 DeleteSubnet and
DeleteSecurityGroup fail with DependencyViolation), and a volume that owned only the filesystem would leave them
behind at ``volume delete``.

On other clouds the retained filesystem stays in the cloud as before, and ``down`` says so, naming its id.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from provision.clouds.base import TAG_CLUSTER, TAG_EXPIRES, TAG_STACK
from provision.ops.volume_record import VOLUME_MARK
from provision.spec.units import format_time
from provision.spec.volume import STACK_PREFIX

#: The clouds whose retained filesystem becomes a volume stack at a real ``down``, with the resource types the
#: volume needs to have been retained: the cluster's own network (not one given by id, such as ``aws.vpc_id``).
ADOPTING: dict[str, tuple[str, ...]] = {
    "aws": ("aws:ec2/vpc:Vpc", "aws:ec2/subnet:Subnet", "aws:ec2/securityGroup:SecurityGroup"),
    "gcp": ("gcp:compute/network:Network",),
}


@dataclass
class Retained:
    """What a cluster's destroy will leave in the cloud, read from its stack before the destroy."""

    cloud: str
    region: str
    cluster: str
    #: Each retained resource: ``type``, ``name`` (logical), ``id``, ``inputs`` and ``outputs`` as the state has them.
    kept: list[dict[str, Any]]
    filesystem: dict[str, Any]
    static: dict[str, Any] = field(default_factory=dict)


def kept_resources(deployment: dict[str, Any]) -> list[dict[str, Any]]:
    """The resources of a ``pulumi stack export`` deployment that a destroy leaves in the cloud."""
    out = []
    for r in deployment.get("resources") or []:
        if r.get("retainOnDelete") and r.get("custom", True) and r.get("id") and not r.get("delete"):
            out.append(
                {
                    "type": r["type"],
                    "name": str(r.get("urn", "")).split("::")[-1],
                    "id": str(r["id"]),
                    "inputs": dict(r.get("inputs") or {}),
                    "outputs": dict(r.get("outputs") or {}),
                }
            )
    return out


def read_retained(spec: Any, stack: Any) -> Retained | None:
    """Before the destroy: the resources it will retain, when ``spec`` keeps its own filesystem; else ``None``.

    Raises:
        CloudError: the backend refused the export or the outputs.
    """
    from provision.engine import automation
    from provision.ops.volumes import FILESYSTEM_TYPES, tier_price

    shared = spec.storage.shared if spec.storage is not None else None
    if shared is None or not shared.retain or shared.volume is not None:
        return None
    name = stack.name
    deployment = automation.run_operation("export", name, stack.export_stack).deployment or {}
    kept = kept_resources(dict(deployment))
    fs = [k for k in kept if k["type"] in set(FILESYSTEM_TYPES.values())]
    if not fs:
        return None
    outputs = {k: v.value for k, v in automation.run_operation("outputs", name, stack.outputs).items()}
    raw = outputs.get("shared_fs")
    shared_fs: dict[str, Any] = raw if isinstance(raw, dict) else {}
    kind = shared_fs.get("kind") or next(k for k, t in FILESYSTEM_TYPES.items() if t == fs[0]["type"])
    static = {
        "kind": VOLUME_MARK,
        "cloud": spec.cloud,
        "region": outputs.get("region") or spec.region,
        "filesystem": kind,
        "size_gib": shared_fs.get("size_gib") or shared.size_gib,
        "shared_fs": shared_fs,
        "tier": shared_fs.get("tier"),
        "hourly_usd": tier_price(
            spec.cloud,
            kind,
            shared_fs.get("tier"),
            shared_fs.get("size_gib") or shared.size_gib,
            outputs.get("region") or spec.region,
        ),
        "tags": dict(spec.tags or {}),
        "origin": f"retained by cluster {spec.name} at down",
        "expires_at": None,
    }
    return Retained(spec.cloud, str(static["region"]), spec.name, kept, fs[0], static)


#: The cluster's own tags (labels on GCP) a volume does not keep: its expiry (what the reapers delete by), its
#: cluster and stack (provision.clouds.base).
CLUSTER_TAGS = (TAG_EXPIRES, TAG_CLUSTER, TAG_STACK)


def volume_tags(kept: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """``kept`` with each resource's tags or labels those of volume ``name``: the cluster's own dropped,
    ``provision-volume: NAME`` added (as :func:`provision.engine.volumerun.build_outputs` tags a created volume)."""
    out = []
    for k in kept:
        inputs = dict(k["inputs"])
        for key in ("tags", "labels"):
            if isinstance(inputs.get(key), dict):
                kept_tags = {t: v for t, v in inputs[key].items() if t not in CLUSTER_TAGS}
                inputs[key] = {**kept_tags, "provision-volume": name}
        out.append({**k, "inputs": inputs})
    return out


def volume_name(cluster: str, taken: set[str]) -> str:
    """``<cluster>``, else ``<cluster>-2``, ``-3``, ... : the first whose stack ``vol-<name>`` is not ``taken``."""
    name, n = cluster, 1
    while STACK_PREFIX + name in taken:
        n += 1
        name = f"{cluster[:37]}-{n}"
    return name


def adopt_outputs(retained: Retained, name: str, now: datetime) -> dict[str, Any]:
    """Declare the volume's resources in the current Pulumi context; returns its outputs."""
    module = importlib.import_module(f"provision.clouds.{retained.cloud}.volume")
    made = module.adopt_volume(name, retained.kept)
    # The filesystem's address does not change with the stack that holds it: the cluster's recorded mount source
    # stands unless the cloud's program reads it from the adopted resource.
    source = (retained.static.get("shared_fs") or {}).get("source")
    return {**retained.static, "volume": name, "created_at": format_time(now), "mount_source": source, **made}


def adopt_program(retained: Retained, name: str, now: datetime) -> Callable[[], None]:
    """The inline program of the volume stack ``vol-<name>``."""

    def program() -> None:
        import pulumi

        for key, value in adopt_outputs(retained, name, now).items():
            pulumi.export(key, value)

    return program


def not_adopted(retained: Retained) -> str:
    """What ``down`` says on a cloud whose retained filesystem does not become a volume."""
    fs = retained.filesystem
    return (
        f"storage.shared.retain: filesystem {fs['id']} ({fs['type']}) and the {len(retained.kept) - 1} network "
        f"resource(s) kept with it stay in the cloud; on {retained.cloud} it is not a volume yet (only "
        f"{', '.join(ADOPTING)} adopt it into a volume stack): not in `provision volume list`, not attachable by "
        f"name; delete it in the cloud console when done"
    )


def adopt_after_down(retained: Retained, workspace_stack: Any, root: Any, command: Any) -> str:
    """After the destroy: ``up`` of the volume stack adopting the retained resources; returns what to tell the user.

    A failed adoption leaves the resources in the cloud (they were retained) and says so, naming them.
    """
    from pulumi import automation as auto

    from provision.catalog import cloud_facts
    from provision.engine import automation
    from provision.spec.errors import CloudError

    if retained.cloud not in ADOPTING:
        return not_adopted(retained)
    missing = sorted(set(ADOPTING[retained.cloud]) - {k["type"] for k in retained.kept})
    if missing:
        return (
            f"storage.shared.retain: filesystem {retained.filesystem['id']} stays in the cloud but is not a volume: "
            f"its network is not the cluster's own (no retained {', '.join(missing)}), and a volume stack adopts "
            "the filesystem with the network it sits in; delete it in the cloud console when done"
        )
    ids = ", ".join(k["id"] for k in retained.kept)
    try:
        summaries = automation.run_operation("stack ls", "*", workspace_stack.workspace.list_stacks)
        name = volume_name(retained.cluster, {s.name for s in summaries})
        stack_name = STACK_PREFIX + name
        program = adopt_program(retained, name, datetime.now(timezone.utc))
        stack = automation.open_stack(stack_name, program, root=root, command=command)
        assert stack is not None  # noqa: S101  (create=True)
        key = cloud_facts(retained.cloud).provider_region_key
        automation.run_operation("config", stack_name, lambda: stack.set_config(key, auto.ConfigValue(retained.region)))
        automation.run_operation("up", stack_name, lambda: stack.up(program=program, color="never"))
    except CloudError as e:
        return (
            f"storage.shared.retain: the retained filesystem {retained.filesystem['id']} could not become a volume "
            f"({e}); it and its network ({ids}) stay in the cloud, outside any stack"
        )
    # Imported exactly as they were, they still carry the cluster's tags, its expiry among them (which
    # `provision reap` deletes by): a second `up` retags them as the volume's, an update in place.
    retag = adopt_program(
        Retained(**{**retained.__dict__, "kept": volume_tags(retained.kept, name)}), name, datetime.now(timezone.utc)
    )
    try:
        automation.run_operation("up", stack_name, lambda: stack.up(program=retag, color="never"))
    except CloudError as e:
        return (
            f"storage.shared.retain: filesystem {retained.filesystem['id']} is now volume {name} (stack {stack_name}), "
            f"but retagging it failed ({e}): its resources still carry cluster {retained.cluster}'s expiry tag, so "
            f"`provision reap` would delete them once it passes; run `provision down {retained.cluster}` again "
            "only after fixing the cause, or retag them in the cloud console"
        )
    return (
        f"storage.shared.retain: filesystem {retained.filesystem['id']} is now volume {name} (stack {stack_name}, "
        f"with its network: {ids}); see `provision volume list`, attach it with storage.shared.volume: {name}, "
        f"delete it with `provision volume delete {name}`"
    )


def run_adopt_mock(
    retained: Retained, name: str, existing: list[Any], now: datetime, in_state: tuple[str, ...] = ()
) -> Any:
    """The volume program under the strict mocked cloud, ``existing`` (``clouds.mocking.Registered``) being what
    the cloud holds: an import of an unknown id, or inputs that differ from the existing ones, fails as Pulumi
    fails it, unless its id is ``in_state`` (imported by an earlier ``up``: then an update). Returns the run
    (:class:`provision.engine.volumerun.VolumeRun`).

    Raises:
        CloudFaultError: an import refused, or a strict rule broken.
    """
    import pulumi

    from provision.clouds.mocking import CloudMocks, install
    from provision.engine.mockrun import _ensure_event_loop, _resolve
    from provision.engine.volumerun import VolumeRun
    from provision.spec import PROJECT

    _ensure_event_loop()
    mocks = CloudMocks(region=retained.region, existing=existing, in_state=in_state)
    pulumi.runtime.set_all_config({})
    pulumi.runtime.settings.ROOT.set(None)
    install(mocks, project=PROJECT, stack=STACK_PREFIX + name)
    captured: dict[str, Any] = {}

    @pulumi.runtime.test
    def _run() -> Any:
        return _resolve(adopt_outputs(retained, name, now)).apply(captured.update)

    _run()
    return VolumeRun(list(mocks.ledger), captured, list(mocks.accounting))
