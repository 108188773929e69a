"""Generate ``provision/clouds/gcp/data/strict.json`` from Google's API discovery documents.

The discovery documents ship with google-api-python-client (a dev dependency); users' ``provision
preview`` reads only the compact JSON this writes. ``tests/test_strict_gcp.py`` regenerates it from
the installed package and compares, so the committed data cannot drift from its source.

    python -m provision.clouds.gcp.strict_data      # rewrite the data file

For every schema reachable from :data:`ROOTS` it keeps, per property: its type, the ``$ref`` (and whether
it is an array), the ``enum``, the ``pattern``, and the numeric rules Google states in the field's
description (``between 12000 and 100000, in multiples of 4000`` and the like) with the quoted text.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data" / "strict.json"

#: discovery document -> the schemas the Pulumi resources create.
ROOTS: dict[str, tuple[str, ...]] = {
    "compute.v1": (
        "Firewall",
        "Network",
        "Subnetwork",
        "Router",
        "Address",
        "ResourcePolicy",
        "InstanceTemplate",
        "Instance",  # the Slurm controller (clouds/gcp/slurm.py)
        "InstanceGroupManager",
        "InstanceGroupManagerResizeRequest",
    ),
    "file.v1": ("Instance",),
    "parallelstore.v1": ("Instance",),
    "servicenetworking.v1": ("Connection",),
    "container.v1": ("Cluster", "NodePool"),
    "cloudscheduler.v1": ("Job",),  # the GKE expiry job (clouds/gcp/kubeexpiry.py)
    "iam.v1": ("Role",),  # the GKE expiry job's custom role
}

#: Numeric rules Google states in prose: (regex, names of the groups).
_PROSE = (
    (r"[Aa]llowed values are between (\d+) and (\d+), in multiples of (\d+)", ("min", "max", "step")),
    (r"minimum value for this field is (\d+) and the maximum value is (\d+)", ("min", "max")),
    (r"integer between `(\d+)` and `(\d+)`", ("min", "max")),
    (r"maximum character length is (\d+)", ("max_length",)),
    (r"must be (\d+)-(\d+) characters long", ("min_length", "max_length")),
)


def _documents() -> dict[str, dict[str, Any]]:
    """The discovery documents google-api-python-client ships (found without importing the client)."""
    import importlib.util

    spec = importlib.util.find_spec("googleapiclient")
    if spec is None or spec.origin is None:
        raise RuntimeError("regenerating the GCP strict rules needs google-api-python-client (the dev extra)")
    base = Path(spec.origin).resolve().parent / "discovery_cache" / "documents"
    return {name: json.loads((base / f"{name}.json").read_text(encoding="utf-8")) for name in ROOTS}


def _rules(prop: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    items = prop.get("items") or {}
    ref = prop.get("$ref") or items.get("$ref")
    if prop.get("additionalProperties", {}).get("$ref"):
        ref = prop["additionalProperties"]["$ref"]
    if ref:
        out["ref"] = ref
    if prop.get("type") == "array":
        out["array"] = True
    if prop.get("type"):  # every documented property is kept: an input that maps onto one is accounted checked
        out["type"] = items.get("type") or prop["type"] if prop["type"] == "array" else prop["type"]
    enum = prop.get("enum") or items.get("enum")
    if enum:
        out["enum"] = list(enum)
    if prop.get("pattern"):
        out["pattern"] = prop["pattern"]
    if prop.get("format") == "google-duration":
        out["format"] = "google-duration"
    text = " ".join((prop.get("description") or "").split())
    for regex, names in _PROSE:
        m = re.search(regex, text)
        if m:
            out.update({n: int(v) for n, v in zip(names, m.groups(), strict=True)})
            out.setdefault("quotes", []).append(m.group(0))
    return out


def generate() -> dict[str, Any]:
    """The compact rule data, from the installed discovery documents."""
    docs = _documents()
    out: dict[str, Any] = {"documents": {}, "schemas": {}}
    for name, roots in ROOTS.items():
        doc = docs[name]
        out["documents"][name] = {"revision": doc.get("revision", ""), "version": doc.get("version", "")}
        schemas = dict(doc["schemas"])
        todo, seen = list(roots), set()
        kept: dict[str, Any] = {}
        while todo:
            schema = todo.pop()
            if schema in seen or schema not in schemas:
                continue
            seen.add(schema)
            props = {}
            for prop, body in sorted((schemas[schema].get("properties") or {}).items()):
                inline = (body.get("items") or {}).get("properties") or body.get("properties")
                if inline and "$ref" not in body and "$ref" not in (body.get("items") or {}):
                    # An object defined in place (a firewall's ``allowed[]``): kept as a schema of its own.
                    synthetic = f"{schema}.{prop}"
                    schemas[synthetic] = {"properties": inline}
                    body = (
                        {**body, "$ref": synthetic} if "items" not in body else {**body, "items": {"$ref": synthetic}}
                    )
                rules = _rules(body)
                if rules:
                    props[prop] = rules
                    if "ref" in rules:
                        todo.append(rules["ref"])
            kept[schema] = props
        out["schemas"][name] = dict(sorted(kept.items()))
    return out


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=0, sort_keys=True, separators=(",", ":")) + "\n"


def main() -> None:  # pragma: no cover - a developer command
    DATA.parent.mkdir(parents=True, exist_ok=True)
    DATA.write_text(render(generate()), encoding="utf-8")
    print(f"wrote {DATA}")


if __name__ == "__main__":  # pragma: no cover
    main()
