"""The software checklist for a self-built cluster, from ``images/onprem.yaml``.

That file has the same entry shape as ``images/<cloud>.yaml`` (the node images' compatibility data): the first
entry whose ``match`` fits the accelerator vendor and fabric gives the versions that were run together.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import yaml

from provision.planning.images import image_text
from provision.planning.onprem.models import SoftwareItem

#: Which layer each version key belongs to, in checklist order.
_LAYERS: tuple[tuple[str, str, str], ...] = (
    ("os", "operating system", ""),
    ("driver", "GPU driver", "pin the branch; upgrade the whole stack together"),
    ("fabricmanager", "GPU driver", "required on NVSwitch systems; same branch as the driver"),
    ("cuda", "GPU runtime", ""),
    ("cudnn", "GPU runtime", ""),
    ("nccl", "collectives", ""),
    ("rocm", "GPU runtime", ""),
    ("rccl", "collectives", ""),
    ("cann", "NPU runtime", ""),
    ("collectives", "collectives", ""),
    ("packages", "runtime packages", ""),
    ("frameworks", "frameworks", ""),
    ("doca_ofed", "fabric", "host RDMA stack for ConnectX NICs (MLNX_OFED's successor)"),
    ("hpcx", "fabric", "UCX, UCC, Open MPI and the NCCL-RDMA-SHARP plugin"),
    ("sharp", "fabric", ""),
)


@cache
def _entries() -> tuple[dict[str, Any], ...]:
    doc = yaml.safe_load(image_text("onprem.yaml")) or {}
    return tuple(doc.get("images", ()))


def software_stack(accelerator_vendor: str, fabric: str, multi_node: bool) -> tuple[tuple[SoftwareItem, ...], str]:
    """The checklist and the ``images/onprem.yaml`` entry it came from.

    Raises:
        LookupError: no entry matches (a gap in the data file, not user input).
    """
    for entry in _entries():
        match = entry.get("match") or {}
        if accelerator_vendor not in match.get("accelerator_vendor", [accelerator_vendor]):
            continue
        if "fabric" in match and fabric not in match["fabric"]:
            continue
        versions = {k: str(v) for k, v in (entry.get("versions") or {}).items()}
        items = [
            SoftwareItem(layer=layer, item=key, version=versions[key], note=note)
            for key, layer, note in _LAYERS
            if key in versions
        ]
        items.extend(_scheduler(multi_node))
        return tuple(items), f"images/onprem.yaml#{entry['name']}: {entry.get('source', '').strip()}"
    raise LookupError(f"images/onprem.yaml has no entry for {accelerator_vendor} on {fabric}")


def _scheduler(multi_node: bool) -> list[SoftwareItem]:
    slurm = SoftwareItem(
        layer="scheduler",
        item="Slurm",
        version=None,
        note="recommended for a dedicated training cluster (NVIDIA's DGX SuperPOD reference architecture runs Slurm "
        "with Base Command Manager); gang scheduling and topology-aware placement",
    )
    k8s = SoftwareItem(
        layer="scheduler",
        item="Kubernetes + Kubeflow",
        version=None,
        note="when the cluster is shared with services or inference: Kubeflow Training Operator for gang-scheduled "
        "jobs, NVIDIA GPU Operator and Network Operator for drivers, RDMA devices and the NCCL environment",
    )
    if not multi_node:
        return [
            SoftwareItem(
                layer="scheduler",
                item="none needed (one server)",
                version=None,
                note="launch with torchrun on the server; add Slurm or Kubernetes when a second server arrives",
            )
        ]
    return [slurm, k8s]
