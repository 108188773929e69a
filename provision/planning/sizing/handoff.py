"""From a sizing report to a cluster: the spec ``size --write-spec`` writes, and the curve ``size --plot`` draws.

Pure: report in, data out. The command line validates the spec with the spec models before writing it.
"""

from __future__ import annotations

import math
import re
from typing import Any

from provision.catalog import load_catalog
from provision.planning.access import EXAMPLE_KEY  # the shipped stacks' placeholder key: a spec that plans; replace it
from provision.planning.sizing.curve import curve
from provision.planning.sizing.models import DEFAULT_DEADLINE_DAYS, SizingReport, format_count

__all__ = ["auto_storage", "curve", "deadline", "spec_for", "storage_notes", "volume_for"]

#: The spec's TTL is the run's wall time plus this margin (restarts the goodput did not cover, evaluation).
TTL_MARGIN = 1.10
#: The longest lifetime a spec may ask for (the spec's MAX_TTL, 90 days).
MAX_TTL_HOURS = 90 * 24
#: A project id to replace: GCP specs need one (gcp.project).
GCP_PROJECT_PLACEHOLDER = "my-gcp-project"


def spec_for(report: SizingReport, cloud: str) -> tuple[dict[str, Any], list[str]]:
    """The cluster spec (as a dict) for ``cloud``'s recommended option, and notes for the file header.

    Raises:
        ValueError: the report has no instance type on ``cloud`` (the catalog sells nothing usable there).
    """
    option = next((o for o in report.clouds if o.cloud == cloud), None)
    if option is None or option.instance_type is None or option.region is None or option.gpus is None:
        raise ValueError(f"the sizing found no {cloud} offer to write a spec for")
    offer = load_catalog().instance(cloud, option.instance_type)
    if offer is not None and offer.cpu_arch != "x86_64":
        raise ValueError(
            f"{option.instance_type} has {offer.cpu_arch} (NVIDIA Grace) hosts, which `provision plan` does not "
            "support yet; size with another --gpu (e.g. B200 or H200) for a spec that plans"
        )
    if cloud == "alibaba":
        # The Alibaba adapter needs a zone and the catalog records none for these types (contact sales).
        raise ValueError("alibaba specs need a zone the catalog does not record; write the spec by hand")
    i = report.inputs
    name = re.sub(r"[^a-z0-9-]", "-", f"train-{format_count(i.params)}-{format_count(i.tokens)}".lower())[:40].strip(
        "-"
    )
    spec: dict[str, Any] = {
        "name": name,
        "cloud": cloud,
        "region": option.region,
        "gpu": option.gpu,
        "gpus": option.gpus,
        "instance_type": option.instance_type,
    }
    zones = offer.regions[option.region].zones if offer is not None and option.region in offer.regions else ()
    if zones:
        # The zone `plan` would choose (the catalog's first), written out: zonal services (Azure Managed Lustre)
        # then go to the nodes' zone, and the spec says where it runs.
        spec["zone"] = zones[0]
    notes = [
        f"{option.gpus} x {option.gpu} on {option.nodes} x {option.instance_type} in {option.region}, "
        f"{option.wall_hours / 24 if option.wall_hours else 0:,.1f} days expected",
    ]
    fs = next((f for f in report.storage.filesystems if f.cloud == cloud and f.kind is not None), None)
    if fs is not None and fs.size_gib:
        chosen = auto_storage(spec, fs.size_gib, report.storage.required_write_gbps)
        if chosen is not None:
            shared, why = chosen
            spec["storage"] = {"shared": shared}
            notes.append(why)
    if option.wall_hours:
        hours = math.ceil(option.wall_hours * TTL_MARGIN)
        if hours <= MAX_TTL_HOURS:
            spec["lifetime"] = {"ttl": f"{hours}h"}
        else:
            notes.append(
                f"no ttl: the run needs {hours:,} h, more than the 90-day maximum lifetime; run it in stages "
                "or set lifetime yourself"
            )
    if cloud == "gcp":
        spec["gcp"] = {"project": GCP_PROJECT_PLACEHOLDER}
        notes.append(f"replace gcp.project ({GCP_PROJECT_PLACEHOLDER}) with your project id")
    if report.clouds and option.substitute:
        notes.append(f"{option.gpu} stands in for {i.gpu}, which {cloud} does not sell in the catalog")
    spec["access"] = {"ssh_public_keys": [EXAMPLE_KEY]}
    notes.append("access.ssh_public_keys holds an EXAMPLE key: replace it with yours (and add allowed_cidrs)")
    return spec, notes


def auto_storage(spec: dict[str, Any], size_gib: int, write_gbps: float) -> tuple[dict[str, Any], str] | None:
    """The shared filesystem ``storage.shared.kind: auto`` chooses for ``spec`` at ``size_gib`` and the
    checkpoint write rate, written out (kind, tier, size, throughput) with a note saying so; None when auto
    finds nothing that fits.

    The request is the sizing's size and the throughput per TiB that writes a checkpoint in time at that size;
    the choice is :func:`provision.planning.resolve.resolve`'s, so the spec and a plan with ``kind: auto``
    create the same service (same cheapest-fit rule, same node-image check).
    """
    from provision.planning.resolve import resolve
    from provision.spec import load_spec
    from provision.spec.errors import ProblemCollector, SpecError

    per_tib = max(1, math.ceil(write_gbps * 1000 * 1024 / size_gib))
    draft = {**spec, "storage": {"shared": {"kind": "auto", "size_gib": size_gib, "throughput_mbps_per_tib": per_tib}}}
    try:
        res = resolve(load_spec(draft), load_catalog(), ProblemCollector())
    except SpecError:
        return None
    if res.storage is None or res.storage_size_gib is None:
        return None
    offer = res.storage
    shared: dict[str, Any] = {"kind": offer.kind, "tier": offer.tier, "size_gib": res.storage_size_gib}
    if offer.throughput_mbps_per_tib and res.storage_throughput:
        shared["throughput_mbps_per_tib"] = res.storage_throughput
    shared["mount"] = "/shared"
    why = (
        f"storage: {offer.kind} {offer.tier}, {res.storage_size_gib:,} GiB, the choice storage.shared.kind: auto "
        f"makes for {size_gib:,} GiB at {per_tib} MB/s per TiB (a checkpoint in time)"
    )
    scratch = [w for w in res.warnings if "scratch tier" in w]
    return shared, why + (f"; {scratch[0]}" if scratch else "")


#: The object-store link each cloud's spec can carry (spec/objectstore.py LINKABLE), as a header line to fill in.
_LINK_HINTS = {
    "aws": "storage.shared.object_store: {uri: s3://YOUR-BUCKET/tokens, import_path: /, export_path: /checkpoints}",
    "azure": "storage.shared.object_store: {uri: https://ACCOUNT.blob.core.windows.net/CONTAINER, account_id: "
    "/subscriptions/.../storageAccounts/ACCOUNT, logging_container: CONTAINER-logs, hpc_cache_principal_id: "
    "OBJECT-ID} (kind amlfs)",
    "gcp": "storage.shared.object_store: {uri: gs://YOUR-BUCKET/tokens, import_path: /, export_path: /checkpoints} "
    "(kind managed-lustre or parallelstore)",
    "alibaba": "storage.shared.object_store: {uri: oss://YOUR-BUCKET/tokens, import_path: /data} (kind cpfs)",
}


def _gb(n: float) -> str:
    return f"{n / 1e9:,.0f} GB" if n < 1e12 else f"{n / 1e12:,.1f} TB"


def storage_notes(report: SizingReport, cloud: str) -> list[str]:
    """The storage the sizing assumed, for the spec's header: dataset, checkpoints, write rate, the bucket link."""
    st = report.storage
    notes = [
        f"storage assumed: dataset {_gb(st.dataset_tokenized_bytes)} tokenized ({_gb(st.dataset_raw_text_bytes)} raw "
        f"text), checkpoints {_gb(st.checkpoint_bytes)} each x {st.retained_checkpoints} kept, written at "
        f"{st.required_write_gbps:,.1f} GB/s to finish in {st.checkpoint_minutes:g} min; shared capacity "
        f"{_gb(st.shared_capacity_bytes)}",
    ]
    hint = _LINK_HINTS.get(cloud)
    if hint:
        notes.append(f"to keep the dataset and checkpoints in a bucket, add {hint}")
    else:
        notes.append(f"no object-store link on {cloud}: copy the dataset in and the checkpoints out yourself")
    return notes


def volume_for(report: SizingReport, cloud: str, spec: dict[str, Any]) -> dict[str, Any] | None:
    """The volume spec (``provision volume create``) holding the sized shared filesystem, or ``None`` without one.

    Its name is the cluster's with ``-data``; same cloud, region and zone as ``spec`` (clusters attach it there).
    """
    fs = next((f for f in report.storage.filesystems if f.cloud == cloud and f.kind is not None), None)
    if fs is None or fs.size_gib is None:
        return None
    volume: dict[str, Any] = {
        "name": f"{str(spec['name'])[:35].rstrip('-')}-data",
        "cloud": cloud,
        "region": spec["region"],
        "kind": fs.kind,
        "size_gib": fs.size_gib,
    }
    if spec.get("zone"):
        volume["zone"] = spec["zone"]
    if fs.throughput_mbps_per_tib and fs.kind in ("fsx-lustre", "managed-lustre"):
        volume["throughput_mbps_per_tib"] = int(fs.throughput_mbps_per_tib)
    return volume


def deadline(report: SizingReport) -> float:
    return report.cluster.deadline_days or DEFAULT_DEADLINE_DAYS
