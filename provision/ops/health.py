"""``provision health``: run the node-side health check on every node and name each failed node and check.

The check itself ships in the bootstrap (``/usr/local/lib/provision/provision-health``, from
``images/common/provision-health``): it runs at every boot as the last bootstrap step and writes
``/var/lib/provision/health.json``; :func:`check_health` runs it again, now, on every node through a
:data:`~provision.ops.nodes.NodeRunner` and gathers the answers.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from provision.ops.nodes import NodeResult, NodeRunner

#: What every node runs (no sudo needed: it only reads; a node that cannot write its record still answers). It runs
#: over SSH in the login user's environment, so the stdlib-only script starts apart from the user's Python set-up:
#: ``-E`` ignores ``PYTHON*`` variables (a ``PYTHONPATH`` of training code, e.g. on the shared filesystem, would come
#: before the standard library: a module named like one of its modules would break the check, a hung mount hang it),
#: ``-S`` skips ``site`` (site-packages' ``.pth`` files and ``sitecustomize``). Python docs, "Command line and
#: environment": https://docs.python.org/3/using/cmdline.html#cmdoption-E and #cmdoption-S.
HEALTH_COMMAND = 'python3 -E -S "${PROVISION_ROOT:-}/usr/local/lib/provision/provision-health" --json'


@dataclass
class NodeHealth:
    """One node's answer: ``ok`` and every check (``name``, ``ok``, ``expected``, ``found``, ``detail``)."""

    rank: int
    host: str
    ok: bool
    checks: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None

    @property
    def failed(self) -> list[dict[str, Any]]:
        return [c for c in self.checks if not c.get("ok")]


@dataclass
class HealthReport:
    """Every node's health; ``ok`` when every node passed every check."""

    nodes: list[NodeHealth]

    @property
    def ok(self) -> bool:
        return all(n.ok for n in self.nodes)

    def failures(self) -> list[dict[str, Any]]:
        """One entry per failed check: ``rank``, ``host``, ``check``, ``expected``, ``found``, ``detail``."""
        out: list[dict[str, Any]] = []
        for n in self.nodes:
            if n.error is not None:
                out.append(
                    {
                        "rank": n.rank,
                        "host": n.host,
                        "check": "reachable",
                        "expected": "an answer",
                        "found": None,
                        "detail": n.error,
                    }
                )
            for c in n.failed:
                out.append(
                    {
                        "rank": n.rank,
                        "host": n.host,
                        "check": c["name"],
                        "expected": c.get("expected"),
                        "found": c.get("found"),
                        "detail": c.get("detail", ""),
                    }
                )
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "nodes": [
                {"rank": n.rank, "host": n.host, "ok": n.ok, "error": n.error, "checks": n.checks} for n in self.nodes
            ],
            "failed": self.failures(),
        }

    def lines(self) -> list[str]:
        """Human-readable: one line per failed check (or one line saying all is well)."""
        if self.ok:
            return [f"all {len(self.nodes)} nodes healthy"]
        return [
            f"node {f['rank']} ({f['host']}): {f['check']} FAILED: expected {f['expected']}, found {f['found']}"
            + (f" ({f['detail']})" if f["detail"] else "")
            for f in self.failures()
        ]


def parse_node(result: NodeResult) -> NodeHealth:
    """A node's health from its command result (its last stdout line is the JSON document)."""
    lines = [ln for ln in result.stdout.splitlines() if ln.strip().startswith("{")]
    if not lines:
        detail = (result.stderr.strip().splitlines() or [f"exit code {result.exit_code}, no health document"])[-1]
        return NodeHealth(result.rank, result.host, False, error=detail[:300])
    try:
        doc = json.loads(lines[-1])
    except ValueError:
        return NodeHealth(result.rank, result.host, False, error="the health document is not JSON")
    return NodeHealth(result.rank, result.host, bool(doc.get("ok")), list(doc.get("checks") or []))


def check_health(run: NodeRunner, ranks: Sequence[int] | None = None) -> HealthReport:
    """Run the health check on the nodes (every node by default) and gather the answers."""
    return HealthReport([parse_node(r) for r in run(HEALTH_COMMAND, ranks)])
