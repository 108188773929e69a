"""Acceptance of a running cluster: node health, then the NCCL all-reduce test, then a record of what was measured.

``provision health``, ``provision nccl-test`` and ``provision up --accept`` run through :func:`node_runner`, which
picks the mocked nodes for a mocked cluster (with injected :class:`~provision.ops.nodes.NodeFault` s) and
``provision exec``'s SSH fan-out for a real one. The measured bandwidth and the inter-node transports NCCL used go
into the ``fabric_manifest`` output (mock state), or next to the state for a real stack
(``$PROVISION_HOME/manifests/<stack>.json``), so two runs can be compared.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from provision.ops.health import HealthReport, check_health
from provision.ops.nccl import NcclResult, floor_for, nccl_test
from provision.ops.nodes import MockNodes, NodeFault, NodeRunner, ssh_runner
from provision.spec.errors import UnsupportedError
from provision.spec.units import format_time


@contextmanager
def node_runner(cluster: Any, faults: Sequence[NodeFault] = (), *, for_mpi: bool = False) -> Iterator[NodeRunner]:
    """A :data:`NodeRunner` for ``cluster`` (a :class:`~provision.ops.cluster.Cluster` that is up).

    With ``for_mpi`` (the NCCL test), a real cluster's nodes are first prepared as ``provision launch`` prepares
    them (:func:`provision.ops.launch.ensure_prepared`: ``/etc/provision/env``, hostfile, node-to-node key), since
    the test runs the launch helpers' ``mpirun`` line. Health alone needs none of it, so an unreachable node is
    still named by the health check instead of failing the preparation.

    Raises:
        UnsupportedError: faults on a real cluster; CloudError: the cluster is not up.
    """
    if cluster.mock:
        plan = cluster.plan()
        floor = floor_for(plan).busbw_gbps
        # A healthy mocked fabric measures a quarter above its floor.
        with MockNodes(plan, cluster.hosts, faults, busbw_gbps=round((floor or 80.0) * 1.25, 1)) as nodes:
            yield nodes.run
        return
    if faults:
        raise UnsupportedError("node faults can only be injected into mocked nodes; to fix: add --mock")
    runner = ssh_runner(cluster)
    if for_mpi:
        from provision.ops.launch import ensure_prepared

        ensure_prepared(cluster)
    yield runner


@dataclass
class Acceptance:
    """Health and NCCL results of one acceptance run."""

    health: HealthReport
    nccl: NcclResult | None

    @property
    def ok(self) -> bool:
        return self.health.ok and self.nccl is not None and self.nccl.ok

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "health": self.health.as_dict(),
            "nccl": self.nccl.as_dict() if self.nccl else {"skipped": "nodes are not healthy"},
        }

    def lines(self) -> list[str]:
        out = ["health: " + line for line in self.health.lines()]
        out += ["nccl: " + line for line in (self.nccl.lines() if self.nccl else ["skipped: nodes are not healthy"])]
        return out


def accept(cluster: Any, faults: Sequence[NodeFault] = ()) -> Acceptance:
    """Health on every node, then (when all are healthy) the NCCL test; records the measurement."""
    with node_runner(cluster, faults) as run:
        health = check_health(run)
    nccl = None
    if health.ok:
        with node_runner(cluster, faults, for_mpi=True) as run:
            nccl = nccl_test(cluster.plan(), cluster.hosts, run)
    if nccl is not None:
        record_measurement(cluster, nccl)
    return Acceptance(health, nccl)


def measurement(result: NcclResult) -> dict[str, Any]:
    return {
        "all_reduce_busbw_gbps": result.busbw_gbps,
        "floor_gbps": result.floor.busbw_gbps,
        "floor_kind": result.floor.kind,
        "floor_source": result.floor.source,
        "nodes": result.nodes,
        # What NCCL used between nodes (net, NICs, GPUDirect links per node) and what the fabric check said of it.
        "transports": result.transports.as_dict(),
        "ok": result.ok,
        "measured_at": format_time(datetime.now(timezone.utc).replace(microsecond=0)),
    }


def record_measurement(cluster: Any, result: NcclResult) -> dict[str, Any]:
    """Put the measured bandwidth into the cluster's fabric manifest; returns the manifest."""
    from provision.engine.automation import private_dir, provision_home

    entry = measurement(result)
    if cluster.mock:
        from provision.engine.mockstate import MockStore

        store = MockStore()
        state = store.load(cluster.stack)
        if state is not None:
            manifest = dict(state.outputs.get("fabric_manifest") or {})
            manifest["measured"] = entry
            state.outputs["fabric_manifest"] = manifest
            store.save(state)
            cluster._outputs = None  # noqa: SLF001  # re-read the outputs with the new manifest
            return manifest
    manifest = {**dict(cluster.outputs.get("fabric_manifest") or {}), "measured": entry}
    path = private_dir(provision_home() / "manifests") / (cluster.stack.replace("/", "_") + ".json")
    path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return manifest
