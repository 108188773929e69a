"""Health checks and the NCCL acceptance test against fake nvidia-smi, rocm-smi, fi_info, ibv_devinfo, rdma,
mount and all_reduce_perf (images/fake-node/bin) on mocked nodes reporting healthy and broken states; the
compatibility rules; the CLI (`provision health`, `provision nccl-test`, `provision up --accept`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXED_NOW, isolated_home, stack_spec
from nodekit import plan_of

from provision.ops.health import check_health
from provision.ops.nccl import NcclResult, allreduce_command, bisect, floor_for, nccl_test, parse_busbw
from provision.ops.nodes import MockNodes, NodeFault
from provision.spec.errors import SpecError, UnsupportedError

HOSTS = [f"10.0.0.{10 + i}" for i in range(4)]
CHECKS = ("gpus", "driver", "cuda", "nvlink", "fabric", "shared_fs", "scratch", "nccl_tests", "bootstrap")


def _health(stack: str, faults: list[NodeFault], nodes: int = 2) -> Any:
    with MockNodes(plan_of(stack), HOSTS[:nodes], faults) as mock:
        return check_health(mock.run)


@pytest.fixture(scope="module")
def healthy() -> Callable[[str], Any]:
    """The health report of a stack's two healthy mocked nodes, run once per stack for the tests of this module."""
    reports: dict[str, Any] = {}

    def report(stack: str) -> Any:
        if stack not in reports:
            reports[stack] = _health(stack, [])
        return reports[stack]

    return report


@pytest.mark.parametrize(
    "stack", ["aws-p5-64", "gcp-a3-64", "gcp-a3high-16", "gcp-a3ultra-64", "azure-ndh100-64", "alibaba-gn8-64"]
)
def test_healthy_mocked_nodes_pass_every_check(stack: str, healthy: Callable[[str], Any]) -> None:
    report = healthy(stack)
    assert report.ok, report.failures()
    names = {c["name"] for c in report.nodes[0].checks}
    assert {"gpus", "fabric", "bootstrap"} <= names


@pytest.mark.parametrize(
    ("stack", "check"),
    [("aws-p5-64", c) for c in CHECKS]
    + [("azure-ndh100-64", c) for c in ("gpus", "fabric", "shared_fs", "cuda")]
    + [("gcp-a3-64", c) for c in ("driver", "fabric")]
    + [
        ("gcp-a3high-16", "fabric"),
        ("gcp-a3ultra-64", "fabric"),
        ("alibaba-gn8-64", "fabric"),
        ("alibaba-gn8-64", "gpus"),
        ("alibaba-gn8-64", "shared_fs"),  # CPFS, mounted at boot since the node looks its export's domain up
        ("gcp-a3-64", "nccl_tests"),
        ("azure-ndh100-64", "nccl_tests"),
        ("alibaba-gn8-64", "nccl_tests"),
    ],
)
def test_each_broken_check_names_the_node_and_the_check(stack: str, check: str) -> None:
    plan = plan_of(stack)
    if check in ("cuda",) and not plan.image.versions.get("cuda"):
        pytest.skip("no pinned CUDA")
    report = _health(stack, [NodeFault(1, check)])
    assert not report.ok
    failures = report.failures()
    assert [(f["rank"], f["host"], f["check"]) for f in failures] == [(1, HOSTS[1], check)]
    assert report.nodes[0].ok


def test_expected_fabric_devices_per_type(healthy: Callable[[str], Any]) -> None:
    """32 EFA on p5, 8 InfiniBand ports on ND H100 v5, 8 GPU NICs on A3 Mega, 4 on A3 High, the ERIs on GN8."""
    found = {}
    for stack in ("aws-p5-64", "azure-ndh100-64", "gcp-a3-64", "gcp-a3high-16", "alibaba-gn8-64"):
        report = healthy(stack)
        found[stack] = next(c for c in report.nodes[0].checks if c["name"] == "fabric")["expected"]
    assert found == {
        "aws-p5-64": 32,
        "azure-ndh100-64": 8,
        "gcp-a3-64": 8,
        "gcp-a3high-16": 4,
        "alibaba-gn8-64": plan_of("alibaba-gn8-64").fabric_interfaces,
    }


def test_mi300x_gpus_are_counted_once_though_rocm_smi_prints_several_lines_each() -> None:
    spec = stack_spec("azure-ndh100-ci")
    from provision.catalog import load_catalog

    offer = load_catalog().instance("azure", "Standard_ND96isr_MI300X_v5")
    plan = plan_of("azure-ndh100-ci")
    plan = plan.model_copy(update={"offer": offer, "nccl_env": {"NCCL_SOCKET_IFNAME": "eth0"}})
    assert spec.cloud == "azure" and offer is not None and offer.gpu_vendor == "amd"
    with MockNodes(plan, HOSTS[:2], [NodeFault(1, "gpus")]) as mock:
        report = check_health(mock.run)
    gpus = {n.rank: next(c for c in n.checks if c["name"] == "gpus") for n in report.nodes}
    assert gpus[0]["ok"] and gpus[0]["found"] == 8
    assert not gpus[1]["ok"] and gpus[1]["found"] == 7


def test_a_tcpx_node_without_the_tcpx_kernel_fails_its_fabric_check() -> None:
    report = _health("gcp-a3high-16", [NodeFault(0, "fabric")])
    fabric = next(c for c in report.nodes[0].checks if c["name"] == "fabric")
    assert "not a TCPX kernel" in fabric["detail"]


def test_a_node_that_cannot_answer_is_named() -> None:
    plan = plan_of("aws-p5-ci")
    with MockNodes(plan, HOSTS[:2]) as mock:
        real = mock.run

        def run(command: str, ranks: Any = None) -> Any:
            results = real(command, ranks)
            results[1] = type(results[1])(1, HOSTS[1], 255, "", "ssh: connect to host 10.0.0.11 port 22: timed out")
            return results

        report = check_health(run)
    assert report.failures() == [
        {
            "rank": 1,
            "host": HOSTS[1],
            "check": "reachable",
            "expected": "an answer",
            "found": None,
            "detail": "ssh: connect to host 10.0.0.11 port 22: timed out",
        }
    ]


def test_the_health_check_ignores_the_login_users_pythonpath(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The on-demand check runs in the login user's environment: a PYTHONPATH of training code whose module shadows
    the standard library's (here ``json``) must not break the stdlib-only check (nor the fake tools, which stand for
    native binaries)."""
    (tmp_path / "json.py").write_text("raise ImportError('the user code shadows json')\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    report = _health("aws-p5-ci", [])
    assert report.ok, [(n.rank, n.error, n.failed) for n in report.nodes]
    assert {c["name"] for c in report.nodes[1].checks} >= {"gpus", "fabric", "bootstrap"}


# ---------------------------------------------------------------------- NCCL


def test_floor_comes_from_the_vendor_published_result_with_its_source() -> None:
    floor = floor_for(plan_of("aws-p5-64"))
    assert floor.busbw_gbps == round(479.28 * 0.5, 1) and "awsome-distributed-training" in floor.source
    assert floor_for(plan_of("gcp-a3high-16")).busbw_gbps == pytest.approx(70.9 * 0.5, abs=0.05)


def test_nccl_command_is_the_launch_helpers_mpirun_line_with_the_nodes_own_binaries() -> None:
    """One way to build an mpirun command: nccl-test's line is planning.launch's, run with the nccl-tests step's
    mpirun and all_reduce_perf; the cloud's NCCL env reaches every rank through the node env file and -x, and each
    rank starts through `env -u NCCL_DEBUG_FILE NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET` so NCCL logs its
    transports."""
    from provision.planning.launch import MPI_FABRIC_ARGS, SOURCE_ENV, launch_line

    plan = plan_of("aws-p5-64")
    cmd = allreduce_command(plan, HOSTS, HOSTS[:2])
    assert cmd.startswith('PV_BIN="${PROVISION_ROOT:-}/usr/local/lib/provision/bin" && ' + SOURCE_ENV)
    assert "$PV_BIN/mpirun -np 16 -H 10.0.0.10:8,10.0.0.11:8 " in cmd
    assert "-x FI_PROVIDER" in cmd and " ".join(MPI_FABRIC_ARGS["efa"]) in cmd
    assert cmd.endswith("$PV_BIN/all_reduce_perf -b 512M -e 8G -f 2 -g 1")
    from provision.ops.nccl import TEST_ARGS, facts_of

    assert " env -u NCCL_DEBUG_FILE NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET $PV_BIN/all_reduce_perf " in cmd
    same = launch_line(
        "mpirun",
        facts_of(plan, HOSTS),
        "env",
        ["-u", "NCCL_DEBUG_FILE", "NCCL_DEBUG=INFO", "NCCL_DEBUG_SUBSYS=INIT,NET", "$PV_BIN/all_reduce_perf"]
        + TEST_ARGS.split(),
        hosts=HOSTS[:2],
        mpirun="$PV_BIN/mpirun",
    )
    assert cmd.endswith(same)


def test_parse_busbw_takes_the_largest_message() -> None:
    out = (
        "#  size count type redop root time algbw busbw\n"
        "   536870912  134217728  float  sum  -1  2000  268.4  300.00  0  2000  268.4  300.00  0\n"
        "  8589934592 2147483648  float  sum  -1 30000  286.3  350.50  0 30000  286.3  350.50  0\n"
        "# Avg bus bandwidth    : 320.1\n"
    )
    assert parse_busbw(out) == 350.5
    assert parse_busbw("mpirun: command not found") is None


@pytest.mark.parametrize(
    ("nodes", "faults", "slow_nodes", "slow_links"),
    [
        (4, [], [], []),
        (4, [NodeFault(2, "bandwidth")], [2], []),
        (4, [NodeFault(0, "link", 1)], [], [[0, 1]]),
        (3, [NodeFault(2, "bandwidth")], [2], []),
        (4, [NodeFault(1, "bandwidth"), NodeFault(3, "bandwidth")], [1, 3], []),
    ],
)
def test_nccl_test_bisects_by_pairs_to_name_the_slow_node_or_link(
    nodes: int, faults: list[NodeFault], slow_nodes: list[int], slow_links: list[list[int]]
) -> None:
    plan = plan_of("aws-p5-64")
    floor = floor_for(plan).busbw_gbps
    with MockNodes(plan, HOSTS[:nodes], faults, busbw_gbps=floor * 1.25) as mock:
        result = nccl_test(plan, HOSTS[:nodes], mock.run)
    assert result.ok is (not faults)
    assert result.slow_nodes == slow_nodes and result.slow_links == slow_links
    if faults:
        assert result.busbw_gbps < floor and any(not p["ok"] for p in result.pairs)


def test_islands_are_measured_apart_and_slow_nodes_named_with_cluster_ranks() -> None:
    """InfiniBand does not cross Azure islands: each island is measured alone; ranks stay cluster-wide."""
    plan = plan_of("azure-ndh100-ci")
    plan = plan.model_copy(update={"islands": (2, 2), "nodes": 4})
    floor = floor_for(plan).busbw_gbps
    with MockNodes(plan, HOSTS, [NodeFault(3, "bandwidth")], busbw_gbps=floor * 1.25) as mock:
        result = nccl_test(plan, HOSTS, mock.run)
    assert [i["ranks"] for i in result.islands] == [[0, 1], [2, 3]]
    assert result.islands[0]["busbw_gbps"] > floor > result.islands[1]["busbw_gbps"]
    assert not result.ok and result.slow_links == [[2, 3]]  # two nodes per island: node and link look alike


def test_every_pair_slow_points_at_the_whole_fabric() -> None:
    result = NcclResult(50.0, floor_for(plan_of("aws-p5-64")), 4)
    bisect(4, lambda ranks: 50.0, 200.0, result)
    assert result.slow_nodes == [] and result.slow_links == [[0, 1], [2, 3]]


def test_nccl_test_without_nccl_tests_installed_is_an_error_not_a_pass() -> None:
    plan = plan_of("aws-p5-ci")

    def run(command: str, ranks: Any = None) -> Any:
        from provision.ops.nodes import NodeResult

        return [NodeResult(r, HOSTS[r], 127, "", "all_reduce_perf: not found") for r in ranks]

    result = nccl_test(plan, HOSTS[:2], run)
    assert not result.ok and "nccl-tests" in (result.error or "")


@pytest.mark.parametrize(
    ("stack", "source", "where"),
    [
        ("aws-p5-64", "image", "/usr/local/cuda-*/efa/test-cuda-*/all_reduce_perf"),
        ("azure-ndh100-64", "image", "/opt/nccl-tests/build/all_reduce_perf"),
        ("gcp-a3-64", "build", "2.17.9"),
        ("alibaba-gn8-64", "build", "2.17.6"),  # the release whose tarball SHA-256 is pinned (images/alibaba.yaml)
    ],
)
def test_every_node_knows_where_all_reduce_perf_is_and_nccl_test_runs_that(stack: str, source: str, where: str) -> None:
    """The image's nccl-tests (DLAMI, Azure HPC image) or a pinned build; one fixed path either way."""
    from provision.planning.bootstrap import health_expectations

    plan = plan_of(stack)
    tests = health_expectations(plan)["nccl_tests"]
    assert tests["source"] == source and where in (tests.get("image_path"), tests.get("version"))
    assert tests["all_reduce_perf"] == "/usr/local/lib/provision/bin/all_reduce_perf"
    cmd = allreduce_command(plan, HOSTS[:2])
    assert "$PV_BIN/all_reduce_perf" in cmd and "/usr/local/lib/provision/bin" in cmd and "$PV_BIN/mpirun" in cmd


def test_mi300x_runs_rccl_tests_with_rccl_on_the_library_path() -> None:
    import yaml

    from provision.planning.bootstrap import nccl_tests_expectation
    from provision.planning.images import images_dir
    from provision.planning.plan import ImagePlan

    plan = plan_of("azure-ndh100-64")
    images = yaml.safe_load((images_dir() / "azure.yaml").read_text(encoding="utf-8"))
    rocm = next(i for i in images["images"] if i["name"] == "ubuntu-hpc-2204-rocm")
    plan = plan.model_copy(update={"image": ImagePlan(ref="x", source="catalog", versions=rocm["versions"])})
    tests = nccl_tests_expectation(plan)
    assert tests is not None and tests["image_path"] == "/opt/rccl-tests/all_reduce_perf"
    assert tests["lib"] == "/opt/rccl/lib"


def test_nccl_test_on_a_node_without_nccl_tests_fails_and_names_it() -> None:
    plan = plan_of("aws-p5-64")
    floor = floor_for(plan).busbw_gbps
    assert floor is not None
    with MockNodes(plan, HOSTS[:3], [NodeFault(2, "nccl_tests")], busbw_gbps=floor * 1.25) as mock:
        health = check_health(mock.run)
        result = nccl_test(plan, HOSTS[:3], mock.run)
    assert [(f["rank"], f["check"]) for f in health.failures()] == [(2, "nccl_tests")]
    assert not result.ok and HOSTS[2] in (result.error or "")
    with MockNodes(plan, HOSTS[:3], [], busbw_gbps=floor * 1.25) as mock:
        assert check_health(mock.run).ok and nccl_test(plan, HOSTS[:3], mock.run).ok


# ---------------------------------------------------------------------- compatibility rules


def _plan_with(stack: str, **versions: str) -> Any:
    from provision.clouds.base import get_adapter

    spec = stack_spec(stack)
    spec = spec.model_copy(update={"image": spec.image.model_copy(update={"versions": versions})})
    return get_adapter(spec.cloud).plan(spec, now=FIXED_NOW, owner="test")


@pytest.mark.parametrize(
    ("stack", "versions", "path", "words"),
    [
        ("aws-p5-ci", {"driver": "570.86.15", "cuda": "13.0"}, "image.versions.driver", "needs driver >= 580"),
        # Same major family (CUDA 12.x runs on >= 525) but below 12.8's own 570: health would fail on the node.
        ("azure-ndh100-ci", {"driver": "535.183.01", "cuda": "12.8"}, "image.versions.driver", "12.8's own driver"),
        ("alibaba-gn8-ci", {"nccl": "2.20.5"}, "image.versions.nccl", "NCCL_IB_GID_INDEX=-1"),
        ("alibaba-gn8-ci", {"nccl_min": "2.19"}, "image.versions.nccl_min", "older than NCCL 2.21"),
        ("gcp-a3-ci", {"nccl": "2.27.5-1"}, "image.versions.nccl", "nccl-plugin-gpudirecttcpx-dev:v1.0.14"),
        ("gcp-a3ultra-64", {"nccl": "2.26.2-1+cuda12.8"}, "image.versions.nccl", "nccl_gib 1.1.0"),
    ],
)
def test_mismatched_pins_are_spec_errors_with_their_source(
    stack: str, versions: dict[str, str], path: str, words: str
) -> None:
    with pytest.raises(SpecError) as err:
        _plan_with(stack, **versions)
    problem = err.value.problems[0]
    assert problem.path == path and words in problem.rule
    assert "http" in problem.rule or "GoogleCloudPlatform" in problem.rule or "NCCL 2.21" in problem.rule


def test_a_driver_branch_of_the_pinned_cuda_release_or_newer_passes_and_the_fix_names_both_ways() -> None:
    _plan_with("azure-ndh100-ci", driver="570.86.15", cuda="12.8")  # 12.8's own branch
    _plan_with("azure-ndh100-ci", driver="535.183.01", cuda="12.2")  # 535 ships with 12.2
    with pytest.raises(SpecError) as err:
        _plan_with("azure-ndh100-ci", driver="535.183.01", cuda="12.8")
    assert err.value.problems[0].fix == "pin driver >= 570, or CUDA 12.2 (the newest that driver branch ships with)"


def test_every_shipped_image_entry_passes_its_own_rules() -> None:
    import yaml

    from provision.planning.images import check_image, images_dir
    from provision.planning.plan import ImagePlan

    for cloud in ("aws", "gcp", "azure", "alibaba"):
        for entry in yaml.safe_load((images_dir() / f"{cloud}.yaml").read_text())["images"]:
            image = ImagePlan(ref="x", source="test", versions={k: str(v) for k, v in entry["versions"].items()})
            fabric = (entry.get("match") or {}).get("fabric", ["none"])[0]
            problems = [p for p in check_image(image, fabric, {}) if p.path != "image.id"]
            assert problems == [], (cloud, entry["name"], problems)


def test_tcpx_on_the_stock_image_is_refused_with_the_reason() -> None:
    spec = stack_spec("gcp-a3high-16")
    spec = spec.model_copy(update={"image": spec.image.model_copy(update={"id": None})})
    from provision.clouds.base import get_adapter

    with pytest.raises(SpecError) as err:
        get_adapter("gcp").plan(spec, now=FIXED_NOW, owner="test")
    problem = err.value.problems[0]
    assert problem.path == "image.id" and "linux-gcp-tcpx" in problem.rule and "a3-megagpu-8g" in problem.fix


# ---------------------------------------------------------------------- CLI


def _cli(*args: str) -> Any:
    from typer.testing import CliRunner

    from provision.cli.app import app

    return CliRunner().invoke(app, list(args))


def test_cli_health_nccl_test_and_up_accept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolated_home(tmp_path, monkeypatch)
    up = _cli("up", "aws-p5-ci", "--mock", "--yes", "--json", "--accept")
    assert up.exit_code == 0, up.output
    doc = json.loads(up.output)
    assert doc["acceptance"]["ok"] is True and doc["torn_down"] is False
    outputs = json.loads(_cli("outputs", "aws-p5-ci", "--mock", "--json").output)
    manifest = outputs["fabric_manifest"]
    assert manifest["measured"]["all_reduce_busbw_gbps"] == doc["acceptance"]["nccl"]["busbw_gbps"]
    assert manifest["nccl_env"]["FI_PROVIDER"] == "efa" and manifest["driver"] == "595.91.07"

    sick = _cli("health", "aws-p5-ci", "--mock", "--inject", "1:fabric", "--inject", "0:shared_fs")
    assert sick.exit_code == 1
    assert "node 1 (10.0.0.11): fabric FAILED: expected 32, found 31" in sick.output
    assert "node 0 (10.0.0.10): shared_fs FAILED" in sick.output
    as_json = _cli("health", "aws-p5-ci", "--mock", "--json", "--inject", "1:gpus")
    assert as_json.exit_code == 1 and json.loads(as_json.output)["failed"][0]["check"] == "gpus"

    slow = _cli("nccl-test", "aws-p5-ci", "--mock", "--json", "--inject", "0-1:link")
    assert slow.exit_code == 1 and json.loads(slow.output)["slow_links"] == [[0, 1]]

    bad = _cli("health", "aws-p5-ci", "--inject", "1:gpus")
    assert bad.exit_code == 2 and "needs --mock" in bad.output
    bad = _cli("health", "aws-p5-ci", "--mock", "--inject", "1:teapot")
    assert bad.exit_code == 2 and "RANK:CHECK" in bad.output

    failed = _cli(
        "up", "aws-p5-ci", "--mock", "--yes", "--json", "--accept", "--on-failure", "down", "--inject", "1:nvlink"
    )
    assert failed.exit_code == 1
    doc = json.loads(failed.output)
    assert doc["acceptance"]["health"]["failed"][0]["check"] == "nvlink" and doc["torn_down"] is True
    assert json.loads(_cli("status", "aws-p5-ci", "--mock", "--json").output)["state"] == "none"


def test_faults_never_reach_a_real_cluster() -> None:
    with pytest.raises(UnsupportedError):
        NodeFault.parse("x:gpus")


def test_measurement_of_a_real_stack_is_kept_beside_the_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    from provision.ops.acceptance import record_measurement

    home = isolated_home(tmp_path, monkeypatch)
    cluster = SimpleNamespace(mock=False, stack="org/proj/p5", outputs={"fabric_manifest": {"image": "ami-1"}})
    result = NcclResult(321.0, floor_for(plan_of("aws-p5-64")), 8)
    manifest = record_measurement(cluster, result)
    stored = json.loads((home / "manifests" / "org_proj_p5.json").read_text())
    assert stored == manifest and stored["image"] == "ami-1"
    assert stored["measured"]["all_reduce_busbw_gbps"] == 321.0 and stored["measured"]["ok"] is True
    # Two runs compare against the same, named floor.
    assert (
        stored["measured"]["floor_kind"] == "vendor"
        and "awsome-distributed-training" in stored["measured"]["floor_source"]
    )


def test_real_clusters_need_provision_exec_for_node_commands() -> None:
    import importlib.util

    from provision.ops.nodes import ssh_runner

    if importlib.util.find_spec("provision.ops.exec") is not None:
        pytest.skip("provision exec is installed")
    with pytest.raises(UnsupportedError, match="provision exec"):
        ssh_runner(object())


def test_lookup_images_are_held_to_the_driver_branch_and_an_unknown_gpu_is_an_error() -> None:
    from provision.planning.bootstrap import health_expectations

    aws = health_expectations(plan_of("aws-p5-64"))
    assert plan_of("aws-p5-64").image.ref.startswith("lookup:") and aws["driver"] == "595" and aws["nvlink"] is True
    azure = health_expectations(plan_of("azure-ndh100-64"))
    assert azure["driver"] == "560.35.03"  # a pinned marketplace version: the exact driver
    unknown = plan_of("aws-p5-64")
    unknown = unknown.model_copy(update={"offer": unknown.offer.model_copy(update={"gpu": "L40S"})})
    with pytest.raises(ValueError, match="'L40S' has no row in catalog/data/gpus.yaml"):
        health_expectations(unknown)  # no catalog row, no NVSwitch fact: never a silent default


def test_the_nvlink_check_follows_the_catalog_rows_nvswitch_fact(monkeypatch: pytest.MonkeyPatch) -> None:
    import dataclasses

    import provision.planning.bootstrap as bootstrap
    from provision.catalog import load_catalog
    from provision.planning.bootstrap import health_expectations

    real = load_catalog()
    rows = tuple(g.model_copy(update={"nvswitch": False}) if g.name == "H100" else g for g in real.gpus)
    monkeypatch.setattr(bootstrap, "load_catalog", lambda: dataclasses.replace(real, gpus=rows))

    assert health_expectations(plan_of("aws-p5-64"))["nvlink"] is False


def test_ssh_runner_plugs_onto_provision_exec(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real runner is provision exec's run_on_nodes(cluster, command, nodes=...) (issue 14), adapted."""
    import importlib.machinery
    import sys
    import types
    from types import SimpleNamespace

    from provision.ops.nodes import ssh_runner

    calls: list[Any] = []

    def run_on_nodes(cluster: Any, command: str, *, nodes: Any = "all") -> list[Any]:
        calls.append((cluster, command, nodes))
        ranks = [0, 1] if nodes == "all" else nodes
        return [
            SimpleNamespace(
                rank=r,
                host=HOSTS[r],
                exit_code=255 if r else 0,
                stdout="{}" if not r else "",
                stderr="",
                error="unreachable" if r else None,
            )
            for r in ranks
        ]

    fake = types.ModuleType("provision.ops.exec")
    fake.__spec__ = importlib.machinery.ModuleSpec("provision.ops.exec", None)
    fake.run_on_nodes = run_on_nodes  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "provision.ops.exec", fake)
    report = check_health(ssh_runner("cluster"))
    assert calls[0][0] == "cluster" and calls[0][2] == "all" and "provision-health" in calls[0][1]
    assert report.failures()[-1]["rank"] == 1 and report.failures()[-1]["detail"] == "unreachable"
    assert ssh_runner("cluster")("true", [1])[0].rank == 1 and calls[-1][2] == [1]


def test_up_accept_on_a_real_cloud_without_node_access_is_refused_before_anything_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    if importlib.util.find_spec("provision.ops.exec") is not None:
        pytest.skip("provision exec is installed")
    isolated_home(tmp_path, monkeypatch)
    out = _cli("up", "aws-p5-ci", "--yes", "--json", "--accept")
    assert out.exit_code == 2 and "provision exec" in out.output


def test_nccl_test_on_a_real_cluster_prepares_the_nodes_for_mpirun_but_health_does_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """nccl-test runs the launch helpers' mpirun line, which needs /etc/provision/env and the node-to-node key on
    every node: the real runner prepares them first (as `provision launch` does); the health check does not, so an
    unreachable node is still named by it."""
    from types import SimpleNamespace

    import provision.ops.acceptance as acceptance
    import provision.ops.launch as launch

    prepared: list[Any] = []
    monkeypatch.setattr(launch, "ensure_prepared", prepared.append)
    monkeypatch.setattr(acceptance, "ssh_runner", lambda cluster: "runner")
    cluster = SimpleNamespace(mock=False)
    with acceptance.node_runner(cluster) as run:
        assert run == "runner" and prepared == []
    with acceptance.node_runner(cluster, for_mpi=True) as run:
        assert run == "runner" and prepared == [cluster]


def test_inject_help_names_every_check_a_fault_can_break() -> None:
    from provision.cli.nodes import _INJECT
    from provision.ops.nodes import FAULT_CHECKS

    missing = [check for check in FAULT_CHECKS if check not in (_INJECT.help or "")]
    assert missing == []
