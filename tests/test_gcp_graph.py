"""GCP adapter: the resource graph under the mocked cloud, per machine type and consumption model."""

from __future__ import annotations

import ipaddress
import re
from typing import Any

import pulumi
import pytest
from conftest import FIXED_NOW, preview

from provision.clouds.gcp.adapter import GcpAdapter
from provision.clouds.mocking import CloudMocks
from provision.planning.bootstrap import parse
from provision.spec import load_spec
from provision.spec.errors import SpecError
from provision.testing import install_mocks

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHByb3Zpc2lvbi1leGFtcGxlLWtleS1kby1ub3QtdXNl example"
NETWORK = "gcp:compute/network:Network"
SUBNET = "gcp:compute/subnetwork:Subnetwork"
FIREWALL = "gcp:compute/firewall:Firewall"
TEMPLATE = "gcp:compute/regionInstanceTemplate:RegionInstanceTemplate"
MIG = "gcp:compute/instanceGroupManager:InstanceGroupManager"
RESIZE = "gcp:compute/resizeRequest:ResizeRequest"
POLICY = "gcp:compute/resourcePolicy:ResourcePolicy"
LUSTRE = {"kind": "managed-lustre", "size_gib": 36000, "throughput_mbps_per_tib": 500}


def gspec(**over: Any) -> Any:
    base: dict[str, Any] = {
        "name": "llm-train",
        "cloud": "gcp",
        "region": "us-central1",
        "zone": "us-central1-a",
        "instance_type": "a3-megagpu-8g",
        "nodes": 2,
        "access": {"allowed_cidrs": ["203.0.113.0/24"], "ssh_public_keys": [KEY]},
        "lifetime": {"ttl": "6h"},
        "tags": {"team": "research"},
        "owner": "tester",
        "gcp": {"project": "my-ml-project"},
    }
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            base[key] = {**base[key], **value}
        else:
            base[key] = value
    return load_spec(base)


#: GPUDirect-TCPX is refused on the stock image (no TCPX kernel): a3-highgpu-8g runs pin a TCPX image.
TCPX_IMAGE = {"id": "projects/my-ml-project/global/images/a3high-tcpx-ubuntu2204", "versions": {"os": "ubuntu-22.04"}}


def run(**over: Any) -> Any:
    if over.get("instance_type") == "a3-highgpu-8g" and "image" not in over:
        over["image"] = TCPX_IMAGE
    return preview(gspec(**over))


ULTRA = {"instance_type": "a3-ultragpu-8g", "zone": "us-central1-b", "capacity": {"type": "spot"}}


@pytest.fixture(scope="module")
def mega() -> Any:
    return run(storage={"shared": LUSTRE})


@pytest.fixture(scope="module")
def ultra() -> Any:
    return run(**ULTRA)


# ---------------------------------------------------------------------------- NICs and VPCs


@pytest.mark.parametrize(
    ("over", "nics", "vpcs", "mtu", "types"),
    [
        ({"instance_type": "a3-highgpu-8g"}, 5, 5, 8244, ["GVNIC"] * 5),
        ({}, 9, 9, 8244, ["GVNIC"] * 9),
        (ULTRA, 10, 3, 8896, ["GVNIC"] * 2 + ["MRDMA"] * 8),
        ({"instance_type": "a2-highgpu-8g"}, 1, 1, 8896, ["GVNIC"]),
    ],
)
def test_template_nics_and_vpcs_per_machine_type(
    over: dict[str, Any], nics: int, vpcs: int, mtu: int, types: list[str]
) -> None:
    r = run(**over)
    tmpl = r.one(TEMPLATE).inputs
    assert [n["nicType"] for n in tmpl["networkInterfaces"]] == types
    assert len(r.of_type(NETWORK)) == vpcs
    assert {n.inputs["mtu"] for n in r.of_type(NETWORK)} == {mtu}
    assert all(n.inputs["autoCreateSubnetworks"] is False for n in r.of_type(NETWORK))
    # each NIC sits on its own subnet; TCPX/TCPXO GPU NICs also on their own VPC
    assert len({n["subnetwork"] for n in tmpl["networkInterfaces"]}) == nics
    subnet_links = {s.outputs["selfLink"] for s in r.of_type(SUBNET)}
    assert {n["subnetwork"] for n in tmpl["networkInterfaces"]} == subnet_links
    assert not tmpl.get("guestAccelerators")  # A2/A3 types carry their GPUs


def test_tcpxo_puts_every_gpu_nic_in_its_own_vpc(mega: Any) -> None:
    nets = [n["network"] for n in mega.one(TEMPLATE).inputs["networkInterfaces"]]
    assert len(set(nets)) == 9


def test_no_nic_has_an_external_ip(mega: Any, ultra: Any) -> None:
    for r in (mega, ultra):
        assert all(not n.get("accessConfigs") for n in r.one(TEMPLATE).inputs["networkInterfaces"])
        assert r.one(TEMPLATE).inputs["canIpForward"] is False


def test_roce_vpc_uses_the_zone_profile_and_gets_no_firewall(ultra: Any) -> None:
    roce = [n for n in ultra.of_type(NETWORK) if n.inputs.get("networkProfile")]
    assert len(roce) == 1
    assert roce[0].inputs["networkProfile"] == ("projects/my-ml-project/global/networkProfiles/us-central1-b-vpc-roce")
    assert len([s for s in ultra.of_type(SUBNET) if s.inputs["network"] == roce[0].outputs["id"]]) == 8
    assert not [f for f in ultra.of_type(FIREWALL) if f.inputs["network"] == roce[0].outputs["selfLink"]]


def test_every_ordinary_vpc_allows_traffic_inside_the_cluster(mega: Any) -> None:
    internal = [f for f in mega.of_type(FIREWALL) if f.name.endswith("-internal")]
    assert len(internal) == 9
    for f in internal:
        assert f.inputs["allows"] == [{"protocol": "all"}]
        assert all(ipaddress.ip_network(c).is_private for c in f.inputs["sourceRanges"])


def test_ssh_only_from_allowed_cidrs_and_never_the_world(mega: Any) -> None:
    ssh = [f for f in mega.of_type(FIREWALL) if f.name.endswith("-ssh")]
    assert len(ssh) == 1
    # allowed_cidrs, plus IAP's TCP forwarding range (gcp.allow_iap_ssh, on by default: the private way in)
    assert ssh[0].inputs["sourceRanges"] == ["203.0.113.0/24", "35.235.240.0/20"]
    assert ssh[0].inputs["allows"] == [{"protocol": "tcp", "ports": ["22"]}]
    for f in mega.of_type(FIREWALL):
        assert not {"0.0.0.0/0", "::/0"} & set(f.inputs["sourceRanges"])


def test_without_allowed_cidrs_ssh_comes_only_through_iap_unless_turned_off() -> None:
    closed = run(access={"allowed_cidrs": []}, instance_type="a2-highgpu-8g", gcp={"allow_iap_ssh": False})
    assert not [f for f in closed.of_type(FIREWALL) if f.name.endswith("-ssh")]
    iap = run(access={"allowed_cidrs": []}, instance_type="a2-highgpu-8g")
    (rule,) = [f for f in iap.of_type(FIREWALL) if f.name.endswith("-ssh")]
    assert rule.inputs["sourceRanges"] == ["35.235.240.0/20"]


def test_cloud_nat_serves_the_host_subnet_only(mega: Any) -> None:
    nat = mega.one("gcp:compute/routerNat:RouterNat").inputs
    host = [s for s in mega.of_type(SUBNET) if s.name == "llm-train-subnet-0"][0]
    assert nat["sourceSubnetworkIpRangesToNat"] == "LIST_OF_SUBNETWORKS"
    assert [s["name"] for s in nat["subnetworks"]] == [host.outputs["id"]]
    assert mega.one("gcp:compute/router:Router").inputs["network"] == mega.of_type(NETWORK)[0].outputs["id"]


# ---------------------------------------------------------------------------- placement, allocation, scheduling


def test_a3_uses_a_mig_workload_policy_and_no_template_policy(mega: Any) -> None:
    policy = mega.one(POLICY)
    assert policy.inputs["workloadPolicy"] == {"type": "HIGH_THROUGHPUT"}
    assert mega.one(MIG).inputs["resourcePolicies"] == {"workloadPolicy": policy.outputs["selfLink"]}
    assert "resourcePolicies" not in mega.one(TEMPLATE).inputs


def test_a2_uses_a_compact_placement_policy_without_vm_count() -> None:
    r = run(instance_type="a2-highgpu-8g")
    policy = r.one(POLICY)
    assert policy.inputs["groupPlacementPolicy"] == {"collocation": "COLLOCATED"}
    assert r.one(TEMPLATE).inputs["resourcePolicies"] == policy.outputs["selfLink"]
    assert "resourcePolicies" not in r.one(MIG).inputs


def test_flex_start_is_one_resize_request_on_an_empty_group() -> None:
    r = run(capacity={"type": "flex-start"}, lifetime={"ttl": "4h"}, nodes=4)
    mig, rr = r.one(MIG).inputs, r.one(RESIZE).inputs
    assert mig["targetSize"] == 0 and mig["waitForInstances"] is False
    assert rr["resizeBy"] == 4
    assert rr["requestedRunDuration"] == {"seconds": "14400"}
    assert rr["instanceGroupManager"] == r.one(MIG).outputs["name"]
    sched = r.one(TEMPLATE).inputs["scheduling"]
    assert sched["provisioningModel"] == "FLEX_START"
    assert sched["maxRunDuration"] == {"seconds": 14400}
    assert sched["instanceTerminationAction"] == "DELETE"
    assert r.one(TEMPLATE).inputs["reservationAffinity"] == {"type": "NO_RESERVATION"}
    assert not r.of_type(POLICY)
    assert len(r.outputs["hosts"]) == 4


def test_reservation_bound_a3_ultra_is_created_in_bulk() -> None:
    r = run(**{**ULTRA, "capacity": {"type": "reservation", "reservation": "res-a"}})
    mig = r.one(MIG).inputs
    assert mig["targetSizePolicies"] == [{"mode": "BULK"}]
    assert mig["targetSize"] == 2
    tmpl = r.one(TEMPLATE).inputs
    assert tmpl["scheduling"]["provisioningModel"] == "RESERVATION_BOUND"
    assert tmpl["reservationAffinity"] == {
        "type": "SPECIFIC_RESERVATION",
        "specificReservation": {"key": "compute.googleapis.com/reservation-name", "values": ["res-a"]},
    }


def test_spot_is_preemptible_deleted_on_termination_and_never_restarted(ultra: Any) -> None:
    sched = ultra.one(TEMPLATE).inputs["scheduling"]
    assert sched["provisioningModel"] == "SPOT"
    assert sched["preemptible"] is True
    assert sched["automaticRestart"] is False
    assert sched["instanceTerminationAction"] == "DELETE"


def test_lifetime_is_enforced_by_gcp_at_the_plans_expiry(mega: Any) -> None:
    sched = mega.one(TEMPLATE).inputs["scheduling"]
    assert sched["onHostMaintenance"] == "TERMINATE"
    assert sched["terminationTime"] == "2026-11-29T18:00:00Z"
    assert sched["instanceTerminationAction"] == "DELETE"
    assert mega.outputs["expires_at"] == "2026-11-29T18:00:00Z"


def test_no_lifetime_sets_no_termination() -> None:
    sched = run(lifetime={"ttl": None}, instance_type="a2-highgpu-8g").one(TEMPLATE).inputs["scheduling"]
    assert "terminationTime" not in sched and "instanceTerminationAction" not in sched


def test_resource_count_does_not_grow_with_nodes() -> None:
    small, big = run(nodes=2), run(nodes=64)
    assert len(small.resources) == len(big.resources)
    assert big.one(MIG).inputs["targetSize"] == 64
    assert len(big.outputs["hosts"]) == 64


# ---------------------------------------------------------------------------- guest, identity, labels


def test_guest_hardening_metadata_and_shielded_vm(mega: Any) -> None:
    tmpl = mega.one(TEMPLATE).inputs
    md = tmpl["metadata"]
    assert (md["enable-oslogin"], md["block-project-ssh-keys"], md["serial-port-enable"]) == ("TRUE", "TRUE", "FALSE")
    assert "ssh-keys" not in md
    # The guest agent publishes the host keys as guest attributes, read before the first connection.
    assert md["enable-guest-attributes"] == "TRUE"
    assert tmpl["shieldedInstanceConfig"] == {
        "enableVtpm": True,
        "enableIntegrityMonitoring": True,
        "enableSecureBoot": False,
    }
    # No PEM block but the public host-key block of the host-keys step (cloud-init's console format).
    assert set(re.findall(r"-----BEGIN ([A-Z ]+)-----", md["user-data"])) <= {"SSH HOST KEY KEYS"}
    assert "PRIVATE KEY" not in md["user-data"]
    # OS Login governs access: no key of the spec is installed behind IAM's back (test_cloudfix_gcp).
    assert KEY not in md["user-data"]


def test_nodes_run_as_a_dedicated_service_account_with_minimal_scopes(mega: Any) -> None:
    sa = mega.one("gcp:serviceaccount/account:Account")
    tmpl = mega.one(TEMPLATE).inputs["serviceAccount"]
    assert tmpl["email"] == sa.outputs["email"] == "llm-train-nodes@my-ml-project.iam.gserviceaccount.com"
    assert "compute@developer" not in tmpl["email"]
    assert not [s for s in tmpl["scopes"] if s.endswith("cloud-platform")]
    roles = sorted(m.inputs["role"] for m in mega.of_type("gcp:projects/iAMMember:IAMMember"))
    assert roles == ["roles/logging.logWriter", "roles/monitoring.metricWriter"]


def test_every_labelled_resource_carries_the_cluster_labels(mega: Any) -> None:
    want = {
        "provision-cluster": "llm-train",
        "provision-owner": "tester",
        "provision-expires-at": "20261129t1800z",
        "team": "research",
    }
    labelled = [r for r in mega.resources if r.custom and "labels" in r.inputs]
    assert {r.type for r in labelled} >= {TEMPLATE, "gcp:lustre/instance:Instance"}
    for r in labelled:
        assert want.items() <= r.inputs["labels"].items(), r.name
    assert want.items() <= mega.one(TEMPLATE).inputs["disks"][0]["labels"].items()


def test_boot_disk_is_the_pinned_image() -> None:
    disk = run(instance_type="a2-highgpu-8g").one(TEMPLATE).inputs["disks"][0]
    assert disk["boot"] is True and disk["autoDelete"] is True
    assert disk["sourceImage"].startswith("projects/ubuntu-os-accelerator-images/global/images/")
    assert "/family/" not in disk["sourceImage"]


def test_logical_names_are_stable_and_children_of_the_component(mega: Any) -> None:
    assert [r.type for r in mega.resources if not r.custom] == ["provision:gcp:Cluster"]
    assert all(r.name.startswith("llm-train") for r in mega.resources)
    # names never carry the node count: a resize keeps every URN
    resized = run(nodes=5, storage={"shared": LUSTRE})
    assert sorted(r.name for r in mega.resources) == sorted(r.name for r in resized.resources)


# ---------------------------------------------------------------------------- storage


def test_lustre_over_private_services_access(mega: Any) -> None:
    fs = mega.one("gcp:lustre/instance:Instance").inputs
    addr = mega.one("gcp:compute/globalAddress:GlobalAddress").inputs
    conn = mega.one("gcp:servicenetworking/connection:Connection").inputs
    host = next(r for r in mega.of_type(NETWORK) if r.name.endswith("-net-0")).outputs["id"]
    assert (addr["purpose"], addr["addressType"], addr["network"]) == ("VPC_PEERING", "INTERNAL", host)
    assert conn["service"] == "servicenetworking.googleapis.com"
    assert conn["reservedPeeringRanges"] == [mega.one("gcp:compute/globalAddress:GlobalAddress").outputs["name"]]
    assert fs["network"] == host
    assert (fs["filesystem"], fs["capacityGib"], fs["perUnitStorageThroughput"]) == ("llmtrain", "36000", "500")
    assert fs["location"] == "us-central1-a"
    (rule,) = [f for f in mega.of_type(FIREWALL) if f.name.endswith("-storage")]
    assert rule.inputs["sourceRanges"] == ["10.200.0.0/20"]
    shared = mega.outputs["shared_fs"]
    assert shared["source"] == "10.200.0.2@tcp:/llmtrain"
    assert shared["mount_command"] == (
        "sudo mkdir -p /shared && sudo mount -t lustre -o defaults 10.200.0.2@tcp:/llmtrain /shared"
    )
    # The nodes read the address at boot from project metadata; the template holds only the lookup and fstab tail.
    item = mega.one("gcp:compute/projectMetadataItem:ProjectMetadataItem").inputs
    assert item["value"] == "10.200.0.2@tcp:/llmtrain"
    user_data = mega.one(TEMPLATE).inputs["metadata"]["user-data"]
    assert f"key={item['key']}" in user_data and "' /shared lustre defaults,_netdev 0 0'" in user_data


def test_filestore_mount_is_nfs_without_psa() -> None:
    r = run(storage={"shared": {"kind": "filestore", "tier": "BASIC_SSD", "size_gib": 2560}})
    fs = r.one("gcp:filestore/instance:Instance").inputs
    assert fs["tier"] == "BASIC_SSD" and fs["fileShares"] == {"name": "shared", "capacityGb": 2560}
    assert fs["networks"][0]["connectMode"] == "DIRECT_PEERING"
    assert not r.of_type("gcp:servicenetworking/connection:Connection")
    assert r.outputs["shared_fs"]["mount_command"].endswith("mount -t nfs -o defaults 10.201.0.2:/shared /shared")


def test_parallelstore_gets_psa_and_a_dfuse_mount() -> None:
    r = run(instance_type="a3-highgpu-8g", storage={"shared": {"kind": "parallelstore", "size_gib": 12000}})
    fs = r.one("gcp:parallelstore/instance:Instance").inputs
    assert (fs["capacityGib"], fs["deploymentType"]) == ("12000", "SCRATCH")
    assert r.of_type("gcp:servicenetworking/connection:Connection")
    assert "dfuse -m /shared" in r.outputs["shared_fs"]["mount_command"]
    assert r.outputs["shared_fs"]["access_points"] == ["10.200.0.2", "10.200.0.3", "10.200.0.4"]
    # DAOS servers in the private-services range reach the clients on any TCP port (Parallelstore VPC docs)
    (rule,) = [f for f in r.of_type(FIREWALL) if f.name.endswith("-storage")]
    assert rule.inputs["sourceRanges"] == ["10.200.0.0/20"]
    assert rule.inputs["allows"] == [{"protocol": "tcp"}]


def test_retained_storage_uses_retain_on_delete() -> None:
    from provision.clouds.gcp.storage import resource_options

    plan = GcpAdapter().plan(gspec(storage={"shared": {**LUSTRE, "retain": True}}), now=FIXED_NOW)
    assert resource_options(plan, None).retain_on_delete is True  # type: ignore[arg-type]
    plain = GcpAdapter().plan(gspec(storage={"shared": LUSTRE}), now=FIXED_NOW)
    assert resource_options(plain, None).retain_on_delete is False  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- outputs


def test_hosts_are_the_nodes_internal_dns_names_in_rank_order(mega: Any) -> None:
    hosts = mega.outputs["hosts"]
    assert len(hosts) == 2 and hosts == sorted(hosts)
    assert all(h.startswith("llm-train-") and h.endswith(".us-central1-a.c.my-ml-project.internal") for h in hosts)
    assert mega.outputs["hostfile"] == "".join(f"{h} slots=8\n" for h in hosts)
    assert mega.outputs["head_node"] == hosts[0]
    assert mega.outputs["nccl_env"]["NCCL_FASTRAK_CTRL_DEV"] == "enp0s12"
    assert mega.outputs["fabric"]["kind"] == "tcpxo"
    assert mega.outputs["fabric_manifest"]["nccl_plugin"].endswith("nccl-plugin-gpudirecttcpx-dev:v1.0.14")


def test_project_comes_from_gcp_project_config_when_the_spec_has_none() -> None:
    s = gspec(gcp={"project": None}, instance_type="a2-highgpu-8g")
    r = preview(s, config={"gcp:project": "cfg-project"})
    assert r.one(TEMPLATE).outputs["project"] == "cfg-project"
    assert "project" not in r.one(TEMPLATE).inputs
    (member,) = [m for m in r.of_type("gcp:projects/iAMMember:IAMMember") if m.name.endswith("logwriter")]
    assert member.inputs["project"] == "cfg-project"


# ---------------------------------------------------------------------------- nothing on bad input


def test_bad_spec_creates_no_resource(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[CloudMocks] = []

    class Recording(CloudMocks):
        def __init__(self, *a: Any, **k: Any) -> None:
            super().__init__(*a, **k)
            made.append(self)

    monkeypatch.setattr("provision.engine.mockrun.CloudMocks", Recording)
    with pytest.raises(SpecError):
        run(capacity={"type": "flex-start"}, lifetime={"ttl": None})
    # The program plans (and refuses the spec) before its first resource, as `pulumi up` does.
    assert [m.ledger for m in made] == [[]]


def test_bad_labels_stop_the_build_before_any_resource() -> None:
    from provision.clouds.gcp.components import build

    plan = GcpAdapter().plan(gspec(), now=FIXED_NOW)
    bad = plan.model_copy(update={"tags": {**plan.tags, "provision-owner": "Not Label Safe"}})
    mocks = CloudMocks(region="us-central1")
    pulumi.runtime.settings.ROOT.set(None)
    install_mocks(mocks, project="provision", stack="bad", preview=False)
    with pytest.raises(SpecError):
        build(bad)
    assert mocks.ledger == []


@pytest.mark.parametrize(
    "over",
    [
        {"instance_type": "a3-highgpu-8g", "storage": {"shared": {"kind": "parallelstore", "size_gib": 12000}}},
        {"storage": {"shared": LUSTRE}},
        {**ULTRA, "storage": {"shared": {"kind": "filestore", "tier": "BASIC_SSD", "size_gib": 2560}}},
        {"instance_type": "a2-highgpu-8g"},
    ],
)
def test_user_data_is_valid_bash_for_every_fabric_and_filesystem(over: dict[str, Any]) -> None:
    import subprocess

    user_data = run(**over).one(TEMPLATE).inputs["metadata"]["user-data"]
    assert user_data.startswith("#cloud-config\n")
    for f in parse(user_data)["write_files"]:
        if f["content"].startswith("#!/bin/bash"):
            subprocess.run(["bash", "-n"], input=f["content"], text=True, check=True)


# ---------------------------------------------------------------------------- node setup scripts


def _user_data(**over: Any) -> str:
    return str(run(**over).one(TEMPLATE).inputs["metadata"]["user-data"])


@pytest.mark.parametrize("over", [{}, ULTRA, {"storage": {"shared": LUSTRE}}])
def test_every_google_apt_source_names_its_signing_key(over: dict[str, Any]) -> None:
    # apt refuses an unsigned repository, and under `set -e` that stops the whole bootstrap.
    user_data = _user_data(**over)
    sources = [ln for ln in user_data.splitlines() if ln.lstrip().startswith('echo "deb')]
    google = [ln for ln in sources if "pkg.dev" in ln or "packages.cloud.google.com" in ln]
    assert google
    for line in google:
        assert "signed-by=/etc/apt/keyrings/" in line or "trusted=yes" in line, line
    for line in google:  # the key exists before the source that names it
        for key in ("gcp-ar-repo.gpg", "google-cloud-packages.gpg"):
            if key in line:
                writes = [f"-o /etc/apt/keyrings/{key}", f'-o "$R/etc/apt/keyrings/{key}"']
                first = min(user_data.index(w) for w in writes if w in user_data)
                assert first < user_data.index(line)


def _kernel_guard() -> str:
    from provision.planning.images import images_dir

    text = (images_dir() / "gcp" / "steps" / "tcpxo.sh").read_text(encoding="utf-8")
    (guard,) = [ln.strip() for ln in text.splitlines() if "sort -V" in ln]
    return guard


@pytest.mark.parametrize(
    ("kernel", "patched"), [("5.15.0", False), ("6.8.0", False), ("6.13.0", True), ("6.17.0", True)]
)
def test_dmabuf_source_is_patched_exactly_on_kernels_from_6_13(kernel: str, patched: bool) -> None:
    import subprocess

    script = f"kernel={kernel}\n{_kernel_guard()} echo patch; fi\n"
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout
    assert (out.strip() == "patch") is patched


def test_tcpxo_builds_the_patched_dmabuf_helper_before_loading_it() -> None:
    user_data = _user_data()
    patch, install = user_data.index('MODULE_IMPORT_NS("DMA_BUF")'), user_data.index("dkms install -m dmabuf-import")
    assert user_data.index("linux-headers-$(uname -r)") < patch < install < user_data.index("modprobe import-helper")
    assert "DMABUF_VERSION=1.1" in user_data and "/etc/modules-load.d/provision-dmabuf.conf" in user_data


@pytest.mark.parametrize("over", [{}, {"instance_type": "a3-highgpu-8g"}])
def test_rxdm_gets_the_driver_from_the_container_toolkit_not_the_hosts_libraries(over: dict[str, Any]) -> None:
    user_data = _user_data(**over)
    unit = next(f["content"] for f in parse(user_data)["write_files"] if f["path"].endswith("/rxdm-run"))
    assert "--gpus all" in unit
    # the host's lib directory (its glibc included) must not shadow the container's own libraries
    assert "--volume /usr/lib/x86_64-linux-gnu" not in unit
    assert "--uid" not in unit and "--alsologtostderr" not in unit  # retired in RxDM v1.0.20 (TCPXO)
