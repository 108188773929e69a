"""``provision nccl-test``: all-reduce bus bandwidth across the cluster against a floor, and the slow node or pair.

nccl-tests' ``all_reduce_perf`` runs across every node (``mpirun`` from the first node, one rank per GPU,
the cluster's NCCL settings); its bus bandwidth at the largest message size is compared with the floor for
the instance type (``images/nccl-floors.yaml``, each with its source). Below the floor, nodes are tested in
pairs, and each slow pair's nodes against a node of a healthy pair, which names the slow node, or the
slow link when both of its nodes are fine elsewhere.

The test runs with ``NCCL_DEBUG=INFO``: the inter-node transport each node used (NCCL net, NICs, GPUDirect) is read
from NCCL's log and checked against the fabric (:mod:`provision.ops.nccl_transport`), since a lenient floor
passes a socket fallback or a run on one of two NICs.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

import yaml

from provision.ops.nccl_transport import DEBUG_ENV, TransportCheck, check_transports
from provision.ops.nodes import NodeRunner
from provision.planning.bootstrap import NCCL_TESTS_BIN
from provision.planning.images import image_text
from provision.planning.launch import ClusterFacts, launch_line

if TYPE_CHECKING:
    from provision.planning.plan import ClusterPlan

#: nccl-tests arguments: 512 MiB .. 8 GiB, doubling; one GPU per process (mpirun starts one per GPU).
TEST_ARGS = "-b 512M -e 8G -f 2 -g 1"
_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+\w+\s+\w+\s+-?\d+\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)")


@dataclass(frozen=True)
class Floor:
    """The bus-bandwidth floor of an instance type (GB/s), and where it comes from.

    Attributes:
        busbw_gbps: the floor; ``None`` without a floor (single node, no GPU fabric).
        source: one line naming the published figure (file or page, date) or why the floor is derived.
        kind: ``vendor`` (a fraction of a vendor-published result), ``derived`` or ``measured`` (your own figure).
    """

    busbw_gbps: float | None
    source: str
    kind: str = "derived"


@cache
def _floors() -> dict[str, Any]:
    return yaml.safe_load(image_text("nccl-floors.yaml"))


def floor_row(instance_type: str) -> dict[str, Any]:
    """The row of ``images/nccl-floors.yaml`` for ``instance_type`` (the default row when it has none)."""
    data = _floors()
    return dict((data.get("types") or {}).get(instance_type) or data["default"])


def _published(row: dict[str, Any]) -> str:
    pub = row["published"]
    return (
        f"{row.get('fraction', 0.5)} x {pub['busbw_gbps']} GB/s {pub['collective']} at {pub['message_bytes']} B on "
        f"{pub['nodes']} nodes ({pub['where']}, {pub['url']}, {pub['date']})"
    )


def floor_for(plan: ClusterPlan) -> Floor:
    """The floor for ``plan``'s instance type; ``None`` without a GPU fabric or on a single node."""
    if plan.fabric == "none" or not plan.offer.fabric_gbps or plan.nodes < 2:
        return Floor(None, "no floor: single node or no GPU fabric", "none")
    row = floor_row(plan.instance_type)
    if row.get("source") == "measured" or row.get("busbw_gbps"):
        where = f"{row.get('where', 'measured on a healthy cluster')}, {row.get('date', 'undated')}"
        return Floor(float(row["busbw_gbps"]), f"measured: {row['busbw_gbps']} GB/s ({where})", "measured")
    if row.get("source") == "vendor":
        value = float(row["published"]["busbw_gbps"]) * float(row["fraction"])
        return Floor(round(value, 1), "vendor: " + _published(row), "vendor")
    if row.get("like"):
        base = floor_row(str(row["like"]))
        value = float(base["published"]["busbw_gbps"]) * float(row["fraction"])
        text = f"derived from {row['like']}: {_published({**base, 'fraction': row['fraction']})}; {row['reason']}"
        return Floor(round(value, 1), text, "derived")
    value = plan.offer.fabric_gbps / 8 * float(row["fraction_of_fabric"])
    text = f"derived: {row['fraction_of_fabric']} x fabric_gbps {plan.offer.fabric_gbps} / 8; {row['reason']}"
    return Floor(round(value, 1), text + f" (no vendor figure: {row['no_vendor_figure']})", "derived")


def parse_busbw(output: str) -> float | None:
    """The out-of-place bus bandwidth (GB/s) at the largest message size of ``all_reduce_perf`` output."""
    rows = [(int(m.group(1)), float(m.group(5))) for m in map(_ROW.match, output.splitlines()) if m]
    return max(rows)[1] if rows else None


def facts_of(plan: ClusterPlan, hosts: Sequence[str]) -> ClusterFacts:
    """The launch facts of ``plan`` with its node addresses (the same facts ``provision launch`` uses)."""
    return ClusterFacts(plan.name, tuple(hosts), plan.gpus_per_node, plan.fabric, dict(plan.nccl_env))


def allreduce_command(plan: ClusterPlan, hosts: Sequence[str], subset: Sequence[str] | None = None) -> str:
    """The line that runs ``all_reduce_perf`` over ``subset`` (default: every host), one rank per GPU, started on
    the subset's first node.

    It is ``provision launch``'s ``mpirun`` line (:func:`provision.planning.launch.launch_line`: the node's
    ``/etc/provision/env`` with the cloud's NCCL settings, forwarded with ``-x``, and the fabric's MPI transport
    settings), run with the ``mpirun`` and ``all_reduce_perf`` the ``nccl-tests`` bootstrap step left on every node
    (:func:`provision.planning.bootstrap.nccl_tests_expectation`). ``PROVISION_ROOT`` (empty on a node) lets mocked
    nodes keep them in a sandbox. Each rank starts through ``env`` with :data:`~provision.ops.nccl_transport.DEBUG_ENV`,
    so NCCL logs its transports to the output whatever the node's own ``NCCL_DEBUG`` (or ``NCCL_DEBUG_FILE``) says.
    """
    chosen = list(subset if subset is not None else hosts)
    if plan.spec.scheduler.kind == "slurm":  # Slurm starts the ranks (srun), on the subset's Slurm nodes
        from provision.planning.launch import SOURCE_ENV
        from provision.planning.slurm import node_names, srun_line

        names = node_names(plan.name, len(hosts))
        debug = " ".join(f"{k}={shlex.quote(v)}" for k, v in DEBUG_ENV)
        body = f"env -u NCCL_DEBUG_FILE {debug} $PV_BIN/all_reduce_perf {TEST_ARGS}"
        line = srun_line([names[list(hosts).index(h)] for h in chosen], plan.gpus_per_node, body)
        return f'PV_BIN="${{PROVISION_ROOT:-}}{shlex.quote(NCCL_TESTS_BIN)}" && {SOURCE_ENV} && {line}'
    line = launch_line(
        "mpirun",
        facts_of(plan, hosts),
        "env",
        # -u NCCL_DEBUG_FILE: the log must reach mpirun's output, not a file on each node.
        ["-u", "NCCL_DEBUG_FILE", *(f"{k}={v}" for k, v in DEBUG_ENV), "$PV_BIN/all_reduce_perf", *TEST_ARGS.split()],
        hosts=chosen,
        mpirun="$PV_BIN/mpirun",
    )
    return f'PV_BIN="${{PROVISION_ROOT:-}}{shlex.quote(NCCL_TESTS_BIN)}" && {line}'


@dataclass
class NcclResult:
    """The measured bus bandwidth against the floor, and what bisection found below it."""

    busbw_gbps: float | None
    floor: Floor
    nodes: int
    pairs: list[dict[str, Any]] = field(default_factory=list)
    slow_nodes: list[int] = field(default_factory=list)
    slow_links: list[list[int]] = field(default_factory=list)
    islands: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    transports: TransportCheck = field(default_factory=TransportCheck)

    @property
    def bandwidth_ok(self) -> bool:
        if self.error is not None or self.busbw_gbps is None:
            return False
        return self.floor.busbw_gbps is None or self.busbw_gbps >= self.floor.busbw_gbps

    @property
    def ok(self) -> bool:
        return self.bandwidth_ok and not self.transports.failures

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "busbw_gbps": self.busbw_gbps,
            "floor_gbps": self.floor.busbw_gbps,
            "floor_source": self.floor.source,
            "floor_kind": self.floor.kind,
            "nodes": self.nodes,
            "pairs": self.pairs,
            "slow_nodes": self.slow_nodes,
            "slow_links": self.slow_links,
            "islands": self.islands,
            "transports": self.transports.as_dict(),
            "error": self.error,
        }

    def lines(self) -> list[str]:
        if self.error:
            return [f"nccl-test failed: {self.error}"]
        floor = self.floor.busbw_gbps
        head = f"all_reduce bus bandwidth {self.busbw_gbps} GB/s over {self.nodes} nodes" + (
            f" (floor {floor} GB/s: {'ok' if self.bandwidth_ok else 'BELOW'})" if floor is not None else " (no floor)"
        )
        out = [head]
        if floor is not None:
            out.append(f"floor ({self.floor.kind}): {self.floor.source}")
        out += [f"slow node: {r}" for r in self.slow_nodes]
        out += [f"slow link between nodes {a} and {b}" for a, b in self.slow_links]
        if self.slow_links and self.nodes == 2:
            out.append("with 2 nodes a slow node cannot be told from a slow link: test with a third node")
        if not self.bandwidth_ok and not self.slow_nodes and not self.slow_links and self.pairs:
            out.append("every pair meets the floor: the slowdown needs the whole cluster (fabric or topology)")
        out += self.transports.summary()
        out += [f"transport FAILED: {text}" for text in self.transports.failures]
        out += [f"transport warning: {text}" for text in self.transports.warnings]
        return out


def nccl_test(plan: ClusterPlan, hosts: Sequence[str], run: NodeRunner) -> NcclResult:
    """Measure the cluster's all-reduce bus bandwidth; below the floor, bisect by pairs."""
    floor = floor_for(plan)

    errors: list[str] = []
    transports = TransportCheck()

    def measure(ranks: Sequence[int], check: bool = False) -> float | None:
        result = run(allreduce_command(plan, hosts, [hosts[r] for r in ranks]), [ranks[0]])[0]
        if result.exit_code != 0:
            tail = (result.stderr.strip().splitlines() or [f"exit code {result.exit_code}"])[-1]
            errors.append(f"node {ranks[0]} ({hosts[ranks[0]]}): {tail[:300]}")
            return None
        if check:  # the whole cluster's (or island's) run: every node's transport
            transports.extend(check_transports(plan, result.stdout, ranks, hosts))
        return parse_busbw(result.stdout)

    # The fabric does not cross islands (Azure: one InfiniBand island per scale set), so each island is
    # measured on its own and the cluster's figure is the slowest island's.
    groups, start = [], 0
    for size in plan.islands if sum(plan.islands) == len(hosts) else (len(hosts),):
        groups.append(list(range(start, start + size)))
        start += size
    measured = [(g, measure(g, check=True)) for g in groups if len(g) > 1 or len(groups) == 1]
    values = [bw for _, bw in measured]
    busbw = None if not values or any(bw is None for bw in values) else min(v for v in values if v is not None)
    result = NcclResult(busbw, floor, len(hosts), transports=transports)
    if len(groups) > 1:
        result.islands = [{"ranks": [g[0], g[-1]], "busbw_gbps": bw} for g, bw in measured]
    if busbw is None:
        result.error = "all_reduce_perf did not run or printed no bandwidth (is nccl-tests installed on the nodes?)" + (
            f": {errors[-1]}" if errors else ""
        )
        return result
    if result.bandwidth_ok or floor.busbw_gbps is None:
        return result
    for group, bw in measured:
        if bw is not None and bw >= floor.busbw_gbps:
            continue
        local = NcclResult(bw, floor, len(group))

        def in_group(ranks: Sequence[int], g: list[int] = group) -> float | None:
            return measure([g[r] for r in ranks])

        bisect(len(group), in_group, floor.busbw_gbps, local)
        result.pairs += [{**p, "nodes": [group[r] for r in p["nodes"]]} for p in local.pairs]
        result.slow_nodes += [group[r] for r in local.slow_nodes]
        result.slow_links += [[group[a], group[b]] for a, b in local.slow_links]
    return result


def bisect(n: int, measure: Callable[[Sequence[int]], float | None], floor: float, result: NcclResult) -> None:
    """Test nodes in pairs; test each node of a slow pair with a node of a good pair: a node slow with a good
    partner is a slow node; a slow pair of two nodes fine elsewhere is a slow link."""
    pairs = [(i, i + 1) for i in range(0, n - 1, 2)] + ([(n - 1, 0)] if n % 2 else [])
    slow = []
    for a, b in pairs:
        bw = measure([a, b])
        result.pairs.append({"nodes": [a, b], "busbw_gbps": bw, "ok": bw is not None and bw >= floor})
        if bw is None or bw < floor:
            slow.append((a, b))
    good = next((r for p in pairs if p not in slow for r in p), None)
    if good is None:  # every pair is slow: look for any fast pair across them (bounded: n tries)
        tried = set(pairs)
        for i in range(n):
            j = (i + 2) % n
            if i == j or (i, j) in tried or (j, i) in tried:
                continue
            tried.add((i, j))
            bw = measure([i, j])
            if bw is not None and bw >= floor:
                good = i
                break
    for a, b in slow:
        if good is None:
            result.slow_links.append([a, b])
            continue
        bad = [r for r in (a, b) if r != good and ((bw := measure([r, good])) is None or bw < floor)]
        for r in bad:
            if r not in result.slow_nodes:
                result.slow_nodes.append(r)
        if not bad:
            result.slow_links.append([a, b])
