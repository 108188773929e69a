"""How long `import provision` takes, as a ratio to `python -c pass` (median of fresh processes).

Usage: python benchmarks/import_time.py [runs]
Target: provision's own import cost under 150 ms on the 2-core reference machine.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time


def _median_seconds(code: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    base = _median_seconds("pass", runs)
    imp = _median_seconds("import provision", runs)
    cli = _median_seconds("import provision.cli.app", runs)
    print(f"python -c pass:          {base * 1000:7.1f} ms")
    print(
        f"import provision:        {imp * 1000:7.1f} ms  ratio {imp / base:.2f}  (own cost {(imp - base) * 1000:.1f} ms)"
    )
    print(
        f"import provision.cli:    {cli * 1000:7.1f} ms  ratio {cli / base:.2f}  (own cost {(cli - base) * 1000:.1f} ms)"
    )


if __name__ == "__main__":
    main()
