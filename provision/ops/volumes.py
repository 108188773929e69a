"""Volumes: shared filesystems that outlive clusters (``provision volume create|list|delete``).

A volume is its own stack, ``vol-<name>``, holding the filesystem only; its outputs
(``kind: volume``, cloud, region, zone, filesystem kind, size, filesystem id) are what a cluster
that attaches it (``storage.shared.volume: NAME``) is checked against: same cloud, region and
zone (the nodes of another zone cannot mount a zonal filesystem), same filesystem kind when the
cluster names one. The attaching cluster records ``volume: NAME`` in its outputs, which is how
``volume delete`` finds the clusters still using it and refuses.

A cluster's own filesystem with ``storage.shared.retain: true`` becomes a volume at ``down``: the
filesystem resource moves from the cluster's state into ``vol-<cluster name>`` (``-2``, ``-3``, ...
when that name is taken), listed by ``volume list`` and attachable by name. Without ``--mock`` the resources a
destroy retains are adopted by the volume's stack with ``import_`` (:mod:`provision.ops.volume_adopt`).

A cluster reads the volume's outputs through a ``pulumi.StackReference`` (:mod:`provision.clouds.volumeref`): the
mount source, the filesystem id and the network its own way in needs (:mod:`provision.ops.volume_network`).

Under the mocked cloud (``--mock``) the volume's state lives in the mocked cloud's state directory
(:mod:`provision.engine.mockstate`), so it persists between mocked clusters. On every cloud the volume's stack is a
Pulumi program (:mod:`provision.engine.volumerun`): run under the strict mocked cloud with ``--mock``, through the
Automation API without it. Without ``--mock``, listing, finding, deleting and attaching read the backend's stacks
(:mod:`provision.ops.volume_stacks`); clouds without a volume program refuse (:func:`refuse_real_attach`).
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timezone
from typing import Any

from provision.ops.volume_record import VOLUME_MARK, VolumeRecord, refuse_if_attached
from provision.spec.errors import Problem, UnsupportedError
from provision.spec.units import format_time
from provision.spec.volume import STACK_PREFIX, VolumeSpec, VolumeSpecError

#: The Pulumi resource type of each filesystem kind (the clouds' storage.py builders register these).
FILESYSTEM_TYPES: dict[str, str] = {
    "fsx-lustre": "aws:fsx/lustreFileSystem:LustreFileSystem",
    "filestore": "gcp:filestore/instance:Instance",
    "managed-lustre": "gcp:lustre/instance:Instance",
    "parallelstore": "gcp:parallelstore/instance:Instance",
    "amlfs": "azure-native:storagecache:AmlFilesystem",
    "netapp": "azure-native:netapp:CapacityPoolVolume",  # pulumi-azure-native has no netapp.Volume
    "cpfs": "alicloud:nas/fileSystem:FileSystem",
    "cpfs-lingjun": "alicloud:nas/fileSystem:FileSystem",
    "nas": "alicloud:nas/fileSystem:FileSystem",
    "nas-extreme": "alicloud:nas/fileSystem:FileSystem",
}


def _store() -> Any:
    from provision.engine.mockstate import MockStore

    return MockStore()


def _users(store: Any) -> dict[str, list[str]]:
    """Volume name -> the cluster stacks whose state records attaching it."""
    users: dict[str, list[str]] = {}
    for stack in store.stacks():
        try:
            state = store.load(stack)
        except Exception:  # a damaged file: `provision status` on it names the file and the fix
            continue
        if state is None or state.outputs.get("kind") == VOLUME_MARK:
            continue
        name = state.outputs.get("volume")
        if isinstance(name, str):
            users.setdefault(name, []).append(state.stack)
    return users


def _save_volume(store: Any, name: str, outputs: dict[str, Any], resources: list[Any], spec: dict[str, Any]) -> None:
    from provision.engine.mockstate import MockResource, MockState

    now = datetime.now(timezone.utc).replace(microsecond=0)
    res = resources or [
        MockResource(FILESYSTEM_TYPES[outputs["filesystem"]], f"vol-{name}-fs", {}, outputs["filesystem_id"])
    ]
    store.save(
        MockState(
            stack=STACK_PREFIX + name,
            spec=spec,
            spec_hash=hashlib.sha256(repr(sorted(spec.items())).encode()).hexdigest()[:16],
            resources=res,
            outputs=outputs,
            created_at=now,
            updated_at=now,
        )
    )


def volume_price(spec: VolumeSpec) -> tuple[str | None, float | None]:
    """The catalog tier of ``spec`` (the cheapest of its kind that sells its throughput) and its USD per hour."""
    from provision.catalog import load_catalog
    from provision.planning.cost import storage_hourly_usd

    best: tuple[str | None, float | None] = (None, None)
    offers = list(load_catalog().filesystems_for(spec.cloud, spec.kind))
    # Tiers that sell the size first (AMLFS tiers step by 4 to 48 TiB); none: the strict cloud names the size rule.
    for offer in [o for o in offers if o.allows_size(spec.size_gib)] or offers:
        tput = spec.throughput_mbps_per_tib
        # The planner's rule (planning/resolve.py): a tier sells a throughput it lists or its baseline.
        if tput is not None and not (tput in offer.throughput_mbps_per_tib or offer.baseline_mbps_per_tib == tput):
            continue
        hourly = storage_hourly_usd(offer, spec.size_gib, tput, spec.region)
        if best[0] is None and hourly is None:
            best = (offer.tier, None)  # a tier that sells it, unpriced: kept unless a priced one comes
        elif hourly is not None and (best[1] is None or hourly < best[1]):
            best = (offer.tier, round(hourly, 4))
    return best


def tier_price(cloud: str, kind: str, tier: str | None, size_gib: Any, region: str | None) -> float | None:
    """USD per hour of an existing filesystem (a retained one becoming a volume): its catalog tier at its size."""
    from provision.catalog import load_catalog
    from provision.planning.cost import storage_hourly_usd

    if tier is None or not isinstance(size_gib, int):
        return None
    for offer in load_catalog().filesystems_for(cloud, kind):
        if offer.tier == tier:
            hourly = storage_hourly_usd(offer, size_gib, None, region)
            return None if hourly is None else round(hourly, 4)
    return None


def _cloud_problems(spec: VolumeSpec) -> list[Problem]:
    """The cloud's own refusals of a volume spec (``clouds/<cloud>/volume.py`` ``volume_problems``, if any)."""
    import importlib

    module = importlib.import_module(f"provision.clouds.{spec.cloud}.volume")
    check = getattr(module, "volume_problems", None)
    return list(check(spec)) if check is not None else []


def size_problems(spec: VolumeSpec) -> list[Problem]:
    """``size_gib`` no tier of the volume's kind sells, before anything exists (the cloud would refuse it)."""
    from provision.catalog import load_catalog

    offers = list(load_catalog().filesystems_for(spec.cloud, spec.kind))
    if not offers or any(o.allows_size(spec.size_gib) for o in offers):
        return []
    rules = "; ".join(
        f"{o.tier}: {o.min_gib}-{o.max_gib} GiB in steps of {o.step_gib}"
        + (f" or {', '.join(map(str, o.fixed_sizes_gib))}" if o.fixed_sizes_gib else "")
        for o in offers
    )
    near = sorted({n for o in offers for n in o.nearest_sizes(spec.size_gib, 2)})[:3]
    return [
        Problem(
            "size_gib",
            spec.size_gib,
            f"is a size no {spec.kind} tier sells ({rules})",
            f"use one of {', '.join(map(str, near))} GiB",
        )
    ]


def create_volume(spec: VolumeSpec, mock: bool) -> VolumeRecord:
    """Create the volume's stack (refused when a volume of that name exists).

    The stack is the cloud's volume program (:data:`provision.engine.volumerun.PROGRAMS`): run under the strict
    mocked cloud with ``mock``, else through the Automation API like ``up``. A cloud without one is refused.
    """
    from provision.engine.volumerun import PROGRAMS

    if spec.cloud not in PROGRAMS:
        raise UnsupportedError(
            f"volume create on {spec.cloud}: the volume stack program exists for {', '.join(PROGRAMS)} only so far; "
            "to fix: use a cluster's own filesystem with storage.shared.retain: true"
        )
    store = _store()
    if mock and store.load(spec.stack) is not None:
        raise VolumeSpecError(
            problems=[Problem("name", spec.name, "names a volume that exists", "pick another name or delete it first")]
        )
    problems = _cloud_problems(spec) + size_problems(spec)  # every problem at once, before anything exists
    if problems:
        raise VolumeSpecError(problems=problems)
    now = datetime.now(timezone.utc).replace(microsecond=0)
    tier, hourly = volume_price(spec)
    return _create_from_program(spec, tier, hourly, now, mock)


def _static_outputs(spec: VolumeSpec, tier: str | None, hourly: float | None, now: datetime) -> dict[str, Any]:
    """The outputs every volume records besides its cloud's (``volume list``, the attach checks)."""
    return {
        "tier": tier,
        "hourly_usd": hourly,
        "kind": VOLUME_MARK,
        "volume": spec.name,
        "cloud": spec.cloud,
        "region": spec.region,
        "zone": spec.zone,
        "filesystem": spec.kind,
        "size_gib": spec.size_gib,
        "throughput_mbps_per_tib": spec.throughput_mbps_per_tib,
        "tags": dict(spec.tags),
        "origin": "created",
        "created_at": format_time(now),
        "expires_at": format_time(now + spec.lifetime) if spec.lifetime else None,
    }


def _create_from_program(
    spec: VolumeSpec, tier: str | None, hourly: float | None, now: datetime, mock: bool
) -> VolumeRecord:
    """The volume's stack from its cloud's program: mocked (state in the mocked cloud) or real (Automation API)."""
    from provision.clouds.mocking import CloudFaultError
    from provision.engine.volumerun import run_volume_mock, run_volume_real
    from provision.spec.errors import CloudError

    if tier is None:
        raise VolumeSpecError(
            problems=[
                Problem(
                    "throughput_mbps_per_tib",
                    spec.throughput_mbps_per_tib,
                    f"is sold by no {spec.kind} tier in the catalog",
                    "pick a throughput the catalog lists (provision catalog) or drop it",
                )
            ]
        )
    static = _static_outputs(spec, tier, hourly, now)
    if not mock:
        outputs = run_volume_real(spec, tier, static)
        return VolumeRecord(spec.name, outputs, now, ())
    try:
        run = run_volume_mock(spec, tier, static)
    except CloudFaultError as e:  # the strict cloud refused an input: nothing is kept
        raise CloudError(f"volume {spec.name}: {e}") from None
    from provision.engine.mockstate import MockResource

    resources = [MockResource(r.type, r.name, r.inputs, r.id, r.custom) for r in run.resources]
    _save_volume(_store(), spec.name, run.outputs, resources, spec.model_dump(mode="json"))
    return find_volume(spec.name, mock) or VolumeRecord(spec.name, run.outputs, now, ())


def list_volumes(mock: bool, root: Any = None, command: Any = None) -> list[VolumeRecord]:
    """Every volume in the mocked cloud (``mock``) or the Pulumi backend, with the cluster stacks attaching each."""
    if not mock:
        from provision.ops.volume_stacks import real_volumes

        return real_volumes(root, command)
    store = _store()
    users = _users(store)
    found = []
    for stack in store.stacks():
        try:
            state = store.load(stack)
        except Exception:
            continue
        if state is None or state.outputs.get("kind") != VOLUME_MARK:
            continue
        name = str(state.outputs.get("volume"))
        found.append(VolumeRecord(name, dict(state.outputs), state.created_at, tuple(users.get(name, []))))
    return sorted(found, key=lambda r: r.name)


def find_volume(name: str, mock: bool, root: Any = None, command: Any = None) -> VolumeRecord | None:
    """The volume ``name``; without ``mock`` its stack alone is read (``used_by`` left empty)."""
    if not mock:
        from provision.ops.volume_stacks import real_volume

        return real_volume(name, root, command)
    return next((v for v in list_volumes(mock) if v.name == name), None)


def delete_volume(name: str, mock: bool) -> VolumeRecord:
    """Delete the volume; refused while a cluster's state records attaching it (names them).

    Without ``mock``: refused while a cluster stack of the backend records it, else ``pulumi destroy`` of the
    volume's stack through the Automation API, then the stack is removed (:mod:`provision.ops.volume_stacks`).
    """
    if not mock:
        from provision.ops.volume_stacks import delete_real_volume

        return delete_real_volume(name)
    record = find_volume(name, mock)
    if record is None:
        raise VolumeSpecError(
            problems=[Problem("name", name, "names no volume", "see `provision volume list --mock` for the names")]
        )
    refuse_if_attached(record, mock=True)
    _store().delete(STACK_PREFIX + name)
    return record


def attach_problems(spec: Any, zone: str | None, mock: bool, root: Any = None, command: Any = None) -> list[Problem]:
    """Why the cluster ``spec`` (planned in ``zone``) cannot attach its ``storage.shared.volume``; [] when it can.

    Without ``mock`` the volume is read from its stack on the Pulumi backend (:mod:`provision.ops.volume_stacks`).
    """
    shared = spec.storage.shared
    name = shared.volume
    field = "storage.shared.volume"
    record = find_volume(name, mock, root, command)
    if record is None:
        where = "the mocked cloud" if mock else "the Pulumi backend (provision volume list)"
        fix = f"create it with `provision volume create FILE{' --mock' if mock else ''}`"
        return [Problem(field, name, f"names no volume in {where}", fix)]
    out, problems = record.outputs, []
    if out.get("cloud") != spec.cloud:
        problems.append(
            Problem(field, name, f"is a {out.get('cloud')} volume, not {spec.cloud}", "use a volume of this cloud")
        )
    if out.get("region") != spec.region:
        problems.append(
            Problem(
                field, name, f"is in region {out.get('region')}, not {spec.region}", f"set region: {out.get('region')}"
            )
        )
    if out.get("zone") and zone and out.get("zone") != zone:
        problems.append(
            Problem(
                field,
                name,
                f"is in zone {out.get('zone')}; nodes in {zone} cannot mount it",
                f"set zone: {out.get('zone')}",
            )
        )
    if out.get("cloud") == spec.cloud:
        from provision.ops.volume_network import network_problems, sibling_problems

        problems += network_problems(spec, name, out)
        problems += sibling_problems(spec, name, _specs(record.used_by, mock))
    if shared.kind not in ("auto", out.get("filesystem")):
        problems.append(
            Problem(
                "storage.shared.kind", shared.kind, f"differs from the volume's {out.get('filesystem')}", "drop kind"
            )
        )
    return problems


def _specs(stacks: tuple[str, ...], mock: bool) -> dict[str, Any]:
    """The spec mappings the mocked cloud's states record for ``stacks`` (GCP: their subnets in the volume's VPC)."""
    if not mock or not stacks:
        return {}
    store = _store()
    found = {}
    for stack in stacks:
        state = store.load(stack)
        if state is not None:
            found[stack] = state.spec or {}
    return found


def retain_at_down(state: Any) -> tuple[str | None, set[tuple[str, str]]]:
    """At ``down``: move a retained own filesystem of ``state`` into a volume; returns its name and the kept keys."""
    spec = state.spec or {}
    shared = (spec.get("storage") or {}).get("shared") or {}
    if not shared.get("retain") or shared.get("volume"):
        return None, set()
    kept = [r for r in state.resources if r.type in set(FILESYSTEM_TYPES.values())]
    if not kept:
        return None, set()
    store = _store()
    base = str(spec.get("name") or state.stack)
    name, n = base, 1
    while store.load(STACK_PREFIX + name) is not None:
        n += 1
        name = f"{base[:37]}-{n}"
    out = state.outputs
    from provision.ops.volume_network import retained_network

    shared_fs = out.get("shared_fs") if isinstance(out.get("shared_fs"), dict) else {}
    network, kept_network = retained_network(str(spec.get("cloud")), state.resources, shared_fs)
    kind = shared_fs.get("kind") or next(k for k, t in FILESYSTEM_TYPES.items() if t == kept[0].type)
    outputs = {
        "kind": VOLUME_MARK,
        "volume": name,
        "cloud": spec.get("cloud"),
        "region": out.get("region") or spec.get("region"),
        "zone": out.get("zone") or spec.get("zone"),
        "filesystem": kind,
        "size_gib": shared_fs.get("size_gib") or shared.get("size_gib"),
        "shared_fs": shared_fs,
        "tier": shared_fs.get("tier"),
        "hourly_usd": tier_price(
            str(spec.get("cloud")),
            kind,
            shared_fs.get("tier"),
            shared_fs.get("size_gib") or shared.get("size_gib"),
            out.get("region") or spec.get("region"),
        ),
        "filesystem_id": kept[0].id,
        "mount_source": shared_fs.get("source"),
        "network": network,
        "tags": dict(spec.get("tags") or {}),
        "origin": f"retained by cluster {base} at down",
        "expires_at": None,
    }
    kept += [r for r in kept_network if r.key not in {k.key for k in kept}]  # Azure: the fs is in the group
    _save_volume(store, name, outputs, kept, {"name": name, "from_cluster": base})
    return name, {r.key for r in kept}


def retained_again_problems(spec: Any, mock: bool) -> list[Problem]:
    """Azure: an own filesystem with ``retain`` whose data group an earlier ``down`` kept (now a volume).

    Azure names the retained group, network and filesystem after the cluster (``clouds/azure/adapter.py``), and
    pulumi-azure-native refuses to create a resource that already exists ("cannot create already existing
    resource", pulumi/pulumi-azure-native issue 1123): a second ``up`` would fail part-way, its GPUs already
    requested. The kept filesystem is attached instead (it is a volume since that ``down``).
    """
    if spec.cloud != "azure" or not mock:  # a real down keeps the group, but makes no volume of it
        return []
    from provision.clouds.azure.adapter import resource_group_names

    _, data_rg = resource_group_names(spec.name)
    for record in list_volumes(mock):
        network = record.outputs.get("network")
        if isinstance(network, dict) and network.get("resource_group") == data_rg:
            return [
                Problem(
                    "storage.shared.retain",
                    True,
                    f"the filesystem an earlier down of {spec.name} kept is volume {record.name} (resource group "
                    f"{data_rg}, with the network and filesystem this spec would create again, which Azure refuses)",
                    f"attach it: storage.shared: {{volume: {record.name}, mount: {spec.storage.shared.mount}}} "
                    f"(its data stays), or delete it first: provision volume delete {record.name}",
                )
            ]
    return []


def attached_program_spec(
    spec: Any, zone: str | None, mock: bool, root: Any = None, command: Any = None
) -> tuple[Any, dict[str, Any]]:
    """The spec the cluster program runs (no own filesystem when a volume is attached) and the outputs to add.

    Raises:
        VolumeSpecError: the volume is missing or the cluster's nodes cannot mount it (every problem).
    """
    shared = spec.storage.shared
    if shared is not None and shared.retain and shared.volume is None:
        problems = retained_again_problems(spec, mock)
        if problems:
            raise VolumeSpecError(problems=problems)
    if shared is None or shared.volume is None:
        return spec, {}
    problems = attach_problems(spec, zone, mock, root, command)
    if problems:
        raise VolumeSpecError(problems=problems)
    record = find_volume(shared.volume, mock, root, command)
    assert record is not None  # noqa: S101  # attach_problems found it
    return spec.model_copy(
        update={"storage": spec.storage.model_copy(update={"shared": attached_shared(record, shared)})}
    ), {
        "volume": record.name,
        "volume_filesystem_id": record.outputs.get("filesystem_id"),
    }


def attached_shared(record: VolumeRecord, shared: Any) -> Any:
    """``storage.shared`` as the cluster program plans it: the volume's kind, size and tier, mounted at ``mount``.

    The plan then has the same storage as a cluster-owned filesystem of that kind (mount steps, client, health
    expectations), with ``volume`` set: the adapters build no filesystem but read the volume's stack
    (clouds/volumeref.py) and create the network path to it.
    """
    out = record.outputs
    update: dict[str, Any] = {"kind": out.get("filesystem"), "retain": False, "object_store": None}
    if isinstance(out.get("size_gib"), int):
        update["size_gib"] = out["size_gib"]
    if isinstance(out.get("throughput_mbps_per_tib"), int):
        update["throughput_mbps_per_tib"] = out["throughput_mbps_per_tib"]
    if isinstance(out.get("tier"), str):
        update["tier"] = out["tier"]
    return shared.model_copy(update=update)


def planned_data(data: Any) -> Any:
    """A raw cluster spec mapping whose ``storage.shared.volume`` names an existing volume, planned with the volume's
    filesystem (kind, size, throughput, tier: :func:`attached_shared`); anything else unchanged.

    So ``provision plan`` and ``up``'s plan show the filesystem the nodes will mount and price the volume beside
    the cluster (its own stack bills it). The volumes are the mocked cloud's: ``plan`` runs no Pulumi CLI (a real
    ``up`` plans with the volume's stack instead: ``Cluster._plan_spec``).
    """
    storage = data.get("storage") if isinstance(data, dict) else None
    shared = storage.get("shared") if isinstance(storage, dict) else None
    name = shared.get("volume") if isinstance(shared, dict) else None
    if not isinstance(name, str):
        return data
    try:
        record = find_volume(name, mock=True)
    except Exception:  # a damaged state file: `provision volume list` names it
        return data
    if record is None:
        return data
    from provision.spec.models import SharedStorage

    try:
        merged = attached_shared(record, SharedStorage.model_validate(shared))
    except Exception:  # the shape is wrong: validation reports it with the rest
        return data
    return {**data, "storage": {**dict(storage or {}), "shared": merged.model_dump(mode="json", exclude_none=True)}}


def planned_spec(spec: Any, mock: bool = True, root: Any = None, command: Any = None) -> Any:
    """``spec`` planned with its attached volume's filesystem (:func:`planned_data`) when the volume exists.

    Without ``mock`` the volume is its stack on the Pulumi backend.
    """
    shared = spec.storage.shared
    if shared is None or shared.volume is None:
        return spec
    try:
        record = find_volume(shared.volume, mock, root, command)
    except Exception:  # a damaged state file, no Pulumi CLI: `provision volume list` names it; `up` refuses
        return spec
    if record is None:
        return spec
    return spec.model_copy(
        update={"storage": spec.storage.model_copy(update={"shared": attached_shared(record, shared)})}
    )


def refuse_real_attach(spec: Any) -> None:
    """Refuse ``storage.shared.volume`` outside the mocked cloud where the cloud has no volume program: no real
    volume stack of that cloud can exist (:data:`provision.engine.volumerun.PROGRAMS`)."""
    from provision.engine.volumerun import PROGRAMS

    shared = spec.storage.shared
    if shared is not None and shared.volume is not None and spec.cloud not in PROGRAMS:
        raise UnsupportedError(
            f"storage.shared.volume {shared.volume}: a real {spec.cloud} volume stack cannot be created yet (volume "
            f"programs exist for {', '.join(PROGRAMS)}), so none can be attached; to fix: use --mock, or drop "
            "storage.shared.volume to give the cluster its own filesystem (storage.shared.retain keeps it at down)"
        )
