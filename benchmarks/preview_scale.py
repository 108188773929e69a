"""`provision preview` of a 1,024-node cluster against a hand-written Pulumi program, same mocks.

For each cloud, two fresh processes: (a) provision's program for the spec from
benchmarks/baseline_<cloud>.py `spec(nodes)`, run by provision.testing.run_program; (b) the
minimal hand-written program `program(nodes)` in that file, registering the same resources
under the same mocks. Prints wall time, peak RSS and the ratio a/b (target <= 1.3).

Usage: python benchmarks/preview_scale.py [--nodes 1024] [cloud ...]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _child(kind: str, cloud: str, nodes: int) -> None:
    sys.path.insert(0, str(HERE))
    import importlib

    baseline = importlib.import_module(f"baseline_{cloud}")
    start = time.perf_counter()
    if kind == "provision":
        from provision.spec import load_spec
        from provision.testing import run_program

        result = run_program(load_spec(baseline.spec(nodes)), stack="bench")
        count = sum(1 for r in result.resources if r.custom)
    else:
        import pulumi

        from provision.testing import CloudMocks

        mocks = CloudMocks(region=baseline.spec(nodes)["region"])
        pulumi.runtime.set_mocks(mocks, project="provision", stack="bench", preview=False)
        pulumi.runtime.test(lambda: baseline.program(nodes))()
        count = sum(1 for r in mocks.ledger if r.custom)
    wall = time.perf_counter() - start
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"kind": kind, "resources": count, "wall_s": wall, "peak_rss_mb": rss}))


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
    parser.add_argument("--child", choices=["provision", "baseline"])
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.clouds[0], args.nodes)
        return
    print(
        f"{'cloud':8} {'nodes':>6} {'res(p/b)':>10} {'provision s':>12} {'baseline s':>11} {'ratio':>6} {'RSS MB (p/b)':>14}"
    )
    for cloud in args.clouds:
        if not (HERE / f"baseline_{cloud}.py").exists():
            print(f"{cloud:8} no benchmarks/baseline_{cloud}.py")
            continue
        p, b = _run("provision", cloud, args.nodes), _run("baseline", cloud, args.nodes)
        print(
            f"{cloud:8} {args.nodes:6d} {p['resources']:>4}/{b['resources']:<5} {p['wall_s']:12.2f} {b['wall_s']:11.2f} "
            f"{p['wall_s'] / b['wall_s']:6.2f} {p['peak_rss_mb']:6.0f}/{b['peak_rss_mb']:.0f}"
        )


if __name__ == "__main__":
    main()
