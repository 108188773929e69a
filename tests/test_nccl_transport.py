"""The NCCL transport acceptance (Alibaba review B1, issue 13 item 6): `provision nccl-test` reads which inter-node
transport each node used from NCCL's `NCCL_DEBUG=INFO` log and checks it against the fabric: no socket fallback on
RDMA, GPUDirect where the fabric is set up for it, one NIC per ERI on eRDMA."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import isolated_home
from nodekit import plan_of

from provision.ops.nccl import floor_for, nccl_test
from provision.ops.nccl_transport import EXPECTATIONS, check_transports, expectation_for, parse_links
from provision.ops.nodes import MockNodes, NodeFault, NodeResult

HOSTS = [f"10.0.0.{10 + i}" for i in range(3)]

# The format strings of NVIDIA/nccl src/transport/net.cc @ 5067397c2676d5aed50042fc39e5c8ee96eb0027 (lines 324,
# 328, 377), copied verbatim, and src/debug.cc's INFO prefix ("%s:%d:%d " + "[%d] NCCL INFO %s\n").
SEND = "Channel %02d/%d : %d[%d] -> %d[%d] [send] via NET/%s/%d%s%s%s"
SEND_PXN = "Channel %02d/%d : %d[%d] -> %d[%d] [send] via NET/%s/%d(%d)%s%s%s"
RECEIVE = "Channel %02d/%d : %d[%d] -> %d[%d] [receive] via NET/%s/%d%s%s%s"
PREFIX = "%s:%d:%d [%d] NCCL INFO "
# Intra-node lines of the same log (src/transport/p2p.cc:416, src/transport/shm.cc:116): not network links.
P2P = "Channel %02d/%01d : %d[%d] -> %d[%d] via P2P/direct pointer%s"
SHM = "Channel %02d : %d[%d] -> %d[%d] via SHM/direct"


def _info(host: str, dev: int, fmt: str, *args: Any) -> str:
    return PREFIX % (host, 1234, 5678, dev) + fmt % args


def test_the_parser_reads_nccls_own_line_formats_and_gives_each_link_to_the_rank_whose_nic_it_is() -> None:
    log = "\n".join(
        [
            _info("iZ0", 0, SEND, 0, 0, 0, 0, 8, 0, "IB", 0, "/GDRDMA", "", ""),
            # receive: "peer -> me"; the NIC is the receiver's (rank 9)
            _info("iZ1", 1, RECEIVE, 1, 0, 1, 1, 9, 1, "IB", 1, "/GDRDMA", "(PCI)", "/Shared"),
            # PXN: another rank's proxy drives the NIC ("%d(%d)")
            _info("iZ0", 2, SEND_PXN, 3, 1, 2, 2, 10, 2, "AWS Libfabric", 5, 4, "", "", ""),
            _info("iZ0", 3, SEND, 4, 0, 3, 3, 11, 3, "Socket", 0, "", "", ""),
            "[2026-12-01 10:00:00] " + _info("iZ0", 0, SEND, 5, 0, 0, 0, 8, 0, "IB", 1, "/GDRDMA", "", ""),
            _info("iZ0", 0, P2P, 0, 0, 0, 0, 1, 1, ""),
            _info("iZ0", 0, SHM, 0, 0, 0, 1, 1),
            "     8589934592    2147483648     float     sum      -1  30000  286.3  350.50      0",
        ]
    )
    links = [(x.rank, x.net, x.dev, x.gdr, x.receive) for x in parse_links(log)]
    assert links == [
        (0, "IB", 0, True, False),
        (9, "IB", 1, True, True),
        (2, "AWS Libfabric", 5, False, False),
        (3, "Socket", 0, False, False),
        (0, "IB", 1, True, False),
    ]


def test_the_older_bus_id_form_of_the_device_is_read_too() -> None:
    # NCCL before 2.19 printed the GPU as its hex bus id: "0[7000] -> 8[7000]".
    line = "node1:99:100 [0] NCCL INFO Channel 00/0 : 0[7000] -> 8[a000] [send] via NET/IB/1/GDRDMA"
    assert [(x.rank, x.dev, x.gdr) for x in parse_links(line)] == [(0, 1, True)]


def test_nccl_before_2_12_without_the_connection_index_is_read_too() -> None:
    # NVIDIA/nccl src/transport/net.cc @ v2.11.4-1: "Channel %02d : %d[%lx] -> %d[%lx] [receive] via NET/%s/%d%s%s"
    line = "node1:99:100 [1] NCCL INFO Channel 03 : 0[7000] -> 9[a000] [receive] via NET/IB/1/GDRDMA/Shared"
    assert [(x.rank, x.dev, x.gdr, x.receive) for x in parse_links(line)] == [(9, 1, True, True)]


def test_a_line_cut_by_another_ranks_output_is_not_read_as_a_link_without_gpudirect() -> None:
    # NCCL writes its log to stdout (block-buffered into mpirun's pipe): a buffer boundary can splice another
    # rank's output into a line. The cut receive line below really had /GDRDMA; it must not count as a link.
    whole = _info("n0", 0, RECEIVE, 0, 0, 8, 0, 0, 0, "IB", 0, "/GDRDMA", "", "")
    cut = _info("n0", 1, RECEIVE, 1, 0, 9, 1, 1, 1, "IB", 1, "/GDRDMA", "", "")
    spliced = cut[: cut.index("/GDRDMA")] + "n1:4321:4322 [3] NCCL INFO NET/IB : Using [0]erdma_0:1/RoCE"
    links = parse_links("\n".join([whole, spliced]))
    assert [(x.rank, x.gdr) for x in links] == [(0, True)]


def _eri_plan(nodes: int = 2) -> Any:
    return plan_of("alibaba-gn8-ci", nodes=nodes, islands=(nodes,))


def _ring(plan: Any, nodes: int, net: str, devs: list[list[int]], gdr: bool = True) -> str:
    """One send and one receive line per GPU of each node; devs[node] lists the NIC of each of its GPUs."""
    gpus, out = plan.gpus_per_node, []
    for n in range(nodes):
        for g in range(gpus):
            me, peer = n * gpus + g, ((n + 1) % nodes) * gpus + g
            flag = "/GDRDMA" if gdr else ""
            out.append(_info(f"n{n}", g, SEND, 0, 0, me, g, peer, g, net, devs[n][g], flag, "", ""))
            out.append(_info(f"n{n}", g, RECEIVE, 0, 0, peer, g, me, g, net, devs[n][g], flag, "", ""))
    return "\n".join(out)


def test_two_eris_with_gpudirect_pass_and_are_reported_per_node() -> None:
    plan = _eri_plan()
    assert plan.extra.eri_cards == (0, 1) and plan.nccl_env["NCCL_NET_GDR_LEVEL"] == "SYS"
    check = check_transports(plan, _ring(plan, 2, "IB", [[0] * 4 + [1] * 4] * 2), [0, 1], HOSTS)
    assert check.failures == [] and check.warnings == []
    assert [n.as_dict() for n in check.nodes] == [
        {
            "node": r,
            "host": HOSTS[r],
            "nets": ["IB"],
            "nics": [0, 1],
            "links": 16,
            "gdr_links": 16,
            "receive_without_gdr": 0,
        }
        for r in (0, 1)
    ]


def test_sends_without_gpudirect_pass_when_every_receive_has_it() -> None:
    """NCCL enables GDR on the send side only from compute capability 8.0 or with NVLink (paths.cc); the receive side
    shows whether GDR works at all."""
    plan = _eri_plan()
    log = _ring(plan, 2, "IB", [[0] * 4 + [1] * 4] * 2)
    sends_plain = "\n".join(line.replace("/GDRDMA", "") if "[send]" in line else line for line in log.splitlines())
    check = check_transports(plan, sends_plain, [0, 1], HOSTS)
    assert check.failures == [] and [n.gdr_links for n in check.nodes] == [8, 8]


def test_one_eri_of_two_is_a_warning_with_the_runbooks_reason_not_a_failure() -> None:
    plan = _eri_plan()
    check = check_transports(plan, _ring(plan, 2, "IB", [[0] * 8, [0] * 4 + [1] * 4]), [0, 1], HOSTS)
    assert check.failures == []
    assert len(check.warnings) == 1 and check.warnings[0].startswith("node 0 (10.0.0.10): NCCL used 1 of the 2 NICs")
    assert "NCCL_GRAPH_FILE" in check.warnings[0] and "unverified" in check.warnings[0]


def test_eri_without_gpudirect_or_over_sockets_fails_naming_node_and_what_was_seen() -> None:
    plan = _eri_plan()
    no_gdr = check_transports(plan, _ring(plan, 2, "IB", [[0] * 4 + [1] * 4] * 2, gdr=False), [0, 1], HOSTS)
    assert [f.split(":")[0] for f in no_gdr.failures] == ["node 0 (10.0.0.10)", "node 1 (10.0.0.11)"]
    assert "8 inter-node receive links without GPUDirect RDMA" in no_gdr.failures[0]
    assert "NCCL_NET_GDR_LEVEL=SYS" in no_gdr.failures[0]
    socket = check_transports(plan, _ring(plan, 2, "Socket", [[0] * 8] * 2, gdr=False), [0, 1], HOSTS)
    assert len(socket.failures) == 2 and "fell back to TCP sockets on the erdma fabric" in socket.failures[1]
    assert "seen NET/Socket/0 (16 links, 0 GDRDMA)" in socket.failures[1]


def test_a_net_other_than_the_fabrics_fails() -> None:
    plan = plan_of("aws-p5-ci")
    check = check_transports(plan, _ring(plan, 2, "IB", [list(range(0, 32, 4))] * 2), [0, 1], HOSTS)
    assert len(check.failures) == 2 and "NCCL used NET/IB" in check.failures[0] and "NET/Libfabric" in check.failures[0]
    plan = plan_of("azure-ndh100-ci")
    for net, ok in [("IB", True), ("IBext_v8", True), ("IBext", True), ("UCX", True), ("Libfabric", False)]:
        check = check_transports(plan, _ring(plan, 2, net, [list(range(8))] * 2), [0, 1], HOSTS)
        assert (check.failures == []) is ok, (net, check.failures)


def test_no_transport_line_on_a_checked_fabric_fails_but_an_unchecked_fabric_only_reports() -> None:
    plan = _eri_plan()
    check = check_transports(plan, "# Avg bus bandwidth    : 20.1\n", [0, 1], HOSTS)
    assert len(check.failures) == 2 and "cannot be confirmed" in check.failures[0]
    tcpxo = plan_of("gcp-a3-ci")
    assert expectation_for(tcpxo.fabric) is None
    assert check_transports(tcpxo, "", [0, 1], HOSTS).failures == []


@pytest.mark.parametrize(
    ("instance_type", "required"),
    [
        ("p5.48xlarge", True),
        ("p5e.48xlarge", True),
        ("p5en.48xlarge", True),
        ("p4d.24xlarge", True),
        ("p5.4xlarge", False),  # aws-ofi-nccl lists it before the p5 regex with gdr_required = false
        ("p3dn.24xlarge", False),
    ],
)
def test_efa_requires_gpudirect_where_aws_ofi_nccl_does(instance_type: str, required: bool) -> None:
    row = expectation_for("efa")
    assert row is not None and row.gdr_types is not None
    assert bool(re.match(row.gdr_types, instance_type)) is required


def test_every_rdma_fabric_has_a_row_and_every_row_a_source() -> None:
    assert {e.fabric for e in EXPECTATIONS} == {"efa", "infiniband", "erdma", "rdma"}
    assert all(e.source for e in EXPECTATIONS)
    assert len({e.fabric for e in EXPECTATIONS}) == len(EXPECTATIONS)


@pytest.mark.parametrize(
    ("stack", "fault", "outcome"),
    [
        ("alibaba-gn8-ci", "net_socket", "fail"),
        ("alibaba-gn8-ci", "no_gdr", "fail"),
        ("alibaba-gn8-ci", "one_nic", "warn"),
        ("aws-p5-ci", "net_socket", "fail"),
        ("aws-p5-ci", "no_gdr", "fail"),
        ("azure-ndh100-ci", "net_socket", "fail"),
        ("gcp-a3ultra-64", "net_socket", "fail"),
    ],
)
def test_mocked_nodes_with_a_transport_fault_name_the_node(stack: str, fault: str, outcome: str) -> None:
    """The fault leaves the bandwidth above the floor: only the transport check can see it."""
    plan = plan_of(stack, nodes=3, islands=(3,))
    floor = floor_for(plan).busbw_gbps or 80.0
    with MockNodes(plan, HOSTS, [NodeFault(2, fault)], busbw_gbps=floor * 1.25) as mock:
        result = nccl_test(plan, HOSTS, mock.run)
    assert result.bandwidth_ok
    named = result.transports.failures if outcome == "fail" else result.transports.warnings
    assert [text.split(":")[0] for text in named] == ["node 2 (10.0.0.12)"]
    assert result.ok is (outcome == "warn")
    prefix = "transport FAILED: " if outcome == "fail" else "transport warning: "
    assert prefix + named[0] in result.lines()


def test_an_eri_plan_without_the_gdr_level_setting_fails_the_acceptance() -> None:
    """GDR over eRDMA needs NCCL_NET_GDR_LEVEL=SYS (GPU-ERI distance SYS): the mocked nodes follow NCCL's rule, so
    dropping the setting from the plan's env is caught by the acceptance, not by the bandwidth floor."""
    plan = _eri_plan(2)
    env = {k: v for k, v in plan.nccl_env.items() if k != "NCCL_NET_GDR_LEVEL"}
    plan = plan.model_copy(update={"nccl_env": env})
    with MockNodes(plan, HOSTS[:2], busbw_gbps=100.0) as mock:
        result = nccl_test(plan, HOSTS[:2], mock.run)
    assert result.bandwidth_ok and not result.ok
    assert [f.split(":")[0] for f in result.transports.failures] == ["node 0 (10.0.0.10)", "node 1 (10.0.0.11)"]


def test_one_eri_below_the_floor_still_fails_through_the_floor() -> None:
    plan = _eri_plan(3)
    floor = floor_for(plan).busbw_gbps
    assert floor is not None
    with MockNodes(plan, HOSTS, [NodeFault(1, "one_nic"), NodeFault(1, "bandwidth")], busbw_gbps=floor * 1.25) as mock:
        result = nccl_test(plan, HOSTS, mock.run)
    assert not result.ok and result.slow_nodes == [1] and result.transports.warnings


def test_the_nccl_test_checks_only_the_whole_cluster_run_not_each_bisection_pair() -> None:
    plan = _eri_plan(3)
    seen: list[str] = []
    floor = floor_for(plan).busbw_gbps or 0.0
    faults = [NodeFault(1, "bandwidth"), NodeFault(0, "no_gdr")]
    with MockNodes(plan, HOSTS, faults, busbw_gbps=floor * 1.25) as mock:

        def run(command: str, ranks: Any = None) -> list[NodeResult]:
            seen.append(command)
            return mock.run(command, ranks)

        result = nccl_test(plan, HOSTS, run)
    assert len(seen) > 1 and result.slow_nodes == [1]
    assert [text.split(":")[0] for text in result.transports.failures] == ["node 0 (10.0.0.10)"]
    assert all("NCCL_DEBUG=INFO" in c for c in seen)


def test_a_single_node_has_no_inter_node_transport_to_check() -> None:
    plan = plan_of("alibaba-gn8-ci", nodes=1, islands=(1,))
    with MockNodes(plan, HOSTS[:1], busbw_gbps=100.0) as mock:
        result = nccl_test(plan, HOSTS[:1], mock.run)
    assert result.ok and result.transports.failures == [] and all(not n.links for n in result.transports.nodes)


def _cli(*args: str) -> Any:
    from typer.testing import CliRunner

    from provision.cli.app import app

    return CliRunner().invoke(app, list(args))


def test_cli_reports_transports_in_json_and_the_fabric_manifest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolated_home(tmp_path, monkeypatch)
    up = _cli("up", "alibaba-gn8-ci", "--mock", "--yes", "--json", "--accept")
    assert up.exit_code == 0, up.output
    nodes = json.loads(up.output)["acceptance"]["nccl"]["transports"]["nodes"]
    assert [(n["nets"], n["nics"], n["links"] == n["gdr_links"] > 0) for n in nodes] == [(["IB"], [0, 1], True)] * 2

    bad = _cli("nccl-test", "alibaba-gn8-ci", "--mock", "--json", "--inject", "1:no_gdr")
    assert bad.exit_code == 1
    doc = json.loads(bad.output)
    assert doc["ok"] is False and doc["transports"]["failures"][0].startswith("node 1 (")

    warn = _cli("nccl-test", "alibaba-gn8-ci", "--mock", "--json", "--inject", "0:one_nic")
    assert warn.exit_code == 0 and json.loads(warn.output)["transports"]["warnings"][0].startswith("node 0 (")
    manifest = json.loads(_cli("outputs", "alibaba-gn8-ci", "--mock", "--json").output)["fabric_manifest"]
    recorded = manifest["measured"]["transports"]
    assert [n["nics"] for n in recorded["nodes"]] == [[0], [0, 1]] and len(recorded["warnings"]) == 1

    text = _cli("nccl-test", "alibaba-gn8-ci", "--mock", "--inject", "1:net_socket")
    assert text.exit_code == 1 and "fell back to TCP sockets" in text.output
    assert "transport: node 0 used NET/IB/0,1" in text.output and "transport: node 1 used NET/Socket/0" in text.output


def test_the_text_report_groups_nodes_that_used_the_same_transport() -> None:
    plan = _eri_plan(3)
    with MockNodes(plan, HOSTS, busbw_gbps=100.0) as mock:
        result = nccl_test(plan, HOSTS, mock.run)
    assert [line for line in result.lines() if line.startswith("transport")] == [
        "transport: nodes 0, 1, 2 used NET/IB/0,1 (32 links, 32 GDRDMA)"
    ]
