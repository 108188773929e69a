"""Slurm's configuration for a cluster plan (pure): ``slurm.conf``, ``gres.conf``, ``topology.conf``, ``cgroup.conf``.

A :class:`SlurmLayout` is what the files need of a plan: the controller, and per node group (one
partition each) its node names and addresses, GPUs per node, CPUs, memory, features and fabric
islands. :func:`layout_from_plan` builds it from a :class:`~provision.planning.plan.ClusterPlan`; a
cloud's build passes the addresses it gives the controller and nodes (the seam: node names are
``<cluster>-<rank>``, each node's ``slurmd`` starts with ``-N`` its name, so the names do not depend on
the hostnames a cloud assigns). :class:`SlurmPaths` are the daemons' ports and folders (the defaults
are Debian's / Ubuntu's package layout; tests point them at a temporary folder).

Sources: slurm.conf(5) https://slurm.schedmd.com/slurm.conf.html, gres.conf(5)
https://slurm.schedmd.com/gres.conf.html, topology.conf(5) https://slurm.schedmd.com/topology.conf.html
(topology/tree since 2.0; topology/block since Slurm 23.11, https://slurm.schedmd.com/topology.html),
cgroup.conf(5) https://slurm.schedmd.com/cgroup.conf.html.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from provision.planning.plan import PlanPart

if TYPE_CHECKING:
    from provision.spec import ClusterSpec

#: Slurm releases with topology/block (images/compat.yaml ``slurm.topology_block_min_slurm``, with its source).
BLOCK_MIN_VERSION = (23, 11)
#: Share of a node's memory given to jobs (``RealMemory``): slurmd drains a node whose memory is below
#: its configured ``RealMemory`` ("Low RealMemory"), and the OS, page cache of the image and the
#: drivers need the rest.
MEMORY_SHARE = 0.9
#: Where the node health check lives on the nodes (images/common/steps/slurm.sh installs it).
HEALTH_CHECK = "/usr/local/sbin/provision-slurm-health"
HEALTH_INTERVAL_S = 300

TopologyKind = Literal["block", "tree", "none"]


@dataclass(frozen=True)
class SlurmNode:
    name: str
    addr: str | None = None


@dataclass(frozen=True)
class NodeGroup:
    """One partition's nodes: same type, same GPU count; ``islands`` are nodes per island in order."""

    partition: str
    nodes: tuple[SlurmNode, ...]
    gpus: int
    gpu_type: str | None
    cpus: int
    memory_mib: int
    features: tuple[str, ...] = ()
    islands: tuple[int, ...] = ()
    gpu_files: str = "/dev/nvidia[0-{last}]"


@dataclass(frozen=True)
class SlurmPaths:
    """Ports and folders of the daemons (Debian / Ubuntu slurm-wlm package defaults)."""

    ctld_port: int = 6817
    slurmd_port: int = 6818
    dbd_port: int = 6819
    state_dir: str = "/var/spool/slurmctld"
    spool_dir: str = "/var/spool/slurmd"
    log_dir: str = "/var/log/slurm"
    run_dir: str = "/run"
    slurm_user: str = "slurm"
    proctrack: str = "proctrack/cgroup"
    task: str = "task/cgroup,task/affinity"
    health_check: str | None = HEALTH_CHECK


@dataclass(frozen=True)
class SlurmLayout:
    cluster: str
    controller: SlurmNode
    groups: tuple[NodeGroup, ...]
    topology: TopologyKind = "tree"
    accounting: bool = False
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def nodes(self) -> tuple[SlurmNode, ...]:
        return tuple(n for g in self.groups for n in g.nodes)


def feature(text: str) -> str:
    """A Slurm node feature from free text: characters of constraint expressions (``&|,[]*()!``, spaces)
    become ``_`` (``--constraint`` in https://slurm.schedmd.com/sbatch.html)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", text)


def hostlist(names: Sequence[str]) -> str:
    """Slurm's compact host list: runs of ``prefix-N`` with consecutive numbers become ``prefix-[a-b]``."""
    out: list[str] = []
    run: list[tuple[str, int, int, int]] = []  # prefix, first, last, width
    for name in names:
        m = re.fullmatch(r"(.*?)(\d+)", name)
        if m is None:
            out.append(name)
            continue
        prefix, num = m.group(1), int(m.group(2))
        width = len(m.group(2)) if len(m.group(2)) > 1 and m.group(2).startswith("0") else 0
        if run and run[-1][0] == prefix and run[-1][2] == num - 1 and run[-1][3] == width:
            run[-1] = (prefix, run[-1][1], num, width)
            continue
        run.append((prefix, num, num, width))
        out.append("\0")  # placeholder
    rendered = iter(f"{p}{a:0{w}d}" if a == b else f"{p}[{a:0{w}d}-{b:0{w}d}]" for p, a, b, w in run)
    return ",".join(next(rendered) if x == "\0" else x for x in out)


def _node_line(group: NodeGroup, node: SlurmNode) -> str:
    words = [f"NodeName={node.name}"]
    if node.addr:
        words.append(f"NodeAddr={node.addr}")
    words += [f"CPUs={group.cpus}", f"RealMemory={group.memory_mib}"]
    if group.gpus:
        words.append(f"Gres=gpu:{group.gpu_type + ':' if group.gpu_type else ''}{group.gpus}")
    if group.features:
        words.append(f"Feature={','.join(group.features)}")
    words.append("State=UNKNOWN")
    return " ".join(words)


def render_slurm_conf(layout: SlurmLayout, paths: SlurmPaths | None = None) -> str:
    """``/etc/slurm/slurm.conf``: the same file on the controller and every node."""
    p = paths or SlurmPaths()
    ctl = layout.controller
    lines = [
        "# Rendered by provision (provision/planning/slurm.py); the same file on every node.",
        f"ClusterName={layout.cluster}",
        f"SlurmctldHost={ctl.name}" + (f"({ctl.addr})" if ctl.addr else ""),
        f"SlurmctldPort={p.ctld_port}",
        f"SlurmdPort={p.slurmd_port}",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"SlurmUser={p.slurm_user}",
        f"StateSaveLocation={p.state_dir}",
        f"SlurmdSpoolDir={p.spool_dir}",
        f"SlurmctldPidFile={p.run_dir}/slurmctld.pid",
        f"SlurmdPidFile={p.run_dir}/slurmd.pid",
        f"SlurmctldLogFile={p.log_dir}/slurmctld.log",
        f"SlurmdLogFile={p.log_dir}/slurmd.log",
        f"ProctrackType={p.proctrack}",
        f"TaskPlugin={p.task}",
        "SchedulerType=sched/backfill",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core_Memory",
        "MpiDefault=none",
        # A node back from a reboot or a cleared health check returns by itself.
        "ReturnToService=2",
        "SlurmctldTimeout=120",
        "SlurmdTimeout=300",
        "KillWait=30",
    ]
    if any(g.gpus for g in layout.groups):
        lines.append("GresTypes=gpu")
    if layout.topology != "none":
        lines.append(f"TopologyPlugin=topology/{layout.topology}")
    if p.health_check:
        # Failed checks drain the node with the check's reason (scontrol update ... State=DRAIN Reason=...).
        lines += [
            f"HealthCheckProgram={p.health_check}",
            f"HealthCheckInterval={HEALTH_INTERVAL_S}",
            "HealthCheckNodeState=ANY,CYCLE",
        ]
    if layout.accounting:
        lines += [
            "AccountingStorageType=accounting_storage/slurmdbd",
            f"AccountingStorageHost={ctl.name}",
            f"AccountingStoragePort={p.dbd_port}",
            "JobAcctGatherType=jobacct_gather/" + ("cgroup" if "cgroup" in p.proctrack else "linux"),
        ]
    else:
        lines += ["AccountingStorageType=accounting_storage/none", "JobAcctGatherType=jobacct_gather/none"]
    lines += [f"{k}={v}" for k, v in sorted(layout.extra.items())]
    lines.append("")
    for g in layout.groups:
        lines += [_node_line(g, n) for n in g.nodes]
    for i, g in enumerate(layout.groups):
        lines.append(
            f"PartitionName={g.partition} Nodes={hostlist([n.name for n in g.nodes])} "
            f"Default={'YES' if i == 0 else 'NO'} MaxTime=INFINITE State=UP OverSubscribe=EXCLUSIVE"
        )
    return "\n".join(lines) + "\n"


def render_gres_conf(layout: SlurmLayout) -> str:
    """``/etc/slurm/gres.conf``: each group's GPUs by device file (no NVML autodetection: Debian's and
    Ubuntu's slurmd are built without it)."""
    lines = ["# Rendered by provision (provision/planning/slurm.py)."]
    for g in layout.groups:
        if not g.gpus:
            continue
        files = g.gpu_files.format(last=g.gpus - 1)
        kind = f" Type={g.gpu_type}" if g.gpu_type else ""
        lines.append(f"NodeName={hostlist([n.name for n in g.nodes])} Name=gpu{kind} File={files}")
    return "\n".join(lines) + "\n"


def islands_of(group: NodeGroup) -> list[tuple[SlurmNode, ...]]:
    """The group's nodes cut into its placement islands (one island when none are given)."""
    sizes = group.islands or (len(group.nodes),)
    if sum(sizes) != len(group.nodes):
        raise ValueError(f"islands {sizes} do not add up to the {len(group.nodes)} nodes of {group.partition}")
    out, start = [], 0
    for size in sizes:
        out.append(group.nodes[start : start + size])
        start += size
    return out


def render_topology_conf(layout: SlurmLayout) -> str:
    """``/etc/slurm/topology.conf``: one block (topology/block) or leaf switch (topology/tree) per
    placement island, so a job's nodes land inside one island when one has room."""
    islands = [i for g in layout.groups for i in islands_of(g)]
    lines = ["# Rendered by provision (provision/planning/slurm.py): one entry per placement island."]
    if layout.topology == "block":
        lines += [f"BlockName=island{k} Nodes={hostlist([n.name for n in isl])}" for k, isl in enumerate(islands)]
    elif layout.topology == "tree":
        lines += [f"SwitchName=island{k} Nodes={hostlist([n.name for n in isl])}" for k, isl in enumerate(islands)]
        if len(islands) > 1:
            lines.append(f"SwitchName=top Switches=island[0-{len(islands) - 1}]")
    return "\n".join(lines) + "\n"


def render_cgroup_conf() -> str:
    """``/etc/slurm/cgroup.conf``: jobs see only their GPUs and cores, and stay in their memory."""
    return (
        "# Rendered by provision (provision/planning/slurm.py).\n"
        "ConstrainCores=yes\nConstrainDevices=yes\nConstrainRAMSpace=yes\nConstrainSwapSpace=yes\n"
    )


def render_plugstack_conf(pyxis_so: str = "/usr/local/lib/slurm/spank_pyxis.so") -> str:
    """``/etc/slurm/plugstack.conf.d/pyxis.conf``: pyxis (``srun --container-image``) as a SPANK plugin."""
    return f"required {pyxis_so}\n"


def render_all(layout: SlurmLayout, paths: SlurmPaths | None = None) -> dict[str, str]:
    """Every file by its name under ``/etc/slurm``."""
    files = {"slurm.conf": render_slurm_conf(layout, paths), "cgroup.conf": render_cgroup_conf()}
    if any(g.gpus for g in layout.groups):
        files["gres.conf"] = render_gres_conf(layout)
    if layout.topology != "none":
        files["topology.conf"] = render_topology_conf(layout)
    return files


def parse_version(text: str) -> tuple[int, int]:
    m = re.match(r"(\d+)\.(\d+)", text)
    if m is None:
        raise ValueError(f"not a Slurm version: {text!r}")
    return int(m.group(1)), int(m.group(2))


def topology_kind(choice: str, slurm_version: str) -> TopologyKind:
    """The spec's ``scheduler.slurm.topology`` for the pinned Slurm: ``auto`` is block where the pin has it."""
    if choice == "auto":
        return "block" if parse_version(slurm_version) >= BLOCK_MIN_VERSION else "tree"
    if choice == "block" and parse_version(slurm_version) < BLOCK_MIN_VERSION:
        raise ValueError(f"topology/block needs Slurm 23.11 or later; the pin is {slurm_version}")
    return choice  # type: ignore[return-value]


@dataclass(frozen=True)
class SlurmPins:
    """The versions a Slurm cluster's nodes install (``images/compat.yaml`` ``slurm``), with their sources."""

    os: str
    slurm: str
    munge: str
    enroot: str
    pyxis: str
    sources: tuple[str, ...]


def slurm_pins(os_name: str) -> SlurmPins:
    """The pins for the image OS ``os_name`` (e.g. ``ubuntu-22.04``).

    Raises:
        ValueError: no pin for that OS, or pins that break a rule (pyxis needs enroot >= its minimum).
    """
    from provision.planning.images import compat_rules, version_tuple

    rules = compat_rules()["slurm"]
    row = rules["by_os"].get(os_name)
    if row is None:
        raise ValueError(f"no Slurm pin for {os_name!r} in images/compat.yaml; pinned: {', '.join(rules['by_os'])}")
    enroot, pyxis = rules["enroot"], rules["pyxis"]
    if version_tuple(str(enroot["version"])) < version_tuple(str(pyxis["min_enroot"])):
        raise ValueError(f"pyxis {pyxis['version']} needs enroot >= {pyxis['min_enroot']}, pinned {enroot['version']}")
    return SlurmPins(
        os=os_name,
        slurm=str(row["slurm"]),
        munge=str(row["munge"]),
        enroot=str(enroot["version"]),
        pyxis=str(pyxis["version"]),
        sources=(str(row["source"]), str(enroot["source"]), str(pyxis["source"])),
    )


def node_names(cluster: str, nodes: int) -> tuple[str, ...]:
    """The Slurm node names of a cluster's GPU nodes in rank order."""
    return tuple(f"{cluster}-{rank}" for rank in range(nodes))


def controller_name(cluster: str) -> str:
    return f"{cluster}-ctl"


class SlurmController(PlanPart):
    """The Slurm controller VM of a ``scheduler.kind: slurm`` cluster (``plan.extra.slurm`` on every cloud that
    builds one); a cloud subclasses it for its own disk fields and builds it in ``clouds/<cloud>/slurm.py``."""

    name: str = Field(description="The controller's Slurm and VM name, ``<cluster>-ctl``.")
    instance_type: str = Field(description="A small CPU type (scheduler.slurm.controller_instance_type).")
    disk_gib: int = Field(description="Its encrypted boot disk.")
    accounting: bool = Field(description="slurmdbd runs on it.")


def controller_plan(
    spec: ClusterSpec, default_type: str, model: type[SlurmController] = SlurmController, **cloud: Any
) -> Any:
    """The controller of ``spec`` as ``model`` (``None`` unless ``scheduler.kind: slurm``): its name, the spec's
    type or the cloud's ``default_type``, the spec's disk size and accounting; ``cloud``: the subclass's fields."""
    if spec.scheduler.kind != "slurm":
        return None
    from provision.spec.slurm import SlurmSpec

    opts = spec.scheduler.slurm or SlurmSpec()
    return model(
        name=controller_name(spec.name),
        instance_type=opts.controller_instance_type or default_type,
        disk_gib=opts.controller_disk_gib,
        accounting=opts.accounting,
        **cloud,
    )


def layout_from_plan(
    plan: Any,
    *,
    slurm_version: str,
    controller_addr: str | None = None,
    node_addrs: Sequence[str] | None = None,
) -> SlurmLayout:
    """The Slurm layout of a :class:`~provision.planning.plan.ClusterPlan` (``scheduler.kind: slurm``):
    one partition of the plan's GPU nodes, a block / switch per fabric island (``plan.islands``), the
    instance type and GPU model as node features."""
    from provision.spec.slurm import SlurmSpec

    opts = plan.spec.scheduler.slurm or SlurmSpec()
    names = node_names(plan.name, plan.nodes)
    addrs = list(node_addrs) if node_addrs is not None else [None] * plan.nodes
    gpu = plan.offer.gpu
    group = NodeGroup(
        partition=opts.partition,
        nodes=tuple(SlurmNode(n, a) for n, a in zip(names, addrs, strict=True)),
        gpus=plan.gpus_per_node,
        gpu_type=feature(gpu.lower()),
        cpus=plan.offer.vcpus,
        memory_mib=math.floor(plan.offer.memory_gib * 1024 * MEMORY_SHARE),
        features=(feature(plan.instance_type), feature(gpu.lower()), feature(plan.fabric)),
        islands=tuple(plan.islands),
    )
    return SlurmLayout(
        cluster=plan.name,
        controller=SlurmNode(controller_name(plan.name), controller_addr),
        groups=(group,),
        topology=topology_kind(opts.topology, slurm_version),
        accounting=opts.accounting,
    )


def plan_files(plan: Any, os_name: str, controller_addr: str | None, node_addrs: Sequence[str]) -> dict[str, str]:
    """slurm.conf, gres.conf, topology.conf, cgroup.conf of ``plan`` (:func:`layout_from_plan`) with these
    addresses (empty: the nodes by name only), for the Slurm pinned for the nodes' OS ``os_name`` (:func:`slurm_pins`).
    Each cloud's ``slurm.py`` renders its ``slurm`` stack output with it."""
    pins = slurm_pins(os_name)
    return render_all(
        layout_from_plan(plan, slurm_version=pins.slurm, controller_addr=controller_addr, node_addrs=node_addrs or None)
    )


def node_steps(
    values: Any, pins: SlurmPins, *, role: Literal["controller", "node"], accounting: bool, containers: bool
) -> list[Any]:
    """The bootstrap steps (and their values, added to ``values``) a Slurm cluster's ``role`` runs; a cloud
    passes them to :func:`provision.planning.bootstrap.render` with its own steps."""
    from provision.planning.bootstrap import Step

    values.add("SLURM_ROLE", role, "name", "scheduler.kind")
    values.add("SLURM_VERSION", pins.slurm, "version", "images/compat.yaml slurm.by_os")
    values.add("MUNGE_VERSION", pins.munge, "version", "images/compat.yaml slurm.by_os")
    values.add("SLURM_ACCOUNTING", "1" if accounting else "0", "int", "scheduler.slurm.accounting")
    steps = [Step("slurm", "common/steps/slurm.sh", timeout=1800)]
    if containers and role == "node":
        values.add("ENROOT_VERSION", pins.enroot, "version", "images/compat.yaml slurm.enroot")
        values.add("PYXIS_VERSION", pins.pyxis, "version", "images/compat.yaml slurm.pyxis")
        # Not critical: a node without pyxis still runs sbatch/srun jobs; `srun --container-image` fails there.
        steps.append(Step("enroot-pyxis", "common/steps/enroot-pyxis.sh", critical=False, timeout=1800))
    return steps


def srun_line(names: Sequence[str], gpus_per_node: int, command: str) -> str:
    """``srun`` of ``command`` (a shell-ready line) as one task per GPU on exactly the named nodes: how
    ``provision nccl-test`` and ``up --accept`` run ``all_reduce_perf`` on a Slurm cluster. ``--mpi=pmix``
    wires the ranks together (Ubuntu's and Debian's Open MPI and Slurm both carry PMIx; srun(1) ``--mpi``)."""
    import shlex

    words = [
        "srun",
        f"--nodelist={hostlist(names)}",
        f"--nodes={len(names)}",
        f"--ntasks-per-node={gpus_per_node}",
        f"--gpus-per-node={gpus_per_node}",
        "--mpi=pmix",
        "--exclusive",
    ]
    return f"{shlex.join(words)} {command}"


def controller_user_data(
    plan: Any, pins: SlurmPins, *, login_keys: Sequence[str] = (), lifetime: Sequence[Any] | None = None
) -> str:
    """The controller's ``#cloud-config`` (a cloud's build gives it to the controller VM): the same step runner,
    library and values as the GPU nodes, with the apt guard, the login user, the ``slurm`` step as
    ``controller`` and the lifetime timer (the controller dies with the nodes). Nothing secret: the munge
    key and the rendered files arrive over SSH (:mod:`provision.ops.slurm`).

    ``lifetime``: the cloud's own expiry units instead of the shutdown timer (Azure: the VM deletes itself, since a
    shutdown keeps it billed), ``[]`` for none (the cloud's reaper ends it); ``None``: the shutdown timer."""
    import json

    from provision.planning.bootstrap import (
        BOOT_UNIT,
        LIB,
        File,
        Step,
        base_values,
        checked,
        cloud_config,
        expiry_units,
        static_file,
        step_files,
    )
    from provision.spec.slurm import SlurmSpec

    opts = plan.spec.scheduler.slurm or SlurmSpec()
    values = base_values(plan)
    order = [Step("apt-guard", "common/steps/apt-guard.sh")]
    files: list[File] = []
    if login_keys:
        keys = [checked("ssh-key", k, f"access.ssh_public_keys[{i}]") for i, k in enumerate(login_keys)]
        files.append(File("/etc/provision/authorized_keys", "".join(k + "\n" for k in keys)))
        order.append(Step("login-user", "common/steps/login-user.sh"))
    order += node_steps(values, pins, role="controller", accounting=opts.accounting, containers=False)
    units = (expiry_units(plan.expires_at) if plan.expires_at is not None else []) if lifetime is None else lifetime
    if units:
        files += units
        order.append(Step("lifetime", "common/steps/lifetime.sh"))
    written = [
        static_file(f"{LIB}/lib.sh", "common/lib.sh"),
        static_file(f"{LIB}/provision-bootstrap", "common/provision-bootstrap", "0755"),
    ]
    scripts, manifest = step_files(order)
    written += scripts
    written += [
        File("/etc/provision/bootstrap.env", values.render()),
        File("/etc/provision/steps.json", json.dumps({"steps": manifest}, indent=1) + "\n"),
        File("/etc/systemd/system/provision-bootstrap.service", BOOT_UNIT),
        *files,
    ]
    # slurm.conf(5) SlurmctldHost: the name must be what `hostname -s` returns on the controller, so the VM
    # takes the controller's Slurm name whatever the cloud named it (cloud-init's "Set Hostname" module).
    return cloud_config(written, hostname=controller_name(plan.name), preserve_hostname=False)
