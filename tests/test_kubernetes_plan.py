"""scheduler: kubernetes, plan half: GKE, EKS and AKS plans, their costs, their refusals, and the job documents."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import FIXED_NOW, stack_spec

from provision.clouds.base import plan_spec
from provision.clouds.k8s import jobs
from provision.planning.kubernetes import CONTROL_PLANE_HOURLY_USD, SYSTEM_NODE
from provision.spec import load_spec
from provision.spec.errors import SpecError


def variant(stack: str, **changes: Any) -> Any:
    """The spec of ``stack`` with top-level fields replaced (``None`` drops a field)."""
    data = stack_spec(stack).model_dump(exclude_none=True)
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return load_spec(data)


def plan_of(spec: Any) -> Any:
    return plan_spec(spec, now=FIXED_NOW, owner="test")


def problems(spec: Any) -> dict[str, str]:
    with pytest.raises(SpecError) as e:
        plan_of(spec)
    return {p.path: p.rule for p in e.value.problems}


def test_gke_plan_shows_control_plane_gpu_pool_system_pool_and_addons_each_with_a_cost() -> None:
    p = plan_of(stack_spec("gcp-a3-64-gke"))
    k = p.kubernetes
    assert k is not None and k.control_plane.service == "gke" and k.control_plane.location == "us-central1"
    assert (k.gpu_pool.nodes, k.gpu_pool.instance_type, k.gpu_pool.gpus_per_node) == (8, "a3-megagpu-8g", 8)
    assert k.gpu_pool.fabric == "tcpxo" and k.gpu_pool.fabric_devices_per_node == 8
    assert k.gpu_pool.placement.startswith("COMPACT")
    assert (k.system_pool.nodes, k.system_pool.instance_type) == (2, SYSTEM_NODE["gcp"][0])
    names = {a.name: a for a in k.addons}
    assert {"nccl-tcpxo-installer", "nri-device-injector", "lustre-csi", "kubeflow-trainer", "jobset", "kueue"} <= set(
        names
    )
    assert names["kueue"].version and names["kubeflow-trainer"].version  # pinned charts
    # Each part has its price, and the plan's hourly cost adds the cluster's own parts to the nodes.
    system = round(SYSTEM_NODE["gcp"][1] * 2, 4)
    assert k.control_plane.hourly_usd == CONTROL_PLANE_HOURLY_USD["gke"] and k.system_pool.hourly_usd == system
    assert p.cost.scheduler_hourly_usd == pytest.approx(CONTROL_PLANE_HOURLY_USD["gke"] + system)
    parts = p.cost.compute_hourly_usd + p.cost.scheduler_hourly_usd + (p.cost.network_hourly_usd or 0.0)
    assert p.cost.hourly_usd == pytest.approx(parts + (p.cost.storage_hourly_usd or 0.0), abs=1e-3)
    assert k.gpu_pool.hourly_usd == p.cost.compute_hourly_usd
    summary = p.summary()["scheduler"]
    assert summary["kind"] == "kubernetes" and summary["gpu_pool"]["nodes"] == 8 and summary["hourly_usd"]


def test_eks_plan_keeps_the_vm_paths_32_efa_devices_and_prices_the_cluster() -> None:
    p = plan_of(stack_spec("aws-p5-64-eks"))
    k = p.kubernetes
    assert k is not None and k.control_plane.service == "eks" and k.control_plane.version == "1.35"
    assert k.gpu_pool.fabric_devices_per_node == 32 and k.gpu_pool.placement == "cluster placement group"
    assert k.extra.capacity_type == "ON_DEMAND" and not k.extra.lt_instance_type
    assert k.extra.control_plane_zone != p.zone  # EKS needs a second Availability Zone
    assert {"aws-efa-k8s-device-plugin", "nvidia-device-plugin", "aws-fsx-csi-driver"} <= {a.name for a in k.addons}
    assert p.cost.scheduler_hourly_usd == pytest.approx(0.10 + 2 * SYSTEM_NODE["aws"][1])
    # The plan's NCCL env is the one pods see; it is the EFA environment of the VM path.
    assert p.nccl_env["FI_PROVIDER"] == "efa" and k.job.env == p.nccl_env


def test_plain_vm_spec_has_no_scheduler_and_no_scheduler_cost() -> None:
    p = plan_of(stack_spec("gcp-a3-64"))
    assert p.kubernetes is None and p.cost.scheduler_hourly_usd is None
    assert p.summary()["scheduler"] == {"kind": "none"}


def test_gke_refuses_parallelstore_other_types_and_a_version_all_at_once() -> None:
    spec = variant(
        "gcp-a3-64-gke",
        instance_type="a2-ultragpu-8g",
        gpu="A100-80GB",
        scheduler={"kind": "kubernetes", "version": "1.35"},
        storage={"shared": {"kind": "parallelstore", "size_gib": 12000}},
    )
    found = problems(spec)
    assert {"scheduler.kind", "storage.shared.kind", "scheduler.version"} <= set(found)


def test_eks_refuses_an_unreachable_endpoint_an_existing_vpc_an_old_version_and_a_spot_bid() -> None:
    spec = variant(
        "aws-p5-64-eks",
        access={},
        capacity={"type": "spot", "max_price_per_hour_usd": 40},
        scheduler={"kind": "kubernetes", "version": "1.29"},
        aws={"vpc_id": "vpc-0123456789abcdef0", "subnet_id": "subnet-0123456789abcdef0"},
    )
    found = problems(spec)
    assert {"access.allowed_cidrs", "aws.vpc_id", "scheduler.version", "capacity.max_price_per_hour_usd"} <= set(found)
    assert "extended support" in found["scheduler.version"]


def test_scheduler_options_need_kind_kubernetes() -> None:
    with pytest.raises(SpecError) as e:
        variant("gcp-a3-64", scheduler={"version": "1.35"})
    assert any(p.path.startswith("scheduler") for p in e.value.problems)


def test_eks_capacity_block_puts_the_type_in_the_launch_template() -> None:
    spec = variant("aws-p5-64-eks", capacity={"type": "capacity-block", "reservation": "cr-0123456789abcdef0"})
    k = plan_of(spec).kubernetes
    assert k.extra.capacity_type == "CAPACITY_BLOCK" and k.extra.lt_instance_type


def test_gke_flex_start_pool_grows_from_zero_without_compact_placement() -> None:
    spec = variant("gcp-a3-64-gke", capacity={"type": "flex-start"}, lifetime={"ttl": "24h"})
    k = plan_of(spec).kubernetes
    assert (k.gpu_pool.min_nodes, k.gpu_pool.max_nodes) == (0, 8)
    assert k.extra.flex_start and not k.extra.compact
    # Eight nodes: queued provisioning; the pool and the ProvisioningRequest both carry the run duration.
    assert k.extra.queued_provisioning and k.extra.max_run_duration_s == 24 * 3600
    assert k.job.provisioning_class == "queued-provisioning.gke.io"
    assert k.job.provisioning_parameters == {"maxRunDurationSeconds": str(24 * 3600)}
    single = plan_of(variant("gcp-a3-64-gke", gpus=8, capacity={"type": "flex-start"}, lifetime={"ttl": "24h"}))
    assert not single.kubernetes.extra.queued_provisioning and single.kubernetes.extra.max_run_duration_s == 24 * 3600
    assert single.kubernetes.job.provisioning_class is None


# ---------------------------------------------------------------------- job documents


def test_eks_job_requests_every_gpu_and_efa_device_of_each_node_with_the_efa_env() -> None:
    job = plan_of(stack_spec("aws-p5-64-eks")).kubernetes.job
    doc = jobs.train_job(job, name="train-1", script="train.py", args=["--fsdp"])
    trainer = doc["spec"]["trainer"]
    assert trainer["numNodes"] == 8 and trainer["command"] == ["torchrun"] and trainer["args"] == ["train.py", "--fsdp"]
    limits = jobs.requested(doc)
    assert limits["nvidia.com/gpu"] == "8" and limits["vpc.amazonaws.com/efa"] == "32"
    assert trainer["resourcesPerNode"]["requests"] == trainer["resourcesPerNode"]["limits"]
    env = {e["name"]: e["value"] for e in trainer["env"]}
    assert env["FI_PROVIDER"] == "efa"
    assert doc["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "training"


def test_gke_job_names_all_eight_gpu_nics_and_the_nccl_env_uses_the_same_interfaces() -> None:
    import json

    job = plan_of(stack_spec("gcp-a3-64-gke")).kubernetes.job
    doc = jobs.train_job(job, name="train-1", script="train.py")
    assert jobs.requested(doc) == {"nvidia.com/gpu": "8"}
    ifaces = json.loads(jobs.pod_annotations(doc)["networking.gke.io/interfaces"])
    data = [i["interfaceName"] for i in ifaces if i["network"] != "default"]
    assert len(data) == 8 and {i["network"] for i in ifaces} >= {f"gpu-nic-{n}" for n in range(8)}
    env = {e["name"]: e["value"] for e in doc["spec"]["trainer"]["env"]}
    assert env["NCCL_FASTRAK_IFNAME"].split(",") == data and env["NCCL_FASTRAK_CTRL_DEV"] == "eth0"


def test_gke_runtime_runs_rxdm_as_a_native_sidecar_with_its_devices() -> None:
    job = plan_of(stack_spec("gcp-a3-64-gke")).kubernetes.job
    runtime = jobs.training_runtime(job, "llm-train-gke")
    rj = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]
    assert rj["name"] == "node" and rj["template"]["metadata"]["labels"][jobs.ANCESTOR_LABEL] == "trainer"
    pod = rj["template"]["spec"]["template"]
    (sidecar,) = pod["spec"]["initContainers"]
    assert sidecar["name"] == "tcpxo-daemon" and sidecar["restartPolicy"] == "Always"
    devices = pod["metadata"]["annotations"]["devices.gke.io/container.tcpxo-daemon"]
    assert "/dev/dmabuf_import_helper" in devices and devices.count("/dev/nvidia") == 10
    assert {"name": "shared", "mountPath": "/shared"} in pod["spec"]["containers"][0]["volumeMounts"]


def test_job_builder_refuses_bad_names_and_node_counts() -> None:
    job = plan_of(stack_spec("aws-p5-64-eks")).kubernetes.job
    with pytest.raises(ValueError, match="RFC 1035"):
        jobs.train_job(job, name="Train_1", script="t.py")
    with pytest.raises(ValueError, match="between 1 and 8"):
        jobs.train_job(job, name="t", script="t.py", nodes=9)
    assert jobs.train_job(job, name="t", script="t.py", nodes=2)["spec"]["trainer"]["numNodes"] == 2
    assert len(jobs.job_name("a" * 40, FIXED_NOW)) <= 63


def test_shipped_kueue_and_trainer_are_a_pair_kueue_supports() -> None:
    """Kueue's TrainJob integration is built against one Trainer API (images/compat.yaml kueue_trainer)."""
    from provision.clouds.k8s.addons import KUEUE, TRAINER, check_addon_pair

    assert check_addon_pair(KUEUE.version, TRAINER.version) is None
    assert {a.name: a.version for a in plan_of(stack_spec("gcp-a3-64-gke")).kubernetes.addons}["kueue"] == (
        KUEUE.version
    )


@pytest.mark.parametrize(
    ("kueue", "trainer", "says"),
    [
        ("0.14.4", "2.2.0", "not in images/compat.yaml kueue_trainer"),  # the old pin: built for Trainer 2.1
        ("0.17.7", "2.1.0", "supports Kubeflow Trainer 2.2 only, not 2.1.0"),
        ("0.17.7", "2.3.0", "supports Kubeflow Trainer 2.2 only, not 2.3.0"),
    ],
)
def test_a_bump_of_kueue_or_trainer_alone_is_refused(
    kueue: str, trainer: str, says: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataclasses import replace

    from provision.clouds.k8s import addons

    assert says in (addons.check_addon_pair(kueue, trainer) or "")
    monkeypatch.setattr(addons, "KUEUE", replace(addons.KUEUE, version=kueue))
    monkeypatch.setattr(addons, "TRAINER", replace(addons.TRAINER, version=trainer))
    with pytest.raises(RuntimeError, match="kueue_trainer"):
        addons.training_addons()


AKS_STACK = "azure-ndh100-64-aks"


def test_aks_plan_wires_infiniband_gpu_operator_and_lustre_and_prices_the_cluster() -> None:
    p = plan_of(stack_spec(AKS_STACK))
    k = p.kubernetes
    assert k.control_plane.service == "aks" and k.control_plane.hourly_usd == CONTROL_PLANE_HOURLY_USD["aks"]
    assert k.gpu_pool.nodes == 8 and k.gpu_pool.instance_type == "Standard_ND96isr_H100_v5"
    assert k.gpu_pool.name == "gpu" and "proximity placement group" in k.gpu_pool.placement
    assert k.system_pool.instance_type == SYSTEM_NODE["azure"][0] and k.system_pool.nodes == 2
    assert k.hourly_usd == round(CONTROL_PLANE_HOURLY_USD["aks"] + 2 * SYSTEM_NODE["azure"][1], 4)
    names = {a.name for a in k.addons}
    assert {
        "network-operator",
        "gpu-operator",
        "azurelustre-csi-driver",
        "kubeflow-trainer",
        "jobset",
        "kueue",
    } <= names
    # The AKS driver is skipped so the GPU Operator's driver (with nvidia-peermem for GPUDirect RDMA) runs.
    assert k.extra.gpu_driver == "None" and k.extra.os_sku == "Ubuntu2204"
    job = k.job
    assert job.resources == {"nvidia.com/gpu": "8", "rdma/shared_ib": "1"} and job.fabric_devices_per_node == 8
    assert job.queue_quota["rdma/shared_ib"] == "8" and job.shared_claim == "shared"
    # Microsoft's NDv5 NCCL tuning reaches pods; the host-only topology file does not.
    assert job.env["NCCL_IB_QPS_PER_CONNECTION"] == "4" and "NCCL_TOPO_FILE" not in job.env
    assert job.security_context == {"capabilities": {"add": ["IPC_LOCK"]}}
    # No node timer runs on AKS nodes: a CronJob deletes the cluster, and the plan says what stays billing.
    assert k.extra.delete_at_expiry and "CronJob" in (p.lifetime_enforced_by or "")
    assert any("AKSInfinibandSupport" in w for w in p.warnings)
    assert any("lifetime on AKS" in w and "Managed Lustre keep billing" in w for w in p.warnings)
    off = plan_of(variant(AKS_STACK, azure={"delete_at_expiry": False}))
    assert not off.kubernetes.extra.delete_at_expiry and off.lifetime_enforced_by is None


def test_aks_refuses_other_sizes_split_islands_an_unreachable_api_overlapping_ranges_and_a_version_at_once() -> None:
    base = stack_spec(AKS_STACK)
    spec = variant(
        AKS_STACK,
        instance_type="Standard_ND96amsr_A100_v4",
        gpu="A100-80GB",
        access={**base.access.model_dump(exclude_none=True), "allowed_cidrs": []},
        scheduler={"kind": "kubernetes", "version": "1.29"},
        azure={"vnet_cidr": "10.96.0.0/12", "split_islands": True},
    )
    found = problems(spec)
    assert {
        "scheduler.kind",
        "access.allowed_cidrs",
        "scheduler.version",
        "azure.vnet_cidr",
        "azure.split_islands",
    } <= set(found)
    assert "10.96.0.0/16" in found["azure.vnet_cidr"]


def test_aks_gpu_pool_larger_than_one_island_is_refused_with_the_island_rule() -> None:
    found = problems(variant(AKS_STACK, gpus=8 * 120))
    assert "singlePlacementGroup" in found["gpus"]
