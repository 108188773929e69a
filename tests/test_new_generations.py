"""Newer generations (issue 15.6): GCP A4 plans and previews like A3 Ultra; Grace (arm64) sizes are refused by
`plan` with what is missing, and still listed by `offers` and `size`."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import FIXED_NOW, preview

from provision.catalog import load_catalog
from provision.clouds.azure.adapter import AzureAdapter
from provision.clouds.gcp import layout
from provision.clouds.gcp.adapter import GcpAdapter
from provision.planning.cluster_offers import cluster_offers
from provision.planning.sizing import size_training
from provision.spec import load_spec
from provision.spec.errors import SpecError

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHByb3Zpc2lvbi1leGFtcGxlLWtleS1kby1ub3QtdXNl example"
TEMPLATE = "gcp:compute/regionInstanceTemplate:RegionInstanceTemplate"
MIG = "gcp:compute/instanceGroupManager:InstanceGroupManager"
NETWORK = "gcp:compute/network:Network"
POLICY = "gcp:compute/resourcePolicy:ResourcePolicy"


def gcp_spec(**over: Any) -> Any:
    base: dict[str, Any] = {
        "name": "b200-train",
        "cloud": "gcp",
        "region": "us-central1",
        "zone": "us-central1-b",
        "instance_type": "a4-highgpu-8g",
        "nodes": 2,
        "access": {"allowed_cidrs": ["203.0.113.0/24"], "ssh_public_keys": [KEY]},
        "capacity": {"type": "reservation", "reservation": "a4-reservation"},
        "lifetime": {"ttl": "6h"},
        "owner": "tester",
        "gcp": {"project": "my-ml-project"},
    }
    base.update(over)
    return load_spec(base)


def azure_spec(**over: Any) -> Any:
    base: dict[str, Any] = {
        "name": "gb200-train",
        "cloud": "azure",
        "region": "westus3",
        "instance_type": "Standard_ND128isr_NDR_GB200_v6",
        "nodes": 2,
        "access": {"ssh_user": "azureuser", "ssh_public_keys": [KEY], "allowed_cidrs": ["203.0.113.0/24"]},
        "lifetime": {"ttl": "6h"},
    }
    base.update(over)
    return load_spec(base)


# ---------------------------------------------------------------------------- GCP A4 (B200): A3 Ultra's path


def test_a4_plans_with_a3_ultras_network_shape_and_reservation_bound_bulk_mode() -> None:
    a4 = GcpAdapter().plan(gcp_spec(), now=FIXED_NOW)
    ultra = GcpAdapter().plan(gcp_spec(instance_type="a3-ultragpu-8g"), now=FIXED_NOW)

    assert (a4.gpus, a4.fabric, a4.fabric_interfaces) == (16, "rdma", 8)
    shape = [(n.nic_type, n.network) for n in a4.extra.nics]
    assert shape == [(n.nic_type, n.network) for n in ultra.extra.nics]
    assert [n.nic_type for n in a4.extra.nics] == ["GVNIC"] * 2 + ["MRDMA"] * 8
    rdma = [n for n in a4.extra.networks if n.role == "rdma"]
    assert [n.profile for n in rdma] == ["us-central1-b-vpc-roce"] and len(rdma[0].subnets) == 8
    assert a4.extra.scheduling.provisioning_model == "RESERVATION_BOUND"
    assert a4.extra.allocation.bulk is True
    assert a4.extra.placement.kind == "workload-policy"
    assert a4.extra.boot_disk.type == "hyperdisk-balanced"
    assert a4.nccl_env["NCCL_NET"] == "gIB"
    assert a4.image.versions["driver"] >= "570"  # GKE's GPU guide: B200 needs driver 570 or later


def test_a4_is_refused_on_demand_because_gcp_does_not_sell_it_so() -> None:
    with pytest.raises(SpecError) as err:
        GcpAdapter().plan(gcp_spec(capacity={"type": "on-demand"}), now=FIXED_NOW)
    [p] = [p for p in err.value.problems if p.path == "capacity.type"]
    assert "a4-highgpu-8g" in p.rule or "a4-highgpu-8g" in p.fix


@pytest.mark.parametrize(
    ("capacity", "model", "target", "policies"),
    [
        ({"type": "reservation", "reservation": "a4-reservation"}, "RESERVATION_BOUND", 2, 1),
        ({"type": "spot"}, "SPOT", 2, 1),
        ({"type": "flex-start"}, "FLEX_START", 0, 0),  # a resize request creates the nodes; no workload policy
    ],
)
def test_a4_preview_under_the_strict_mocked_cloud(capacity: dict, model: str, target: int, policies: int) -> None:
    lustre = {"kind": "managed-lustre", "size_gib": 36000, "throughput_mbps_per_tib": 250}
    r = preview(gcp_spec(capacity=capacity, storage={"shared": lustre}))
    tmpl = r.one(TEMPLATE).inputs
    assert tmpl["machineType"] == "a4-highgpu-8g"
    assert [n["nicType"] for n in tmpl["networkInterfaces"]] == ["GVNIC"] * 2 + ["MRDMA"] * 8
    assert len(r.of_type(NETWORK)) == 3
    assert tmpl["scheduling"]["provisioningModel"] == model
    assert r.one(MIG).inputs["targetSize"] == target
    assert len(r.of_type(POLICY)) == policies


def test_a4_types_are_in_every_a3_ultra_rule_list() -> None:
    for rule in (layout.WORKLOAD_POLICY_TYPES, layout.RESERVATION_BOUND_TYPES, tuple(layout.BOOT_DISK_TYPES)):
        assert ("a3-ultragpu-8g" in rule) == ("a4-highgpu-8g" in rule), rule


# ---------------------------------------------------------------------------- Grace (arm64): refused, still listed


@pytest.mark.parametrize(
    ("adapter", "spec", "missing", "instead"),
    [
        (
            GcpAdapter(),
            lambda: gcp_spec(instance_type="a4x-highgpu-4g", region="us-east1", zone="us-east1-d"),
            "NVLink-domain placement",
            "a4-highgpu-8g",
        ),
        (AzureAdapter(), azure_spec, "arm64 ubuntu-hpc image", "Standard_ND96isr_H200_v5"),
    ],
)
def test_plan_refuses_grace_sizes_naming_the_type_and_what_is_missing(adapter, spec, missing, instead) -> None:
    with pytest.raises(SpecError) as err:
        adapter.plan(spec(), now=FIXED_NOW)

    [p] = err.value.problems
    assert p.path == "instance_type"
    assert p.rule.startswith("is not yet supported by `provision plan`: its hosts are arm64")
    assert missing in p.rule
    assert instead in p.fix and p.value in p.fix  # the way out, and the row stays for offers/size


def test_gb200_picked_by_gpu_name_is_refused_too() -> None:
    with pytest.raises(SpecError) as err:
        AzureAdapter().plan(azure_spec(instance_type=None, gpu="GB200"), now=FIXED_NOW)
    assert [p.value for p in err.value.problems] == ["Standard_ND128isr_NDR_GB200_v6"]


def test_grace_rows_stay_listed_for_offers_and_size() -> None:
    cat = load_catalog()
    offers = cluster_offers(cat, gpus=8, gpu="GB200", capacity=("on-demand", "reservation"))
    assert {(o.cloud, o.instance_type, o.nodes) for o in offers} >= {
        ("azure", "Standard_ND128isr_NDR_GB200_v6", 2),
        ("gcp", "a4x-highgpu-4g", 2),
    }
    assert all("does not support this type yet" in " ".join(o.notes) for o in offers)
    priced = [o for o in offers if o.instance_type == "Standard_ND128isr_NDR_GB200_v6" and o.region == "westus3"]
    assert priced[0].compute_hourly_usd == pytest.approx(
        2 * cat.instance("azure", priced[0].instance_type).price("westus3")
    )

    report = size_training("70B", "2T", gpu="GB200", gpus=512)
    assert report.compute.gpu_hours > 0
    [azure] = [c for c in report.clouds if c.cloud == "azure"]
    assert azure.instance_type == "Standard_ND128isr_NDR_GB200_v6" and azure.nodes * 4 == azure.gpus
    assert any("does not support it yet" in n for n in azure.notes)


def test_write_spec_refuses_a_grace_option_instead_of_writing_a_spec_plan_rejects(tmp_path) -> None:
    from typer.testing import CliRunner

    from provision.cli.app import app

    target = tmp_path / "spec.yaml"
    args = ["size", "--params", "70B", "--tokens", "2T", "--gpu", "GB200", "--cloud", "azure"]
    result = CliRunner().invoke(app, [*args, "--write-spec", str(target)])

    assert result.exit_code == 2, result.output
    assert "arm64" in result.output and "Standard_ND128isr_NDR_GB200_v6" in result.output
    assert not target.exists()


def test_gke_a4_pool_uses_the_b200_accelerator_and_a3_ultras_rdma_networks() -> None:
    spec = gcp_spec(scheduler={"kind": "kubernetes"})
    r = preview(spec)
    gpu = [x.inputs for x in r.of_type("gcp:container/nodePool:NodePool") if x.inputs["name"] == "gpu"][0]
    [acc] = gpu["nodeConfig"]["guestAccelerators"]
    assert acc["type"] == "nvidia-b200" and acc["count"] == 8
    assert gpu["nodeConfig"]["machineType"] == "a4-highgpu-8g"
    assert len(gpu["networkConfig"]["additionalNodeNetworkConfigs"]) == 9  # 2nd gVNIC + 8 RDMA NICs
    params = [x.inputs["spec"] for x in r.of_type("kubernetes:networking.gke.io/v1:GKENetworkParamSet")]
    assert len(params) == 8 and {p["deviceMode"] for p in params} == {"RDMA"}
    assert r.plan.kubernetes.job.env["NCCL_NET"] == "gIB"


def test_gb200_sizes_as_blackwell_with_the_widened_unfitted_range() -> None:
    from provision.catalog import load_catalog

    cat = load_catalog()
    gb200 = size_training("70B", "2T", gpu="GB200", gpus=512).compute
    b200 = size_training("70B", "2T", gpu="B200", gpus=512).compute

    assert cat.gpu("GB200").generation == cat.gpu("B200").generation == "blackwell"  # catalog facts, not code
    assert gb200.effective_mfu == pytest.approx(b200.effective_mfu)  # same calibrated fraction of a higher peak
    assert gb200.gpu_hours < b200.gpu_hours  # 2,500 vs 2,250 dense BF16 TFLOPS
    ratio = lambda c: c.gpu_hours_range[1] / c.gpu_hours_range[0]  # noqa: E731
    assert ratio(gb200) == pytest.approx(ratio(b200))


def test_offers_json_says_which_types_have_arm64_hosts() -> None:
    import json

    from typer.testing import CliRunner

    from provision.cli.app import app

    result = CliRunner().invoke(app, ["offers", "--gpu", "GB200", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert {(r["cloud"], r["cpu_arch"]) for r in rows} == {("gcp", "arm64"), ("azure", "arm64")}


def test_size_table_fits_80_columns_with_the_longest_new_type(monkeypatch: pytest.MonkeyPatch) -> None:
    from rich.console import Console

    import provision.cli.size as size_cli

    screen = Console(width=80, record=True)
    monkeypatch.setattr(size_cli, "console", lambda stderr=False: screen)
    size_cli.print_report(size_training("70B", "2T", gpu="GB200").as_dict())

    text = screen.export_text()
    assert all(len(line) <= 80 for line in text.splitlines())
    table = text[text.index("recommended cluster per cloud") : text.index("fabric:")]
    assert "…" not in table and "Standard_ND128is" in table and "r_NDR_GB200_v6" in table
