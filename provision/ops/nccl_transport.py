"""Which inter-node transport NCCL used, read from an ``NCCL_DEBUG=INFO`` run, checked against the fabric.

Bandwidth alone cannot tell a healthy fabric from a degraded one when the floor is derived and lenient (Alibaba
``ebmgn8v``: one ERI, or NCCL without GPUDirect, still clears it). NCCL names each inter-node connection in its
``INFO`` log, so ``provision nccl-test`` runs ``all_reduce_perf`` with :data:`DEBUG_ENV` and checks, per node:

* no socket fallback on an RDMA fabric (``via NET/Socket``: NCCL found no usable RDMA device);
* the NCCL network the fabric goes through (``NET/IB`` for InfiniBand and eRDMA, ``NET/Libfabric`` for EFA);
* GPUDirect RDMA (``/GDRDMA``) on every receive link where the fabric is set up for it;
* as many distinct NICs as the plan gives the nodes (eRDMA: one per ERI).

The expectations are data (:data:`EXPECTATIONS`, one row per fabric, each with its source); a fabric without a
row is not checked, and what NCCL used is still reported, so two runs can be compared.

Line format (NVIDIA/nccl ``src/transport/net.cc`` @ 5067397c2676d5aed50042fc39e5c8ee96eb0027, lines 324-330 and
377, logged under ``NCCL_INIT | NCCL_NET``)::

    "Channel %02d/%d : %d[%d] -> %d[%d] [send] via NET/%s/%d%s%s%s"        rank[dev] -> peer[dev], net name, netDev,
    "Channel %02d/%d : %d[%d] -> %d[%d] [send] via NET/%s/%d(%d)%s%s%s"    "/GDRDMA", "(PCI)", "/Shared"; (%d) =
    "Channel %02d/%d : %d[%d] -> %d[%d] [receive] via NET/%s/%d%s%s%s"     the proxy rank (PXN). Receive: peer -> me.

each behind ``src/debug.cc``'s prefix ``"%s:%d:%d [%d] NCCL INFO "`` (host:pid:tid [cudaDev]). Older NCCL printed
the device as a hex bus id (``0[7000]``), which the parser also accepts. The net names are the plugins' own:
``"IB"`` (``src/transport/net_ib/common.cc`` ``ncclNetIb``), ``"Socket"`` (``src/transport/net_socket.cc``
``ncclNetSocket``); aws-ofi-nccl names itself ``"Libfabric"``, or ``"AWS Libfabric"`` / ``"OFI"`` when
``NCCL_NET`` says so (aws/aws-ofi-nccl ``src/nccl_ofi_interface_nvidia.cpp`` @ 2daf7d303aa1, lines 662-847);
Mellanox/nccl-rdma-sharp-plugins' verbs and UCX transports name themselves ``"IBext_vN"`` and ``"UCX"``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from provision.planning.plan import ClusterPlan

#: The environment that makes NCCL print its transport lines. They are logged under ``NCCL_INIT | NCCL_NET``
#: (net.cc above) and printed when ``NCCL_DEBUG >= INFO`` and the subsystem mask holds either flag
#: (``src/include/debug.h`` ``INFO``; ``src/debug.cc``: the default mask is ``INIT,BOOTSTRAP,ENV``). It is set
#: explicitly so that a user's own ``NCCL_DEBUG_SUBSYS`` (say ``COLL``) cannot hide them.
DEBUG_ENV: tuple[tuple[str, str], ...] = (("NCCL_DEBUG", "INFO"), ("NCCL_DEBUG_SUBSYS", "INIT,NET"))

#: NCCL before 2.12 printed no connection index (``"Channel %02d : "``, net.cc @ v2.11.4-1). The line must end
#: as the format does (``/GDRDMA``, ``(PCI)``, ``/Shared``, then the newline): NCCL logs to stdout with ``vfprintf``
#: (``src/debug.cc``), block-buffered into mpirun's pipe, so a buffer cut can splice another rank's output into
#: a line, and ``... via NET/IB/0`` cut before its ``/GDRDMA`` must not read as a link without GPUDirect.
_LINE = re.compile(
    r"NCCL INFO Channel \d+(?:/\d+)? : (?P<src>\d+)\[[0-9a-fA-F]+\] -> (?P<dst>\d+)\[[0-9a-fA-F]+\] "
    r"\[(?P<dir>send|receive)\] via NET/(?P<net>[^/\n]+)/(?P<dev>\d+)(?:\(\d+\))?(?P<gdr>/GDRDMA)?"
    r"(?:\(PCI\))?(?:/Shared)?[ \t\r]*$",
    re.MULTILINE,
)

#: Fabrics whose traffic NCCL must carry over RDMA: ``via NET/Socket`` there means NCCL found no usable RDMA device
#: and fell back to TCP sockets (``ncclNetSocket`` is NCCL's last resort), whatever the bandwidth says.
RDMA_FABRICS = frozenset({"efa", "infiniband", "erdma", "rdma"})

#: RDMA verbs transports: NCCL's own (``"IB"``), and Mellanox/nccl-rdma-sharp-plugins' (``src/ib_plugin.c`` @
#: 2f5ac02e1643: ``"IBext_v6"`` .. ``"IBext_v11"``, ``"IBext"`` before; ``src/ucx_plugin.c``, ``src/ucx_rma_plugin.c``:
#: ``"UCX"``, ``"UCX-RMA"``), which HPC images (HPC-X) may load instead of NCCL's.
_VERBS_NETS = r"IB|IBext(_v\d+)?|UCX|UCX-RMA"
_VERBS_TEXT = "NET/IB (NCCL's verbs transport; IBext_vN or UCX from nccl-rdma-sharp-plugins)"

_ERDMA_NIC_REASON = (
    "with two equidistant ERIs NCCL puts every GPU on the first one unless NCCL_GRAPH_FILE gives it a topology "
    "(AliyunContainerService/alibabacloud-erdma-controller docs/erdma-benchmark/README.md, section 6; measured on "
    "an RTX PRO machine, so unverified on this type); the other ERI's bandwidth is unused"
)


@dataclass(frozen=True)
class TransportExpectation:
    """What NCCL's inter-node links should look like on one fabric.

    Attributes:
        fabric: the plan's fabric kind.
        nets: regex (full match) of the NCCL net names the fabric's traffic may go through; ``None``: not checked
            (no sourced name).
        nets_text: those names, for a message.
        gdr_types: regex of instance types on which every inter-node link must be GPUDirect RDMA (``None``: not
            checked).
        gdr_fix: what to look at when GPUDirect is missing.
        check_nics: whether NCCL must use every NIC the plan fixes per node (``plan.extra.nccl_nics()``, e.g.
            Alibaba's ERIs).
        nic_shortfall: whether fewer distinct NICs than that fails the acceptance or is reported as a warning.
        nic_reason: why fewer NICs happen, for the message.
        source: where the expectation comes from.
    """

    fabric: str
    nets: str | None = None
    nets_text: str = ""
    gdr_types: str | None = None
    gdr_fix: str = ""
    check_nics: bool = False
    nic_shortfall: Literal["fail", "warn"] = "fail"
    nic_reason: str = ""
    source: str = ""


EXPECTATIONS: tuple[TransportExpectation, ...] = (
    TransportExpectation(
        "efa",
        nets=r"Libfabric|AWS Libfabric|OFI",
        nets_text="NET/Libfabric (aws-ofi-nccl; AWS Libfabric or OFI when NCCL_NET says so)",
        # aws/aws-ofi-nccl src/platform-aws.cpp @ 2daf7d303aa1 platform_data_map: gdr_required = true for
        # p4d.24xlarge, p4de.24xlarge, "^p5(e?\..*)" and "^(p5en|p6-b200).*", but false for p5.4xlarge (listed first;
        # first match wins). The plugin refuses EFA without GDR there, so NCCL would fall back to sockets.
        gdr_types=r"^(p4d\.24xlarge|p4de\.24xlarge|p5e?\.(?!4xlarge$).*|p5en\..*|p6-b200\..*)$",
        gdr_fix="check the EFA driver and nvidia-peermem or dma-buf (aws-ofi-nccl requires GDR on this type)",
        source="aws-ofi-nccl: plugin names (nccl_ofi_interface_nvidia.cpp), gdr_required (platform-aws.cpp)",
    ),
    TransportExpectation(
        "infiniband",
        nets=_VERBS_NETS,
        nets_text=_VERBS_TEXT,
        source='NCCL\'s verbs transport (src/transport/net_ib/common.cc, ncclNetIb "IB"); nccl-rdma-sharp-plugins',
    ),
    TransportExpectation(
        "erdma",
        # eRDMA is driven by NCCL's own verbs transport (the plan sets NCCL_IB_HCA=erdma, NCCL_NET_PLUGIN=none).
        nets=_VERBS_NETS,
        nets_text=_VERBS_TEXT,
        # The plan sets NCCL_NET_GDR_LEVEL=SYS because GDR is off by default at the GPU-ERI distance SYS
        # (alibabacloud-erdma-controller docs/erdma-benchmark/README.md sections 3.3, 4): without /GDRDMA the
        # setting did not take (or nvidia-peermem is missing) and every transfer bounces through host memory.
        gdr_types=r".*",
        gdr_fix="check NCCL_NET_GDR_LEVEL=SYS in /etc/provision/env and that nvidia-peermem is loaded (lsmod)",
        check_nics=True,
        # A warning, not a failure: per Alibaba's runbook one ERI is NCCL's *default* on two equidistant ERIs, and the
        # plan ships no NCCL_GRAPH_FILE, so failing would fail every correctly built ebmgn8v cluster if the runbook
        # holds for it; it was measured on another GPU type, so whether H20 with NVLink does the same is unverified.
        # The warning names the node and is recorded in the fabric manifest; a real shortfall in bandwidth still
        # fails through the floor.
        nic_shortfall="warn",
        nic_reason=_ERDMA_NIC_REASON,
        source="PAI eRDMA presets (NCCL_IB_HCA=erdma); alibabacloud-erdma-controller docs/erdma-benchmark/README.md",
    ),
    TransportExpectation("rdma", source="RDMA fabric: only the socket fallback is checked (plugin name not sourced)"),
)


def expectation_for(fabric: str) -> TransportExpectation | None:
    """The row of :data:`EXPECTATIONS` for ``fabric``, if any."""
    return next((e for e in EXPECTATIONS if e.fabric == fabric), None)


@dataclass(frozen=True)
class NetLink:
    """One inter-node connection NCCL logged: the rank on this side, the NCCL net, the NIC index, GPUDirect or not,
    and whether it is the receiving side."""

    rank: int
    net: str
    dev: int
    gdr: bool
    receive: bool = False


def parse_links(output: str) -> list[NetLink]:
    """Every ``via NET/...`` line of an ``NCCL_DEBUG=INFO`` log, attributed to the rank whose NIC it uses."""
    links = []
    for match in _LINE.finditer(output):
        # send: "me -> peer"; receive: "peer -> me" (net.cc); the NIC (netDev) is "me"'s.
        rank = int(match["src"] if match["dir"] == "send" else match["dst"])
        receive = match["dir"] == "receive"
        links.append(NetLink(rank, match["net"].strip(), int(match["dev"]), bool(match["gdr"]), receive))
    return links


@dataclass(frozen=True)
class NodeTransport:
    """What one node's ranks used for their inter-node links."""

    node: int
    host: str
    nets: tuple[str, ...]
    nics: tuple[int, ...]
    links: int
    gdr_links: int
    #: receive links without GPUDirect (the send side may lack it by design: see :func:`check_transports`).
    receive_without_gdr: int = 0

    @property
    def seen(self) -> str:
        """``NET/IB/0,1 (64 links, 64 GPUDirect)``: what the log showed, for a message."""
        nics = ",".join(map(str, self.nics))
        return f"NET/{'+'.join(self.nets)}/{nics} ({self.links} links, {self.gdr_links} GDRDMA)"

    def as_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "host": self.host,
            "nets": list(self.nets),
            "nics": list(self.nics),
            "links": self.links,
            "gdr_links": self.gdr_links,
            "receive_without_gdr": self.receive_without_gdr,
        }


@dataclass
class TransportCheck:
    """Per-node transports and what the fabric's expectation says of them."""

    nodes: list[NodeTransport] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "nodes": [n.as_dict() for n in self.nodes],
            "failures": list(self.failures),
            "warnings": list(self.warnings),
        }

    def summary(self) -> list[str]:
        """One line per distinct transport seen, with the nodes that used it (``transport: nodes 0, 2 used ...``)."""
        seen: dict[str, list[int]] = {}
        for n in self.nodes:
            if n.links:
                seen.setdefault(n.seen, []).append(n.node)
        return [
            f"transport: node{'s' if len(nodes) > 1 else ''} {', '.join(map(str, nodes))} used {what}"
            for what, nodes in seen.items()
        ]

    def extend(self, other: TransportCheck) -> None:
        self.nodes += other.nodes
        self.failures += other.failures
        self.warnings += other.warnings


def summarize(links: Sequence[NetLink], ranks: Sequence[int], hosts: Sequence[str], gpus: int) -> list[NodeTransport]:
    """Per node of ``ranks`` (cluster ranks, in the run's order: MPI rank // ``gpus`` indexes them)."""
    by_node: dict[int, list[NetLink]] = {}
    for link in links:
        by_node.setdefault(link.rank // max(gpus, 1), []).append(link)
    out = []
    for i, node in enumerate(ranks):
        mine = by_node.get(i, [])
        out.append(
            NodeTransport(
                node,
                hosts[node],
                tuple(sorted({link.net for link in mine})),
                tuple(sorted({link.dev for link in mine})),
                len(mine),
                sum(link.gdr for link in mine),
                sum(link.receive and not link.gdr for link in mine),
            )
        )
    return out


def check_transports(plan: ClusterPlan, output: str, ranks: Sequence[int], hosts: Sequence[str]) -> TransportCheck:
    """Check the transport lines of one multi-node ``all_reduce_perf`` run over the nodes ``ranks``."""
    nodes = summarize(parse_links(output), ranks, hosts, plan.gpus_per_node)
    result = TransportCheck(nodes)
    if len(ranks) < 2:
        return result
    row = expectation_for(plan.fabric)
    rdma = plan.fabric in RDMA_FABRICS
    for n in nodes:
        who = f"node {n.node} ({n.host})"
        if not n.links:
            if row is not None:
                result.failures.append(
                    f"{who}: no inter-node transport line (`via NET/...`) in the NCCL_DEBUG=INFO output, so the "
                    f"{plan.fabric} transport cannot be confirmed (did NCCL_DEBUG reach every rank?)"
                )
            continue
        if rdma and "Socket" in n.nets:
            result.failures.append(
                f"{who}: NCCL fell back to TCP sockets on the {plan.fabric} fabric (seen {n.seen}): it found no "
                "usable RDMA device; check the fabric devices (provision health) and the NCCL env"
            )
            continue
        if row is None:
            continue
        wrong = [net for net in n.nets if row.nets is not None and not re.fullmatch(row.nets, net)]
        if wrong:
            result.failures.append(f"{who}: NCCL used NET/{'+'.join(wrong)} (seen {n.seen}), expected {row.nets_text}")
        # Receive links only: NCCL gives a *send* GDR only on compute capability >= 8.0 or with NVLink unless
        # NCCL_NET_GDR_READ says otherwise (src/graph/paths.cc ncclTopoCheckGdr, "read"), while the receive side
        # needs just GDR support on NIC and GPU and the distance (NCCL_NET_GDR_LEVEL): no GDR there is no GDR at all.
        gdr_wanted = row.gdr_types is not None and re.match(row.gdr_types, plan.instance_type)
        if gdr_wanted and n.receive_without_gdr:
            result.failures.append(
                f"{who}: {n.receive_without_gdr} inter-node receive links without GPUDirect RDMA (no /GDRDMA; "
                f"seen {n.seen}): data bounces through host memory; {row.gdr_fix}"
            )
        wanted = (plan.extra.nccl_nics() or 0) if row.check_nics else 0
        if wanted > len(n.nics):
            text = f"{who}: NCCL used {len(n.nics)} of the {wanted} NICs (seen {n.seen}): {row.nic_reason}"
            (result.failures if row.nic_shortfall == "fail" else result.warnings).append(text)
    return result
