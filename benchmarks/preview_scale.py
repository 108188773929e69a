"""`provision preview` of a 1,024-node cluster against a hand-written Pulumi program, same mocks.

For each cloud, two fresh processes: (a) provision's program for the spec from
benchmarks/baseline_<cloud>.py `spec(nodes)`, run by provision.testing.run_program; (b) the
minimal hand-written program `program(nodes)` in that file, registering the same resources
under the same mocks. Prints wall time, peak RSS and the ratio a/b (target <= 1.3).

With ``--versus-nodes 8`` it instead compares provision with itself: the ``--nodes`` preview against
the same cluster at 8 nodes (issue 11: a 1,024-node preview must cost at most 1.3x the 8-node one).

Usage: python benchmarks/preview_scale.py [--nodes 1024] [--repeat 3] [--versus-nodes 8] [cloud ...]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


PROVIDER = {"aws": "pulumi_aws", "gcp": "pulumi_gcp", "azure": "pulumi_azure_native", "alibaba": "pulumi_alicloud"}


def _child(kind: str, cloud: str, nodes: int) -> None:
    """One measured run. ``total_s`` counts from process start (imports included); ``program_s``
    counts from after importing pulumi and the provider package, i.e. planning plus registration."""
    start = time.perf_counter()
    cpu_start = time.process_time()
    sys.path.insert(0, str(HERE))
    import importlib

    import pulumi

    importlib.import_module(PROVIDER[cloud])
    baseline = importlib.import_module(f"baseline_{cloud}")
    if kind == "provision":
        from provision.spec import load_spec
        from provision.testing import run_program

        program_start, program_cpu = time.perf_counter(), time.process_time()
        result = run_program(load_spec(baseline.spec(nodes)), stack="bench")
        count = sum(1 for r in result.resources if r.custom)
    else:
        from provision.testing import CloudMocks, install_mocks

        program_start, program_cpu = time.perf_counter(), time.process_time()
        mocks = CloudMocks(region=baseline.spec(nodes)["region"])
        install_mocks(mocks, project="provision", stack="bench", preview=False)
        pulumi.runtime.test(lambda: baseline.program(nodes))()
        count = sum(1 for r in mocks.ledger if r.custom)
    end, cpu_end = time.perf_counter(), time.process_time()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        json.dumps(
            {
                "kind": kind,
                "resources": count,
                "wall_s": end - start,
                "program_s": end - program_start,
                # CPU seconds of this process: unlike wall time, barely moved by other load on the machine.
                "cpu_s": cpu_end - cpu_start,
                "program_cpu_s": cpu_end - program_cpu,
                "peak_rss_mb": rss,
            }
        )
    )


def _run(kind: str, cloud: str, nodes: int) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", kind, "--nodes", str(nodes), cloud],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("clouds", nargs="*", default=["aws", "gcp", "azure", "alibaba"])
    parser.add_argument("--nodes", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=3, help="Alternating runs per side; medians are printed.")
    parser.add_argument("--child", choices=["provision", "baseline"])
    parser.add_argument(
        "--versus-nodes", type=int, help="Compare provision's --nodes preview with its own preview at this many nodes."
    )
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.clouds[0], args.nodes)
        return
    if args.versus_nodes:
        _scale(args.clouds, args.nodes, args.versus_nodes, args.repeat)
        return
    print(
        f"{'cloud':8} {'nodes':>6} {'res(p/b)':>10} {'total s (p/b)':>14} {'ratio':>6} "
        f"{'program s (p/b)':>16} {'ratio':>6} {'RSS MB (p/b)':>13}"
    )
    for cloud in args.clouds:
        if not (HERE / f"baseline_{cloud}.py").exists():
            print(f"{cloud:8} no benchmarks/baseline_{cloud}.py")
            continue
        runs = [(_run("provision", cloud, args.nodes), _run("baseline", cloud, args.nodes)) for _ in range(args.repeat)]
        p = {k: statistics.median(r[0][k] for r in runs) for k in ("resources", "wall_s", "program_s", "peak_rss_mb")}
        b = {k: statistics.median(r[1][k] for r in runs) for k in ("resources", "wall_s", "program_s", "peak_rss_mb")}
        print(
            f"{cloud:8} {args.nodes:6d} {p['resources']:>4}/{b['resources']:<5} "
            f"{p['wall_s']:6.2f}/{b['wall_s']:<7.2f} {p['wall_s'] / b['wall_s']:6.2f} "
            f"{p['program_s']:7.2f}/{b['program_s']:<8.2f} {p['program_s'] / b['program_s']:6.2f} "
            f"{p['peak_rss_mb']:6.0f}/{b['peak_rss_mb']:<6.0f}"
        )


def _scale(clouds: list[str], nodes: int, small: int, repeat: int) -> None:
    """provision at ``nodes`` against provision at ``small`` nodes: medians of alternating fresh processes.

    Ratios of wall time and of CPU time (the process's own user+system seconds, which other load on a
    shared machine barely moves), for the whole process and for the program alone (after imports)."""
    print(
        f"{'cloud':8} {'nodes':>11} {'res':>11} {'wall s':>13} {'ratio':>6} {'cpu s':>13} {'ratio':>6} "
        f"{'program cpu s':>13} {'ratio':>6}"
    )
    keys = ("resources", "wall_s", "cpu_s", "program_cpu_s")
    for cloud in clouds:
        runs = [(_run("provision", cloud, nodes), _run("provision", cloud, small)) for _ in range(repeat)]
        big = {k: statistics.median(r[0][k] for r in runs) for k in keys}
        low = {k: statistics.median(r[1][k] for r in runs) for k in keys}
        cols = " ".join(
            f"{big[k]:6.2f}/{low[k]:<6.2f} {big[k] / low[k]:6.2f}" for k in ("wall_s", "cpu_s", "program_cpu_s")
        )
        print(f"{cloud:8} {nodes:>5}/{small:<5} {big['resources']:>5}/{low['resources']:<5} {cols}")


if __name__ == "__main__":
    main()
