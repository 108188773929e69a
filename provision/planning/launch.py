"""Launch helpers (pure): each node's ``/etc/provision/env`` and the launch lines of each launcher.

Every node gets one environment file, ``/etc/provision/env``, with what a distributed job needs::

    MASTER_ADDR=10.0.0.10   MASTER_PORT=29500   NODE_RANK=3   NNODES=8   NPROC_PER_NODE=8
    WORLD_SIZE=64   PROVISION_HOSTFILE=/etc/provision/hostfile   PROVISION_NODE_IPS=10.0.0.10,...
    TF_CONFIG={"cluster":{"worker":["10.0.0.10:12345",...]},"task":{"type":"worker","index":3}}
    + the fabric's NCCL / libfabric / UCX variables (the plan's ``nccl_env``)

``KEY=value`` lines, single-quoted only where a shell needs it (TCPX's ``;``-separated bindings), so
one file serves ``set -a; . /etc/provision/env`` and systemd's ``EnvironmentFile=`` (which strips
the quotes). ``docker --env-file`` takes values verbatim: give containers ``-e`` from the nodes'
own env file instead.

The launch lines source that file (``$PROVISION_ENV_FILE`` overrides the path: the mocked cluster
points it at a local copy), so the same line works on every node and in ``--mock``:

* ``torchrun`` and ``accelerate`` run on **every** node with a static rendezvous on the head node
  (rank = the hostfile's order, so fabric islands keep their ranks);
* ``deepspeed`` and ``mpirun`` run on the **head** node only and start the other ranks over the
  cluster's node-to-node SSH; ``mpirun`` forwards every fabric variable with ``-x`` and adds the
  fabric's transport settings (EFA: AWS's documented ``--mca pml ^cm,ucx --mca btl tcp,self``;
  InfiniBand: UCX over ``rc`` on ``mlx5_ib0``, Microsoft's ND-series guidance).

InfiniBand does not cross fabric islands (Azure: one scale set each; "InfiniBand ... not supported across
VM scale sets", learn.microsoft.com/azure/virtual-machines/sizes-hpc and the ``fabric.islands`` output), so on a
cluster of several islands the whole-cluster lines run NCCL and MPI over TCP on ``eth0`` (``NCCL_IB_DISABLE=1``,
``UCX_TLS=tcp``), and :func:`island_lines` gives one ``mpirun`` line per island at full InfiniBand speed, started
on the island's first node with the island's slice of the hostfile.

Megatron-LM launches through ``torchrun`` (its ``pretrain_gpt.py`` reads the torchrun variables).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

LaunchKind = Literal["torchrun", "deepspeed", "mpirun", "accelerate"]
LAUNCHERS: tuple[LaunchKind, ...] = ("torchrun", "deepspeed", "mpirun", "accelerate")
#: Where each launcher runs: on every node, or on the head node (which starts the rest over SSH).
RUNS_ON: dict[str, Literal["all", "head"]] = {
    "torchrun": "all",
    "accelerate": "all",
    "deepspeed": "head",
    "mpirun": "head",
}

ENV_DIR = "/etc/provision"
ENV_FILE = f"{ENV_DIR}/env"
HOSTFILE = f"{ENV_DIR}/hostfile"
#: torch.distributed's default port (torchrun --master-port default 29500).
MASTER_PORT = 29500
#: Source the env file, exported, wherever the job runs (``PROVISION_ENV_FILE`` overrides the path).
SOURCE_ENV = 'set -a && . "${PROVISION_ENV_FILE:-' + ENV_FILE + '}" && set +a'

_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

#: mpirun transport settings per fabric (Open MPI). The data path is NCCL's; these keep MPI's own
#: traffic off the GPU NICs and away from transports the image lacks.
MPI_FABRIC_ARGS: dict[str, tuple[str, ...]] = {
    # AWS EFA user guide, "Test your EFA and NCCL configuration": --mca pml ^cm (+ ^ucx on DLAMI),
    # --mca btl tcp,self --mca btl_tcp_if_exclude lo,docker0 --bind-to none.
    "efa": ("--mca", "pml", "^cm,ucx", "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_exclude", "lo,docker0"),
    # Azure HPC "NCCL tests on ND-series": UCX over reliable connected on the first IB port, HCOLL off.
    "infiniband": ("-x", "UCX_TLS=rc", "-x", "UCX_NET_DEVICES=mlx5_ib0:1", "--mca", "coll_hcoll_enable", "0"),
}
#: A job across InfiniBand islands: MPI's UCX traffic over TCP on the VNet NIC, NCCL off InfiniBand (UCX's
#: ``UCX_TLS``/``UCX_NET_DEVICES``: openucx.readthedocs.io "Running UCX"; NCCL's ``NCCL_IB_DISABLE``:
#: docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html).
CROSS_ISLAND_ENV = ("NCCL_IB_DISABLE=1",)
MPI_CROSS_ISLAND_ARGS = (
    "-x",
    "NCCL_IB_DISABLE=1",
    "-x",
    "UCX_TLS=tcp",
    "-x",
    "UCX_NET_DEVICES=eth0",
    "--mca",
    "coll_hcoll_enable",
    "0",
)
_MPI_DEFAULT = ("--mca", "pml", "ob1", "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_exclude", "lo,docker0")


@dataclass(frozen=True)
class ClusterFacts:
    """What the env file and the launch lines need; from a plan or from stored outputs.

    Attributes:
        name: the cluster name (the torchrun rendezvous id).
        hosts: private IPs by rank (rank 0 = head node); may be empty before ``up``.
        gpus_per_node: processes per node.
        fabric: the fabric kind (``efa``, ``infiniband``, ``tcpxo``, ...).
        nccl_env: the fabric's environment.
    """

    name: str
    hosts: tuple[str, ...]
    gpus_per_node: int
    fabric: str
    nccl_env: Mapping[str, str]
    #: Nodes per fabric island, in rank order (empty or one: the fabric spans the cluster).
    islands: tuple[int, ...] = ()

    @property
    def nodes(self) -> int:
        return len(self.hosts)

    @property
    def split_fabric(self) -> bool:
        """Whether the RDMA fabric stops at island borders (InfiniBand over several islands)."""
        return self.fabric == "infiniband" and len(self.islands) > 1

    @classmethod
    def from_outputs(cls, outputs: Mapping[str, Any]) -> ClusterFacts:
        """Facts from stack outputs (``cluster``, ``hosts``, ``gpus``, ``nodes``, ``fabric``, ``nccl_env``)."""
        nodes = int(outputs.get("nodes") or len(outputs.get("hosts") or []) or 1)
        fabric = outputs.get("fabric") or {}
        islands = fabric.get("islands") if isinstance(fabric, Mapping) else None
        return cls(
            name=str(outputs.get("cluster") or ""),
            hosts=tuple(outputs.get("hosts") or ()),
            gpus_per_node=max(1, int(outputs.get("gpus") or nodes) // nodes),
            fabric=str(fabric.get("kind", "none") if isinstance(fabric, Mapping) else fabric),
            nccl_env=dict(outputs.get("nccl_env") or {}),
            islands=tuple(int(i.get("nodes", 0)) for i in islands or () if isinstance(i, Mapping)),
        )


def node_env(facts: ClusterFacts, rank: int) -> dict[str, str]:
    """The environment of node ``rank``: rendezvous, sizes, hostfile, and the fabric's variables.

    Raises:
        IndexError: ``rank`` is not a node of the cluster.
    """
    if not 0 <= rank < max(facts.nodes, 1):
        raise IndexError(f"rank {rank} is not a node of {facts.name} ({facts.nodes} nodes)")
    env = dict(facts.nccl_env)
    env.update(
        {
            "PROVISION_CLUSTER": facts.name,
            "PROVISION_NODE_IPS": ",".join(facts.hosts),
            "PROVISION_HOSTFILE": HOSTFILE,
            "MASTER_ADDR": facts.hosts[0] if facts.hosts else "127.0.0.1",
            "MASTER_PORT": str(MASTER_PORT),
            "NODE_RANK": str(rank),
            "NNODES": str(max(facts.nodes, 1)),
            "NPROC_PER_NODE": str(facts.gpus_per_node),
            "WORLD_SIZE": str(max(facts.nodes, 1) * facts.gpus_per_node),
            "TF_CONFIG": tf_config(facts, rank),
        }
    )
    return env


#: The port each TensorFlow worker listens on (TensorFlow's multi-worker tutorial uses 12345).
TF_PORT = 12345


def tf_config(facts: ClusterFacts, rank: int) -> str:
    """TensorFlow's ``TF_CONFIG`` for node ``rank``: every node a worker (one per node, in rank order), this one
    ``index`` = its rank, as ``MultiWorkerMirroredStrategy`` reads it (tensorflow.org/tutorials/distribute/
    multi_worker_with_keras, "Multi-worker configuration")."""
    import json

    hosts = list(facts.hosts) or ["127.0.0.1"]
    workers = [f"{h}:{TF_PORT}" for h in hosts]
    return json.dumps(
        {"cluster": {"worker": workers}, "task": {"type": "worker", "index": rank}}, separators=(",", ":")
    )


def render_env_file(env: Mapping[str, str]) -> str:
    """``KEY=value`` lines, sorted, for ``/etc/provision/env``.

    Raises:
        ValueError: a key is not a shell name, or a value holds a newline or a NUL.
    """
    lines = []
    for key, value in sorted(env.items()):
        if not _KEY.match(key):
            raise ValueError(f"{key!r} is not an environment variable name")
        if "\n" in value or "\0" in value or "\r" in value:
            raise ValueError(f"{key}: a value in an env file cannot hold a line break")
        lines.append(f"{key}={shlex.quote(value)}")
    return "\n".join(lines) + "\n"


def export_lines(env: Mapping[str, str]) -> str:
    """``export KEY=value`` lines (shell-quoted) to paste into a shell or a job script."""
    return "".join(f"export {k}={shlex.quote(v)}\n" for k, v in sorted(env.items()))


def launch_argv(
    kind: str,
    facts: ClusterFacts,
    script: str,
    args: Sequence[str] = (),
    *,
    hosts: Sequence[str] | None = None,
    mpirun: str = "mpirun",
    island: int | None = None,
) -> list[str]:
    """The launcher's command line (words; ``$VARS`` from the env file left for the node's shell).

    Args:
        hosts: ``mpirun`` only: run on these node addresses (one rank per GPU each) instead of the whole
            cluster's hostfile (``provision nccl-test`` measures pairs of nodes this way; they share an island).
        mpirun: ``mpirun`` only: the program to start (the nodes' own, e.g. the nccl-tests step's wrapper).
        island: ``mpirun`` only: run on this fabric island's nodes (hostfile :func:`island_hostfile`).

    Raises:
        ValueError: ``kind`` is not one of :data:`LAUNCHERS`.
    """
    tail = [script, *args]
    # The whole cluster over islands the RDMA fabric does not join: NCCL over TCP (mpirun sets its own below).
    cross = facts.split_fabric and hosts is None and island is None
    if cross and kind != "mpirun":
        return [*CROSS_ISLAND_ENV, *launch_argv(kind, replace(facts, islands=()), script, args)]
    if kind == "torchrun":
        return [
            "torchrun",
            "--nnodes=$NNODES",
            "--nproc-per-node=$NPROC_PER_NODE",
            "--node-rank=$NODE_RANK",
            "--master-addr=$MASTER_ADDR",
            "--master-port=$MASTER_PORT",
            *tail,
        ]
    if kind == "accelerate":
        return [
            "accelerate",
            "launch",
            "--multi_gpu",
            "--num_machines=$NNODES",
            "--num_processes=$WORLD_SIZE",
            "--machine_rank=$NODE_RANK",
            "--main_process_ip=$MASTER_ADDR",
            "--main_process_port=$MASTER_PORT",
            *tail,
        ]
    if kind == "deepspeed":
        # DeepSpeed's pdsh runner forwards NCCL_*/UCX_*/PYTHON* and whatever ~/.deepspeed_env lists
        # (deepspeed/launcher/runner.py); provision writes the fabric's variables there on each node.
        return [
            "deepspeed",
            "--hostfile=$PROVISION_HOSTFILE",
            "--master_addr=$MASTER_ADDR",
            "--master_port=$MASTER_PORT",
            "--launcher=pdsh",
            *tail,
        ]
    if kind == "mpirun":
        forwarded: list[str] = []
        for key in sorted({*facts.nccl_env, "MASTER_ADDR", "MASTER_PORT", "PATH", "LD_LIBRARY_PATH"}):
            forwarded += ["-x", key]
        if hosts is not None:
            where = ["-np", str(len(hosts) * facts.gpus_per_node), "-H"]
            where.append(",".join(f"{h}:{facts.gpus_per_node}" for h in hosts))
        elif island is not None:
            where = ["-np", str(facts.islands[island] * facts.gpus_per_node), "--hostfile", island_hostfile(island)]
        else:
            where = ["-np", "$WORLD_SIZE", "--hostfile", "$PROVISION_HOSTFILE"]
        transport = MPI_CROSS_ISLAND_ARGS if cross else MPI_FABRIC_ARGS.get(facts.fabric, _MPI_DEFAULT)
        return [
            mpirun,
            *where,
            "--map-by",
            "ppr:$NPROC_PER_NODE:node",
            "--bind-to",
            "none",
            *forwarded,
            *transport,
            *tail,
        ]
    raise ValueError(f"{kind!r} is not a launcher; use one of {', '.join(LAUNCHERS)}")


def _word(w: str) -> str:
    """Shell-quote a word but leave ``$NAME`` references to the env file expandable."""
    if re.fullmatch(r"[A-Za-z0-9_.,:/=^@%+\-]*(\$[A-Z_]+[A-Za-z0-9_.,:/=^@%+\-]*)*", w):
        return w
    return shlex.quote(w)


def launch_line(
    kind: str,
    facts: ClusterFacts,
    script: str,
    args: Sequence[str] = (),
    *,
    hosts: Sequence[str] | None = None,
    mpirun: str = "mpirun",
) -> str:
    """One shell line for the node(s) of ``RUNS_ON[kind]``: source the env file, then launch."""
    argv = launch_argv(kind, facts, script, args, hosts=hosts, mpirun=mpirun)
    return f"{SOURCE_ENV} && " + " ".join(_word(w) for w in argv)


def island_hostfile(island: int) -> str:
    """Where an island's line writes its slice of the hostfile (on the island's first node)."""
    return f"$HOME/.provision-island{island}-hostfile"


def island_lines(facts: ClusterFacts, script: str = "train.py", args: Sequence[str] = ()) -> list[dict[str, Any]]:
    """One ``mpirun`` line per fabric island (InfiniBand inside the island), for a cluster whose fabric is split.

    Each runs on the island's first node: it writes the island's lines of the hostfile (rank order) and starts
    one rank per GPU on those nodes only. ``[]`` when the fabric spans the cluster.
    """
    if not facts.split_fabric:
        return []
    out: list[dict[str, Any]] = []
    first = 0
    for i, size in enumerate(facts.islands):
        cut = f'sed -n \'{first + 1},{first + size}p\' "$PROVISION_HOSTFILE" >"{island_hostfile(i)}"'
        argv = launch_argv("mpirun", facts, script, args, island=i)
        line = f"{SOURCE_ENV} && {cut} && " + " ".join(_word(w) for w in argv)
        out.append({"island": i, "first_rank": first, "nodes": size, "runs_on": "island head", "line": line})
        first += size
    return out


def launch_lines(facts: ClusterFacts, script: str = "train.py") -> dict[str, Any]:
    """The ``launch`` output: per launcher, where it runs and its line for ``script`` (over the whole cluster), and,
    when the fabric is split into islands, ``islands``: one full-speed ``mpirun`` line per island."""
    out: dict[str, Any] = {k: {"runs_on": RUNS_ON[k], "line": launch_line(k, facts, script)} for k in LAUNCHERS}
    if facts.split_fabric:
        out["islands"] = island_lines(facts, script)
    return out
