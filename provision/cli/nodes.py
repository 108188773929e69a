"""``provision health TARGET`` and ``provision nccl-test TARGET`` (``[--mock] [--inject RANK:CHECK]... [--json]``).

``health`` runs the node health check on every node and names each failed node and check; ``nccl-test`` measures
the all-reduce bus bandwidth across the cluster against the floor for its instance type and names the slow node or
pair. Both exit 0 when all is well, 1 when a node or the fabric fails (2 for bad input). ``--inject`` breaks a
check on a mocked node (``3:fabric``, ``0:gpus``, ``2:bandwidth``, ``0-1:link``), to rehearse a failure.
"""

from __future__ import annotations

from typing import Any

import typer

from provision.cli.common import JsonOpt, TargetArg, console, emit_json, run_command

_MOCK = typer.Option(False, "--mock", help="The mocked cluster (local state) and its mocked nodes.")
_INJECT = typer.Option(
    None,
    "--inject",
    help="With --mock: break CHECK on node RANK (RANK:CHECK, or RANK-PEER:link). Repeatable. CHECK: gpus, driver, "
    "cuda, nvlink, fabric, shared_fs, scratch, nccl_tests, bootstrap, bandwidth, link, or an NCCL transport fault "
    "(net_socket, no_gdr, one_nic).",
)


def _faults(inject: list[str] | None, mock: bool) -> list[Any]:
    from provision.ops.nodes import NodeFault
    from provision.spec.errors import Problem, UnsupportedError

    if inject and not mock:
        raise UnsupportedError(
            "--inject needs --mock",
            [Problem("--inject", inject[0], "needs --mock (faults go into mocked nodes only)", "add --mock")],
        )
    return [NodeFault.parse(text) for text in inject or []]


def _cluster(target: str, mock: bool) -> Any:
    from provision.ops.cluster import Cluster

    return Cluster(target, mock=mock, display="none")


def _print(lines: list[str], ok: bool) -> None:
    from rich.markup import escape

    out = console()
    for line in lines:
        out.print(("" if ok else "[red]") + escape(line) + ("" if ok else "[/]"))


def health(target: str = TargetArg, mock: bool = _MOCK, inject: list[str] = _INJECT, as_json: bool = JsonOpt) -> None:
    """Check every node: GPUs, NVLink, driver/CUDA, fabric devices, shared filesystem, scratch, bootstrap steps."""
    from provision.ops.acceptance import node_runner
    from provision.ops.health import check_health

    def go() -> Any:
        faults = _faults(inject, mock)
        cluster = _cluster(target, mock)
        with node_runner(cluster, faults) as run:
            return check_health(run)

    report = run_command(as_json, go)
    if as_json:
        emit_json(report.as_dict())
    else:
        _print(report.lines(), report.ok)
    raise typer.Exit(0 if report.ok else 1)


def nccl_test(
    target: str = TargetArg, mock: bool = _MOCK, inject: list[str] = _INJECT, as_json: bool = JsonOpt
) -> None:
    """Measure all-reduce bus bandwidth across the cluster against the floor for its instance type."""
    from provision.ops.acceptance import node_runner, record_measurement
    from provision.ops.nccl import nccl_test as run_test

    def go() -> Any:
        faults = _faults(inject, mock)
        cluster = _cluster(target, mock)
        with node_runner(cluster, faults, for_mpi=True) as run:
            result = run_test(cluster.plan(), cluster.hosts, run)
        if result.busbw_gbps is not None:
            record_measurement(cluster, result)
        return result

    result = run_command(as_json, go)
    if as_json:
        emit_json(result.as_dict())
    else:
        _print(result.lines(), result.ok)
    raise typer.Exit(0 if result.ok else 1)


def register(app: typer.Typer) -> None:
    app.command()(health)
    app.command("nccl-test")(nccl_test)
