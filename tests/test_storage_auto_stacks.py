"""`storage.kind: auto` plans on every shipped GCP stack (each shipped GCP image and fabric, the custom TCPX image
of gcp-a3high-16 included) for 8, 12, 20, 36 and 100 TiB: auto picks only a service the stack's nodes can mount,
never one the GCP adapter then refuses (Parallelstore on the Ubuntu 24.04 A3 Mega image)."""

from __future__ import annotations

from pathlib import Path

import pytest

from provision.clouds.validate import load_and_plan
from provision.spec.loading import read_yaml, spec_data_from_document

ROOT = Path(__file__).resolve().parent.parent
GCP_STACKS = sorted(p for p in (ROOT / "stacks").glob("Pulumi.gcp-*.yaml"))


@pytest.mark.parametrize("tib", [8, 12, 20, 36, 100])
@pytest.mark.parametrize("stack", GCP_STACKS, ids=[p.name[len("Pulumi.") : -len(".yaml")] for p in GCP_STACKS])
def test_auto_storage_plans_on_every_shipped_gcp_stack(stack: Path, tib: int) -> None:
    data = spec_data_from_document(read_yaml(stack), str(stack))
    shared = {k: v for k, v in (data["storage"].get("shared") or {}).items() if k == "mount"}
    data["storage"]["shared"] = {**shared, "kind": "auto", "size_gib": f"{tib}TiB"}
    data["lifetime"].pop("max_cost_usd", None)  # the stack's cap is sized for its own filesystem, not this one
    plan = load_and_plan(data)
    assert plan.storage is not None and plan.storage.size_gib >= tib * 1024
    if plan.image and "2404" in str(plan.image):
        assert plan.storage.kind != "parallelstore"
