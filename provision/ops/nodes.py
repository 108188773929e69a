"""Running a command on a cluster's nodes: the one interface health checks and the NCCL test use.

A :data:`NodeRunner` takes a shell command and the node ranks to run it on, and returns one
:class:`NodeResult` per node. Two implementations:

* real clusters: ``provision exec``'s SSH fan-out (:mod:`provision.ops.exec`, ``run_on_nodes(cluster, cmd,
  nodes=...)``, issue 14), adapted by :func:`ssh_runner`;
* mocked clusters: :class:`MockNodes`. Each node is a sandbox holding the files the node's real
  bootstrap writes (rendered from the plan by the cloud's ``userdata.mock_user_data``), with fake
  ``nvidia-smi``, ``rocm-smi``, ``fi_info``, ``ibv_devinfo``, ``rdma``, ``mount``, ``uname``, ``mpirun`` and
  ``all_reduce_perf`` (``images/fake-node/bin``) first on ``PATH``. The command runs with ``bash -c`` and
  that node's environment, so the real node-side health check runs against them. :class:`NodeFault`
  breaks one check on one node (or slows a node or a pair down, or spoils the NCCL transport a node uses:
  ``net_socket``, ``no_gdr``, ``one_nic``; see :data:`TRANSPORT_FAULTS`).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from provision.planning.bootstrap import materialize
from provision.planning.images import images_dir
from provision.planning.launch import ClusterFacts, node_env, render_env_file
from provision.spec.errors import Problem, UnsupportedError

if TYPE_CHECKING:
    from provision.planning.plan import ClusterPlan

#: Checks a fault can break (the node-side health check's names, plus the NCCL test's).
FAULT_CHECKS = (
    "gpus",
    "driver",
    "cuda",
    "nvlink",
    "fabric",
    "shared_fs",
    "scratch",
    "nccl_tests",
    "bootstrap",
    "bandwidth",
    "link",
    "net_socket",
    "no_gdr",
    "one_nic",
)
#: Faults of the NCCL transport a node's ranks use, as the fake ``all_reduce_perf`` logs it under ``NCCL_DEBUG=INFO``:
#: a fallback to TCP sockets, no GPUDirect RDMA, every GPU on the first NIC. They leave the bandwidth alone, so
#: only the transport check can catch them (as a lenient floor would on a real cluster).
TRANSPORT_FAULTS = ("net_socket", "no_gdr", "one_nic")


def fake_net(plan: ClusterPlan) -> tuple[str, int]:
    """The NCCL net name and NICs per node a healthy mocked node logs: the plugin's own name (see
    :mod:`provision.ops.nccl_transport`; GCP's gIB plugin name is as seen in public NCCL logs, not its source) and
    one NIC per ERI on eRDMA, else the plan's fabric interfaces. ``("", 0)``: no transport lines (TCPX, TCPXO, none).
    """
    name = {"efa": "Libfabric", "infiniband": "IB", "erdma": "IB", "rdma": "gIB"}.get(plan.fabric, "")
    nics = (plan.extra.nccl_nics() or 0) if plan.fabric == "erdma" else plan.fabric_interfaces
    return (name, nics) if name else ("", 0)


@dataclass(frozen=True)
class NodeResult:
    """What one node answered: its rank, address, exit code and output."""

    rank: int
    host: str
    exit_code: int
    stdout: str
    stderr: str = ""


#: ``runner(command, ranks) -> [NodeResult per rank]``; ranks ``None`` means every node.
NodeRunner = Callable[[str, "Sequence[int] | None"], list[NodeResult]]


@dataclass(frozen=True)
class NodeFault:
    """A fault on a mocked node: ``check`` fails on node ``rank``; ``link`` slows the pair (rank, peer) down."""

    rank: int
    check: str
    peer: int | None = None

    @classmethod
    def parse(cls, text: str) -> NodeFault:
        """``RANK:CHECK`` or ``RANK-PEER:link`` (the CLI's ``--inject``).

        Raises:
            UnsupportedError: the text is not of that form or names an unknown check (exit 2).
        """
        head, _, check = text.partition(":")
        rank, _, peer = head.partition("-")
        if (
            not (rank.isascii() and rank.isdigit())
            or (peer and not (peer.isascii() and peer.isdigit()))
            or check not in FAULT_CHECKS
            or (check == "link") != bool(peer)
        ):
            raise UnsupportedError(
                f"bad node fault {text!r}",
                [
                    Problem(
                        "--inject",
                        text,
                        f"is not RANK:CHECK (CHECK one of {', '.join(c for c in FAULT_CHECKS if c != 'link')}) "
                        "or RANK-PEER:link",
                        "write e.g. 3:fabric or 0-1:link",
                    )
                ],
            )
        return cls(int(rank), check, int(peer) if peer else None)


def mock_user_data(plan: ClusterPlan) -> str:
    """The node user data of ``plan`` as the mocked cloud's nodes would get it (``#cloud-config`` text).

    Raises:
        UnsupportedError: a ``scheduler: kubernetes`` cluster (its nodes run the managed node image).
    """
    if plan.spec.scheduler.kind == "kubernetes":  # Slurm clusters run provision's bootstrap too
        from provision.spec.errors import UnsupportedError

        raise UnsupportedError(
            f"{plan.name} runs under Kubernetes: its nodes boot the managed service's image, not provision's "
            "bootstrap, so mocked node health does not apply. To fix: use kubectl on the cluster's nodes"
        )
    module = importlib.import_module(f"provision.clouds.{plan.cloud}.userdata")
    return module.mock_user_data(plan)  # type: ignore[no-any-return]


class MockNodes:
    """The nodes of a mocked cluster: sandboxes with fake GPU and fabric tools. Use as a context manager.

    Args:
        plan: the cluster's plan; hosts: the node addresses by rank (the ``hosts`` output).
        faults: what to break; busbw_gbps: the bus bandwidth a healthy all-reduce reports.
    """

    def __init__(
        self, plan: ClusterPlan, hosts: Sequence[str], faults: Sequence[NodeFault] = (), busbw_gbps: float = 100.0
    ) -> None:
        for f in faults:
            for r in (f.rank, f.peer):
                if r is not None and not 0 <= r < len(hosts):
                    raise UnsupportedError(
                        f"node {r} does not exist",
                        [
                            Problem(
                                "--inject",
                                f"{f.rank}:{f.check}",
                                f"names node {r}, but the cluster has nodes 0..{len(hosts) - 1}",
                                "name an existing node",
                            )
                        ],
                    )
        self.plan, self.hosts, self.faults, self.busbw_gbps = plan, list(hosts), tuple(faults), busbw_gbps
        self._dir: Path | None = None

    def __enter__(self) -> MockNodes:
        self._dir = Path(tempfile.mkdtemp(prefix="provision-nodes-"))
        # The node's python3 is this interpreter (fast to start; no version-manager shims in between).
        (self._dir / "bin").mkdir()
        (self._dir / "bin" / "python3").symlink_to(sys.executable)
        text = mock_user_data(self.plan)
        for rank in range(len(self.hosts)):
            self._build(self._dir / f"node-{rank}", text, rank)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)

    def broken(self, rank: int) -> set[str]:
        return {f.check for f in self.faults if f.rank == rank and f.check != "link"}

    def _build(self, root: Path, user_data: str, rank: int) -> None:
        materialize(user_data, root)
        expect = json.loads((root / "etc/provision/health.json").read_text())
        broken = self.broken(rank)
        devices = int(expect.get("fabric_devices") or 0) - (1 if "fabric" in broken else 0)
        if expect.get("fabric") == "efa":
            for i in range(max(devices, 0)):
                counters = root / f"sys/class/infiniband/rdmap{i}s0/ports/1/hw_counters"  # what `top` reads
                counters.mkdir(parents=True, exist_ok=True)
                for name, value in (("rx_bytes", 10**9 * (rank + 1)), ("tx_bytes", 2 * 10**9 * (rank + 1))):
                    (counters / name).write_text(f"{value + i}\n")
        for i, nic in enumerate(expect.get("gpu_nics") or []):
            (root / f"sys/class/net/{nic}").mkdir(parents=True, exist_ok=True)
            operstate = "down" if "fabric" in broken and i == 0 else "up"
            (root / f"sys/class/net/{nic}/operstate").write_text(operstate + "\n")
        tests = expect.get("nccl_tests")
        if tests and "nccl_tests" not in broken:
            # What the nccl-tests step leaves on a node: its all_reduce_perf and mpirun (here the fake ones).
            fakes = images_dir() / "fake-node" / "bin"
            for key in ("all_reduce_perf", "mpirun"):
                link = root / tests[key].lstrip("/")
                link.parent.mkdir(parents=True, exist_ok=True)
                link.symlink_to(fakes / key)
        facts = ClusterFacts(
            self.plan.name, tuple(self.hosts), self.plan.gpus_per_node, self.plan.fabric, dict(self.plan.nccl_env)
        )
        (root / "etc/provision/env").write_text(render_env_file(node_env(facts, rank)))
        steps = json.loads((root / "etc/provision/steps.json").read_text())["steps"]
        record = {s["name"]: {"status": "ok", "critical": s["critical"], "every_boot": s["every_boot"]} for s in steps}
        if "bootstrap" in broken:
            victim = next(s["name"] for s in reversed(steps) if s["critical"])
            record[victim] = {"status": "failed", "critical": True, "exit_code": 1, "tail": ["injected failure"]}
        state = {"ok": "bootstrap" not in broken, "order": [s["name"] for s in steps], "steps": record}
        (root / "var/lib/provision").mkdir(parents=True, exist_ok=True)
        (root / "var/lib/provision/bootstrap.json").write_text(json.dumps(state))

    def env(self, rank: int) -> dict[str, str]:
        """The environment a command on node ``rank`` runs with."""
        assert self._dir is not None  # noqa: S101
        fakes = images_dir() / "fake-node" / "bin"
        slow = [self.hosts[f.rank] for f in self.faults if f.check == "bandwidth"]
        missing = [self.hosts[f.rank] for f in self.faults if f.check == "nccl_tests"]
        pairs = [
            f"{self.hosts[f.rank]}+{self.hosts[f.peer]}"
            for f in self.faults
            if f.check == "link" and f.peer is not None
        ]
        net, nics = fake_net(self.plan)
        transport = [f"{self.hosts[f.rank]}={f.check}" for f in self.faults if f.check in TRANSPORT_FAULTS]
        return {
            **os.environ,
            "PATH": os.pathsep.join([str(self._dir / "bin"), str(fakes), os.environ.get("PATH", "")]),
            "PROVISION_ROOT": str(self._dir / f"node-{rank}"),
            "PROVISION_NODE_RANK": str(rank),
            "PROVISION_ENV_FILE": str(self._dir / f"node-{rank}" / "etc/provision/env"),
            "FAKE_BROKEN": ",".join(sorted(self.broken(rank))),
            "FAKE_BUSBW_GBPS": str(self.busbw_gbps),
            "FAKE_SLOW_HOSTS": ",".join(slow),
            "FAKE_SLOW_PAIRS": ",".join(pairs),
            "FAKE_MISSING_HOSTS": ",".join(missing),
            "FAKE_NET": net,
            "FAKE_NICS": str(nics),
            # The GPU-NIC PCIe distance NCCL sees: SYS between a GPU and an ERI (alibabacloud-erdma-controller
            # docs/erdma-benchmark/README.md section 3.3), so GDR needs NCCL_NET_GDR_LEVEL=SYS there.
            "FAKE_GDR_DISTANCE": "SYS" if self.plan.fabric == "erdma" else "PIX",
            "FAKE_TRANSPORT_FAULTS": ",".join(transport),
        }

    def run(self, command: str, ranks: Sequence[int] | None = None) -> list[NodeResult]:
        """Run ``command`` with ``bash -c`` once per node, with that node's environment."""
        out = []
        for rank in range(len(self.hosts)) if ranks is None else ranks:
            p = subprocess.run(["bash", "-c", command], env=self.env(rank), capture_output=True, text=True, timeout=300)
            out.append(NodeResult(rank, self.hosts[rank], p.returncode, p.stdout, p.stderr))
        return out


def require_node_access() -> None:
    """Check, before anything is created, that commands can reach real nodes.

    Raises:
        UnsupportedError: this installation has no ``provision exec`` (SSH fan-out) yet.
    """
    if importlib.util.find_spec("provision.ops.exec") is None:
        raise UnsupportedError(
            "running commands on real nodes needs `provision exec` (SSH fan-out), which this installation lacks; "
            "to fix: upgrade provision, or run the check on the cluster with --mock"
        )


def ssh_runner(cluster: Any) -> NodeRunner:
    """A runner over SSH through ``provision exec`` (issue 14's ``provision.ops.exec.run_on_nodes``).

    Raises:
        UnsupportedError: this installation has no ``provision exec`` yet.
    """
    require_node_access()
    exec_module = importlib.import_module("provision.ops.exec")

    def run(command: str, ranks: Sequence[int] | None = None) -> list[NodeResult]:
        nodes: Any = "all" if ranks is None else list(ranks)
        results = exec_module.run_on_nodes(cluster, command, nodes=nodes)
        return [
            NodeResult(
                r.rank, r.host, r.exit_code, r.stdout, str(getattr(r, "error", None) or getattr(r, "stderr", ""))
            )
            for r in results
        ]

    return run
