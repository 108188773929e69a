"""GCP preflight against a fake project: what a real project would refuse, found before anything bills."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nodekit import plan_of

from provision.clouds.base import get_adapter
from provision.clouds.gcp.preflight import gcp_preflight, quota_metric

ALL = {
    "compute.googleapis.com",
    "iam.googleapis.com",
    "lustre.googleapis.com",
    "file.googleapis.com",
    "parallelstore.googleapis.com",
    "servicenetworking.googleapis.com",
}


@dataclass
class FakeProject:
    """A GcpAccount with a healthy project unless a test changes a field."""

    services: set[str] = field(default_factory=lambda: set(ALL))
    offered: set[tuple[str, str]] = field(default_factory=set)
    quotas: dict[str, tuple[float, float]] = field(default_factory=dict)
    asked: list[str] = field(default_factory=list)

    def enabled_services(self) -> set[str]:
        return self.services

    def machine_type(self, zone: str, name: str) -> dict[str, Any] | None:
        self.asked.append(f"{zone}/{name}")
        return {"name": name, "zone": zone} if (zone, name) in self.offered else None

    def region_quotas(self, region: str) -> dict[str, tuple[float, float]]:
        return self.quotas


def healthy(plan: Any) -> FakeProject:
    metric = quota_metric(plan)
    return FakeProject(
        offered={(plan.extra.zone, plan.instance_type)},
        quotas={metric: (0.0, 10_000.0)} if metric else {},
    )


def test_a_healthy_project_passes_through_the_adapter_hook() -> None:
    plan = plan_of("gcp-a3-64")
    assert get_adapter("gcp").preflight(plan, healthy(plan)) == []


def test_a_disabled_api_is_named_with_the_command_that_enables_it() -> None:
    plan = plan_of("gcp-a3ultra-64")  # Managed Lustre over private services access
    project = healthy(plan)
    project.services -= {"lustre.googleapis.com", "servicenetworking.googleapis.com"}
    found = {p.value: p for p in gcp_preflight(plan, project)}
    assert set(found) == {"lustre.googleapis.com", "servicenetworking.googleapis.com"}
    assert "gcloud services enable lustre.googleapis.com" in found["lustre.googleapis.com"].fix


def test_a_type_the_zone_does_not_offer_is_refused() -> None:
    plan = plan_of("gcp-a3-64")
    project = healthy(plan)
    project.offered = set()
    (problem,) = gcp_preflight(plan, project)
    assert (problem.path, problem.value) == ("zone", plan.extra.zone) and plan.instance_type in problem.rule
    assert project.asked == [f"{plan.extra.zone}/{plan.instance_type}"]


def test_the_regional_gpu_quota_of_the_family_must_hold_the_cluster() -> None:
    plan = plan_of("gcp-a3-64")  # a3-megagpu-8g on demand, 8 nodes
    assert quota_metric(plan) == "NVIDIA_H100_MEGA_GPUS"
    project = healthy(plan)
    project.quotas = {"NVIDIA_H100_MEGA_GPUS": (8.0, 64.0), "NVIDIA_H100_GPUS": (0.0, 1000.0)}
    (problem,) = gcp_preflight(plan, project)
    assert problem.path == "nodes" and "NVIDIA_H100_MEGA_GPUS" in problem.rule and "72" in problem.fix
    project.quotas = {"NVIDIA_H100_MEGA_GPUS": (0.0, 64.0)}
    assert gcp_preflight(plan, project) == []


def test_spot_counts_against_the_preemptible_metric_and_a_reservation_against_none() -> None:
    plan = plan_of("gcp-a3-64")
    spot = plan.model_copy(update={"capacity": plan.capacity.model_copy(update={"type": "spot"})})
    assert quota_metric(spot) == "PREEMPTIBLE_NVIDIA_H100_MEGA_GPUS"
    assert quota_metric(plan_of("gcp-a3ultra-64")) is None  # reservation: counted when it was reserved


def test_gke_with_a_lifetime_needs_cloud_scheduler_for_its_expiry_job() -> None:
    plan = plan_of("gcp-a3-64-gke")
    assert plan.expires_at is not None
    project = healthy(plan)
    found = {p.value for p in gcp_preflight(plan, project)}
    assert found == {"cloudscheduler.googleapis.com"}
    project.services |= {"cloudscheduler.googleapis.com"}
    assert gcp_preflight(plan, project) == []
