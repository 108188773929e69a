"""Integrity of the offer catalog data (provision/catalog/data/*.yaml).

Two kinds of checks:
* internal consistency: every file loads, keys are unique, zones belong to their region, GPU names resolve,
  size rules behave on hand-computed cases;
* an external cross-check of the AWS rows against the EC2 data moto ships (instance types and AZ offerings),
  so a typo in a hand-maintained figure fails the build.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from datetime import date
from functools import cache
from importlib import resources
from pathlib import Path

import pytest
import yaml

from provision.catalog import load_catalog
from provision.catalog.models import CLOUDS, CloudFile, GpuFile

#: Rows with no region on purpose: nobody could verify where they are sold (see each row's notes).
EXPECTED_REGIONLESS = {
    ("azure", "Standard_ND96isr_MI300X_v5"),
    ("alibaba", "ecs.gn7e-c16g1.32xlarge"),
}

#: moto's GPU name plus memory -> the catalog's canonical GPU name.
MOTO_GPU = {
    ("H100", 81920): "H100",
    ("H200", 144384): "H200",
    ("A100", 40960): "A100-40GB",
    ("A100", 81920): "A100-80GB",
    ("B200", 183359): "B200",
}


def _raw(name: str) -> object:
    return yaml.safe_load(resources.files("provision.catalog").joinpath("data", name).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


# --------------------------------------------------------------------------------------------- files


def test_every_file_loads_and_counts(cat) -> None:
    gpus = GpuFile.model_validate(_raw("gpus.yaml"))
    assert {g.name for g in gpus.gpus} >= {"H100", "H200", "A100-40GB", "A100-80GB", "H20", "MI300X"}
    per_cloud = {}
    for cloud in CLOUDS:
        f = CloudFile.model_validate(_raw(f"{cloud}.yaml"))
        assert f.cloud == cloud
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", f.version)
        assert f.network.cloud == cloud
        assert all(o.cloud == cloud for o in f.instances)
        assert all(fs.cloud == cloud for fs in f.filesystems)
        per_cloud[cloud] = {o.instance_type for o in f.instances}
    assert per_cloud["aws"] == {
        "p5.48xlarge",
        "p5e.48xlarge",
        "p5en.48xlarge",
        "p4d.24xlarge",
        "p4de.24xlarge",
        "p6-b200.48xlarge",
    }
    assert per_cloud["gcp"] == {
        "a3-highgpu-8g",
        "a3-megagpu-8g",
        "a3-ultragpu-8g",
        "a2-highgpu-8g",
        "a2-ultragpu-8g",
        "a4-highgpu-8g",
        "a4x-highgpu-4g",
    }
    assert per_cloud["azure"] == {
        "Standard_ND96isr_H100_v5",
        "Standard_ND96isr_H200_v5",
        "Standard_ND96asr_v4",
        "Standard_ND96amsr_A100_v4",
        "Standard_ND96isr_MI300X_v5",
        "Standard_ND128isr_NDR_GB200_v6",
    }
    assert per_cloud["alibaba"] == {
        "ecs.ebmgn8v.48xlarge",
        "ecs.gn8v-8x.48xlarge",
        "ecs.ebmgn7ex.32xlarge",
        "ecs.gn7e-c16g1.32xlarge",
    }
    assert len(cat.instances) == 23
    assert len(cat.network) == 4
    assert {n.cloud for n in cat.network} == set(CLOUDS)


def test_keys_are_unique(cat) -> None:
    inst = Counter((o.cloud, o.instance_type.lower()) for o in cat.instances)
    assert [k for k, n in inst.items() if n > 1] == []
    fs = Counter((f.cloud, f.kind, f.tier) for f in cat.filesystems)
    assert [k for k, n in fs.items() if n > 1] == []
    gpus = Counter(g.name for g in cat.gpus)
    assert [k for k, n in gpus.items() if n > 1] == []


def test_every_row_has_real_sources(cat) -> None:
    rows = [*cat.instances, *cat.filesystems, *cat.network, *cat.gpus]
    for row in rows:
        assert row.sources, row
        for s in row.sources:
            assert s.ref.strip() and s.covers.strip(), row
            assert date(2020, 1, 1) <= s.retrieved <= date.today(), (row, s.retrieved)


# --------------------------------------------------------------------------------------------- instances


def test_regions_present_except_documented_unknowns(cat) -> None:
    regionless = {(o.cloud, o.instance_type) for o in cat.instances if not o.regions}
    assert regionless == EXPECTED_REGIONLESS
    for o in cat.instances:
        if not o.regions:
            assert "regions unknown" in o.notes.lower(), o.instance_type


@pytest.mark.parametrize("cloud", ["aws", "gcp", "alibaba"])
def test_zones_belong_to_their_region(cat, cloud) -> None:
    for o in cat.instances_for(cloud=cloud):
        for region, offer in o.regions.items():
            # Where no zone list is published the row says so, and the plan then needs the spec's zone.
            assert offer.zones or "zones unpublished" in o.notes, (o.instance_type, region)
            assert list(offer.zones) == sorted(set(offer.zones)), (o.instance_type, region)
            for z in offer.zones:
                assert z.startswith(region) and len(z) > len(region), (o.instance_type, region, z)


def test_azure_zones_are_empty_or_numbered(cat) -> None:
    for o in cat.instances_for(cloud="azure"):
        for offer in o.regions.values():
            assert set(offer.zones) <= {"1", "2", "3"}


def test_consumption_and_prices_agree(cat) -> None:
    for o in cat.instances:
        assert o.consumption, o.instance_type
        assert len(set(o.consumption)) == len(o.consumption), o.instance_type
        if "on-demand" not in o.consumption:
            assert all(r.price_per_hour_usd is None for r in o.regions.values()), o.instance_type
        if "spot" not in o.consumption:
            assert all(r.spot_price_per_hour_usd is None for r in o.regions.values()), o.instance_type
    assert "on-demand" not in cat.instance("aws", "p5e.48xlarge").consumption
    ultra = cat.instance("gcp", "a3-ultragpu-8g")
    assert set(ultra.consumption) == {"spot", "reservation", "flex-start"}
    assert ultra.host_nics == 2 and ultra.fabric == "rdma" and ultra.fabric_interfaces == 8


def test_fabric_interfaces_match_fabric(cat) -> None:
    for o in cat.instances:
        if o.fabric == "none":
            assert o.fabric_interfaces == 0, o.instance_type
        else:
            assert o.fabric_interfaces >= 1, o.instance_type
    expected = {
        ("aws", "p5.48xlarge"): ("efa", 32),
        ("aws", "p5e.48xlarge"): ("efa", 32),
        ("aws", "p5en.48xlarge"): ("efa", 16),
        ("aws", "p4d.24xlarge"): ("efa", 4),
        ("aws", "p4de.24xlarge"): ("efa", 4),
        ("aws", "p6-b200.48xlarge"): ("efa", 8),
        ("gcp", "a3-highgpu-8g"): ("tcpx", 4),
        ("gcp", "a3-megagpu-8g"): ("tcpxo", 8),
        ("gcp", "a2-highgpu-8g"): ("none", 0),
        ("gcp", "a4-highgpu-8g"): ("rdma", 8),
        ("gcp", "a4x-highgpu-4g"): ("rdma", 4),
        ("azure", "Standard_ND128isr_NDR_GB200_v6"): ("infiniband", 4),
        ("azure", "Standard_ND96isr_H100_v5"): ("infiniband", 8),
        ("alibaba", "ecs.gn7e-c16g1.32xlarge"): ("none", 0),
    }
    for (cloud, t), (fabric, n) in expected.items():
        o = cat.instance(cloud, t)
        assert (o.fabric, o.fabric_interfaces) == (fabric, n), t


def test_gpu_names_resolve_and_memory_agrees(cat) -> None:
    names = {g.name for g in cat.gpus}
    for o in cat.instances:
        assert o.gpu in names, (o.instance_type, o.gpu)
        g = cat.gpu(o.gpu)
        assert g.vendor == o.gpu_vendor, o.instance_type
        assert o.gpu_memory_gib == pytest.approx(g.memory_gib), o.instance_type
        # GB200 VMs are 4-GPU slices of an NVL72 rack (GCP A4X, Azure ND GB200 v6); every other row is 8 GPUs.
        assert o.gpus_per_node == (4 if o.gpu == "GB200" else 8), o.instance_type


def test_gpu_aliases(cat) -> None:
    seen: dict[str, str] = {}
    for g in cat.gpus:
        for key in [g.name, *g.aliases]:
            k = key.lower()
            assert k not in seen or seen[k] == g.name, (key, seen.get(k), g.name)
            seen[k] = g.name
    assert cat.gpu("A100").name == "A100-40GB"
    assert cat.gpu("a100-80g").name == "A100-80GB"
    assert cat.gpu("H100-SXM").name == "H100"
    assert cat.gpu("h100-80gb").name == "H100"
    assert cat.gpu("nope") is None
    h100 = cat.gpu("H100")
    assert (h100.bf16_dense_tflops, h100.server_power_kw) == (989.4, 10.2)
    assert cat.gpu("A100-40GB").fp8_dense_tflops is None
    assert cat.gpu("MI300X").vendor == "amd"


def test_lookups_by_gpu_and_region(cat) -> None:
    h200 = {(o.cloud, o.instance_type) for o in cat.instances_for(gpu="H200")}
    assert h200 == {
        ("aws", "p5e.48xlarge"),
        ("aws", "p5en.48xlarge"),
        ("gcp", "a3-ultragpu-8g"),
        ("azure", "Standard_ND96isr_H200_v5"),
    }
    assert cat.instance("aws", "P5.48XLARGE").price("us-east-1") == 55.04
    assert cat.instance("aws", "p5.48xlarge").price("sa-east-1") is None
    assert "us-east-1" in cat.regions("aws")
    assert "us-east-1a" in cat.zones("aws", "us-east-1")


# --------------------------------------------------------------------------------------------- filesystems


def _fs(cat, cloud, kind, tier):
    [fs] = [f for f in cat.filesystems_for(cloud, kind) if f.tier == tier]
    return fs


def test_fsx_lustre_size_rules(cat) -> None:
    for tier in ("PERSISTENT_2", "SCRATCH_2"):
        fs = _fs(cat, "aws", "fsx-lustre", tier)
        assert fs.allows_size(1200)
        assert fs.allows_size(2400)
        assert not fs.allows_size(3600)
        assert fs.allows_size(4800)
        assert not fs.allows_size(1000)
        assert not fs.allows_size(fs.max_gib + 2400)
        assert fs.nearest_sizes(3600) == [4800, 7200, 9600]
        assert fs.nearest_sizes(1000) == [1200, 2400, 4800]
        assert fs.nearest_sizes(1300) == [2400, 4800, 7200]
        assert fs.nearest_sizes(10**7) == [fs.max_gib]
    p2 = _fs(cat, "aws", "fsx-lustre", "PERSISTENT_2")
    assert p2.throughput_mbps_per_tib == (125, 250, 500, 1000)
    assert p2.throughput_for(None) == 125 and p2.throughput_for(500) == 500 and p2.throughput_for(300) is None
    assert _fs(cat, "aws", "fsx-lustre", "SCRATCH_2").throughput_for(None) == 200


def test_other_size_rules(cat) -> None:
    zonal = _fs(cat, "gcp", "filestore", "ZONAL")
    assert zonal.allows_size(1024) and zonal.allows_size(9984) and zonal.allows_size(10240)
    assert zonal.allows_size(12800) and not zonal.allows_size(10000) and not zonal.allows_size(11000)
    assert zonal.nearest_sizes(9900) == [9984, 10240, 12800]
    ml = _fs(cat, "gcp", "managed-lustre", "1000")
    assert ml.allows_size(9000) and ml.allows_size(18000) and not ml.allows_size(13500)
    ps = _fs(cat, "gcp", "parallelstore", "SCRATCH")
    # parallelstore v1 Instance.capacityGib: 12000-100000 in multiples of 4000 (GiB, not TiB x 1024).
    assert ps.allows_size(12000) and ps.allows_size(100000) and not ps.allows_size(14000)
    assert not ps.allows_size(12 * 1024) and not ps.allows_size(100 * 1024)
    amlfs = _fs(cat, "azure", "amlfs", "AMLFS-Durable-Premium-250")
    assert amlfs.nearest_sizes(10000) == [16384, 24576, 32768]


def test_filesystem_rows_are_consistent(cat) -> None:
    kinds = {(f.cloud, f.kind) for f in cat.filesystems}
    assert kinds >= {
        ("aws", "fsx-lustre"),
        ("gcp", "filestore"),
        ("gcp", "managed-lustre"),
        ("gcp", "parallelstore"),
        ("azure", "amlfs"),
        ("azure", "netapp"),
        ("alibaba", "cpfs"),
        ("alibaba", "cpfs-lingjun"),
        ("alibaba", "nas"),
        ("alibaba", "nas-extreme"),
    }
    for f in cat.filesystems:
        assert all(s < f.min_gib for s in f.fixed_sizes_gib), f.tier
        assert list(f.fixed_sizes_gib) == sorted(f.fixed_sizes_gib), f.tier
        assert f.allows_size(f.min_gib), f.tier
        assert list(f.throughput_mbps_per_tib) == sorted(f.throughput_mbps_per_tib), f.tier
        if f.throughput_mbps_per_tib:
            assert f.baseline_mbps_per_tib is None, f.tier
    tiers = {f.tier: f.baseline_mbps_per_tib for f in cat.filesystems_for("gcp", "managed-lustre")}
    assert tiers == {"1000": 1000, "500": 500, "250": 250, "125": 125}


# --------------------------------------------------------------------------------------------- AWS vs moto


@cache
def _moto_dir() -> Path:
    import moto

    return Path(moto.__file__).parent / "ec2" / "resources"


@cache
def _moto_types() -> dict:
    with gzip.open(_moto_dir() / "instance_types.json.gz") as fh:
        return json.load(fh)


@cache
def _moto_zones(instance_types: frozenset[str]) -> dict[str, dict[str, list[str]]]:
    out: dict[str, dict[str, list[str]]] = {t: {} for t in instance_types}
    for path in sorted((_moto_dir() / "instance_type_offerings" / "availability-zone").glob("*.json.gz")):
        region = path.name[: -len(".json.gz")]
        with gzip.open(path) as fh:
            for row in json.load(fh):
                if row["InstanceType"] in out:
                    out[row["InstanceType"]].setdefault(region, []).append(row["Location"])
    return {t: {r: sorted(z) for r, z in regions.items()} for t, regions in out.items()}


def test_aws_rows_match_moto_instance_types(cat) -> None:
    types = _moto_types()
    for o in cat.instances_for(cloud="aws"):
        d = types[o.instance_type]
        [gpu] = d["GpuInfo"]["Gpus"]
        assert o.gpus_per_node == gpu["Count"], o.instance_type
        assert o.gpu_memory_gib * 1024 == gpu["MemoryInfo"]["SizeInMiB"], o.instance_type
        assert o.gpu == MOTO_GPU[(gpu["Name"], gpu["MemoryInfo"]["SizeInMiB"])], o.instance_type
        assert o.vcpus == d["VCpuInfo"]["DefaultVCpus"], o.instance_type
        assert o.memory_gib * 1024 == d["MemoryInfo"]["SizeInMiB"], o.instance_type
        net = d["NetworkInfo"]
        assert o.fabric == "efa"
        assert o.fabric_interfaces == net["EfaInfo"]["MaximumEfaInterfaces"], o.instance_type
        assert o.network_cards == net["MaximumNetworkCards"], o.instance_type
        storage = d["InstanceStorageInfo"]
        assert o.local_nvme_disks == storage["Disks"][0]["Count"], o.instance_type
        assert o.local_nvme_gib == pytest.approx(storage["TotalSizeInGB"] * 1e9 / 2**30, abs=0.1), o.instance_type
        usage = set(d["SupportedUsageClasses"])
        sold = set(o.consumption) - {"reservation"}
        assert sold <= usage, (o.instance_type, sold - usage)


def test_aws_hard_values(cat) -> None:
    """Pinned figures, so a wrong moto upgrade or a wrong edit shows up as a diff, not silently."""
    p5 = cat.instance("aws", "p5.48xlarge")
    assert (p5.vcpus, p5.memory_gib, p5.fabric_interfaces, p5.network_cards) == (192, 2048, 32, 32)
    p5en = cat.instance("aws", "p5en.48xlarge")
    assert (p5en.gpu, p5en.fabric_interfaces, p5en.network_cards) == ("H200", 16, 16)
    p4d = cat.instance("aws", "p4d.24xlarge")
    assert (p4d.gpu, p4d.vcpus, p4d.memory_gib, p4d.fabric_interfaces) == ("A100-40GB", 96, 1152, 4)
    assert cat.instance("aws", "p4de.24xlarge").gpu == "A100-80GB"


def test_aws_zones_match_moto_offerings(cat) -> None:
    rows = cat.instances_for(cloud="aws")
    moto_zones = _moto_zones(frozenset(o.instance_type for o in rows))
    for o in rows:
        ours = {region: list(offer.zones) for region, offer in o.regions.items()}
        assert ours == moto_zones[o.instance_type], o.instance_type
    assert cat.instance("aws", "p5.48xlarge").regions["us-east-1"].zones == tuple(f"us-east-1{c}" for c in "abcdef")


def test_newer_generations_are_rows_with_their_hosts_and_consumption(cat) -> None:
    """Issue 15.6: GCP A4 / A4X and Azure ND GB200 v6 exist as rows; Grace hosts are marked arm64."""
    a4 = cat.instance("gcp", "a4-highgpu-8g")
    assert (a4.gpu, a4.vcpus, a4.memory_gib, a4.host_nics, a4.cpu_arch) == ("B200", 224, 3968, 2, "x86_64")
    assert set(a4.consumption) == {"spot", "reservation", "flex-start"}  # GCP sells no on-demand A4
    assert all(r.price_per_hour_usd is None for r in a4.regions.values())
    a4x = cat.instance("gcp", "a4x-highgpu-4g")
    gb200 = cat.instance("azure", "Standard_ND128isr_NDR_GB200_v6")
    assert {a4x.cpu_arch, gb200.cpu_arch} == {"arm64"}
    arm = [o.instance_type for o in cat.instances if o.cpu_arch != "x86_64"]
    assert arm == [a4x.instance_type, gb200.instance_type]
    b200 = {(o.cloud, o.instance_type) for o in cat.instances_for(gpu="B200")}
    assert b200 == {("aws", "p6-b200.48xlarge"), ("gcp", "a4-highgpu-8g")}
    assert cat.gpu("H800").bf16_dense_tflops == cat.gpu("H100").bf16_dense_tflops
    assert cat.gpu("gb200-nvl72").name == "GB200"


def test_every_gpu_row_states_its_generation_and_nvswitch_with_a_source() -> None:
    """Data quality: the planner and the health check read these facts from the row, never from a default."""
    from provision.catalog.models import GPU_GENERATIONS

    cat = load_catalog()
    for g in cat.gpus:
        assert g.generation in GPU_GENERATIONS, g.name
        assert isinstance(g.nvswitch, bool), g.name
        assert any("generation" in s.covers and "nvswitch" in s.covers for s in g.sources), g.name
    assert {o.gpu for o in cat.instances} <= {g.name for g in cat.gpus}


def test_a_gpu_row_with_an_unknown_or_missing_generation_is_refused_by_name() -> None:
    import pydantic

    from provision.catalog.models import GpuModel

    row = load_catalog().gpu("H100").model_dump()
    with pytest.raises(pydantic.ValidationError, match="gpus.yaml row 'H100': generation 'volta' is not one of"):
        GpuModel.model_validate({**row, "generation": "volta"})
    for field in ("generation", "nvswitch"):
        with pytest.raises(pydantic.ValidationError, match=field):
            GpuModel.model_validate({k: v for k, v in row.items() if k != field})


def test_an_instance_row_naming_a_gpu_gpus_yaml_lacks_is_refused_with_the_row(monkeypatch: pytest.MonkeyPatch) -> None:
    import provision.catalog as catalog

    real = catalog.read_data

    def read(name: str) -> object:
        data = real(name)
        if name == "aws.yaml":
            data["instances"][0]["gpu"] = "L40S"
        return data

    monkeypatch.setattr(catalog, "read_data", read)
    catalog.load_catalog.cache_clear()
    try:
        with pytest.raises(ValueError, match=r"aws.yaml row '[^']+': gpu 'L40S'"):
            catalog.load_catalog()
    finally:
        catalog.load_catalog.cache_clear()


def test_no_spot_price_is_a_copy_of_the_on_demand_price() -> None:
    """A spot figure equal to the on-demand list price is a copy, not a market price: it is null (unknown)."""
    copies = [
        f"{o.cloud} {o.instance_type} {region}"
        for o in load_catalog().instances
        for region, row in o.regions.items()
        if row.spot_price_per_hour_usd is not None and row.spot_price_per_hour_usd == row.price_per_hour_usd
    ]
    assert copies == []


def test_every_spot_price_has_a_dated_source() -> None:
    for o in load_catalog().instances:
        if any(r.spot_price_per_hour_usd is not None for r in o.regions.values()):
            assert any("spot" in s.covers for s in o.sources), (o.cloud, o.instance_type)
