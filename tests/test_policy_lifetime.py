"""PRV-TTL-001 on managed Kubernetes: what really ends EKS and GKE nodes at the expiry (issue 12.7).

EKS nodes end through a scheduled action on their node group's own Auto Scaling group (min, max,
desired 0 at the expiry); GKE nodes through a Cloud Scheduler job that deletes the cluster at the expiry (flex-start GPU pools also by
their ``maxRunDuration``). Each
mutation breaks the mechanism in a copy of the shipped stack's graph and both ``provision check``'s
evaluator and the policy pack's stack policy must report it on the node group or pool it leaves
running.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from conftest import stack_spec
from test_policy import _pack_stack_reports, canonical

from provision.clouds.base import plan_spec
from provision.ops.policy import evaluate
from provision.ops.policy_lifetime import node_group_asgs
from provision.ops.policy_rules import Context, Resource

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
SCHEDULE = "aws:autoscaling/schedule:Schedule"
POOL = "gcp:container/nodePool:NodePool"
JOB = "gcp:cloudscheduler/job:Job"
AGENT_POOL = "azure-native:containerservice:AgentPool"
CRONJOB = "kubernetes:batch/v1:CronJob"
ROLE = "azure-native:authorization:RoleDefinition"

Edit = Callable[[list[Resource]], None]
#: An AKS cluster's lifetime covers both pools: the system pool inside the cluster and the GPU agent pool.
BOTH_AKS_POOLS = ("-aks-aks", "-aks-gpu")


def _find(graph: list[Resource], type_token: str, name_part: str) -> int:
    return next(i for i, r in enumerate(graph) if r.type == type_token and r.name.endswith(name_part))


def _set(graph: list[Resource], type_token: str, name_part: str, change: Callable[[dict[str, Any]], Any]) -> None:
    i = _find(graph, type_token, name_part)
    inputs = copy.deepcopy(dict(graph[i].inputs))
    change(inputs)
    # The cloud echoes the inputs among the outputs: edit both, keep what only the cloud adds.
    added = {k: v for k, v in graph[i].outputs.items() if k not in graph[i].inputs}
    graph[i] = replace(graph[i], inputs=inputs, outputs={**added, **inputs})


def _drop(graph: list[Resource], type_token: str, name_part: str) -> None:
    del graph[_find(graph, type_token, name_part)]


def _system_asg(graph: list[Resource]) -> str:
    return node_group_asgs(graph[_find(graph, NODE_GROUP, "-system")])[0]


def _wrong_asg(graph: list[Resource]) -> None:
    asg = _system_asg(graph)
    _set(graph, SCHEDULE, "-gpu-expiry", lambda i: i.update(autoscalingGroupName=asg))


def _run_duration_instead_of_job(graph: list[Resource]) -> None:
    """The old GKE mechanism: a run duration on standard pools re-creates their nodes instead of ending them."""
    _drop(graph, JOB, "-expiry-job")
    for part in ("-gpu", "-system"):
        _set(graph, POOL, part, lambda i: i["nodeConfig"].update(maxRunDuration="43200s"))


def _unlinked_template(graph: list[Resource]) -> None:
    _set(graph, NODE_GROUP, "-gpu", lambda i: i["launchTemplate"].update(id="lt-0123456789abcdef0"))


# (case, stack kind, edit, resource left running (name suffix), words of the message)
CASES: list[tuple[str, str, Edit, str | tuple[str, ...], str]] = [
    ("eks-schedule-removed", "eks", lambda g: _drop(g, SCHEDULE, "-gpu-expiry"), "-gpu", "no scheduled action"),
    ("eks-desired-2", "eks", lambda g: _set(g, SCHEDULE, "-gpu-expiry", lambda i: i.update(desiredCapacity=2)), "-gpu", "desiredCapacity is 2"),
    ("eks-max-8", "eks", lambda g: _set(g, SCHEDULE, "-gpu-expiry", lambda i: i.update(maxSize=8.0)), "-gpu", "maxSize is 8.0"),
    ("eks-min-missing", "eks", lambda g: _set(g, SCHEDULE, "-gpu-expiry", lambda i: i.pop("minSize")), "-gpu", "minSize is None"),
    ("eks-wrong-asg", "eks", _wrong_asg, "-gpu", "no scheduled action"),
    ("eks-late", "eks", lambda g: _set(g, SCHEDULE, "-gpu-expiry", lambda i: i.update(startTime="2026-12-30T00:00:00Z")), "-gpu", "is not the expiry"),
    ("eks-garbage-time", "eks", lambda g: _set(g, SCHEDULE, "-gpu-expiry", lambda i: i.update(startTime="soon")), "-gpu", "is not a time"),
    ("eks-recurring", "eks", lambda g: _set(g, SCHEDULE, "-gpu-expiry", lambda i: i.update(recurrence="0 0 * * *")), "-gpu", "recurs"),
    ("eks-system-unscheduled", "eks", lambda g: _drop(g, SCHEDULE, "-system-expiry"), "-system", "no scheduled action"),
    ("eks-template-not-the-groups", "eks", _unlinked_template, "-gpu-nodes", "instanceInitiatedShutdownBehavior"),
    ("gke-job-removed", "gke", lambda g: _drop(g, JOB, "-expiry-job"), "", "never expire"),
    ("gke-run-duration-instead-of-job", "gke", _run_duration_instead_of_job, "", "never expire"),
    ("gke-job-get", "gke", lambda g: _set(g, JOB, "-expiry-job", lambda i: i["httpTarget"].update(httpMethod="GET")), "", "not DELETE"),
    ("gke-job-late", "gke", lambda g: _set(g, JOB, "-expiry-job", lambda i: i.update(schedule="0 0 30 12 *")), "", "does not fire at the expiry"),
    ("gke-job-daily", "gke", lambda g: _set(g, JOB, "-expiry-job", lambda i: i.update(schedule="0 0 * * *")), "", "does not fire at the expiry"),
    ("gke-job-local-time", "gke", lambda g: _set(g, JOB, "-expiry-job", lambda i: i.update(timeZone="America/Chicago")), "", "not UTC"),
    ("gke-job-no-token", "gke", lambda g: _set(g, JOB, "-expiry-job", lambda i: i["httpTarget"].pop("oauthToken")), "", "OAuth"),
    ("gke-job-paused", "gke", lambda g: _set(g, JOB, "-expiry-job", lambda i: i.update(paused=True)), "", "paused"),
    ("gke-job-deletes-a-pool-only", "gke", lambda g: _set(g, JOB, "-expiry-job", lambda i: i["httpTarget"].update(uri=i["httpTarget"]["uri"] + "/nodePools/gpu")), "", "no Cloud Scheduler job"),
    ("gke-job-other-cluster", "gke", lambda g: _set(g, JOB, "-expiry-job", lambda i: i["httpTarget"].update(uri=i["httpTarget"]["uri"] + "-old")), "", "no Cloud Scheduler job"),
    ("aks-no-expiry-job", "aks", lambda g: _drop(g, CRONJOB, "-expiry"), BOTH_AKS_POOLS, "no CronJob fires"),
    ("aks-job-a-day-late", "aks", lambda g: _set(g, CRONJOB, "-expiry", lambda i: i["spec"].update(schedule="0 0 31 12 *")), BOTH_AKS_POOLS, "no CronJob fires"),
    ("aks-role-cannot-delete", "aks", lambda g: _set(g, ROLE, "-aks-expiry-role", lambda i: i.update(permissions=[{"actions": ["Microsoft.ContainerService/managedClusters/read"]}])), BOTH_AKS_POOLS, "may delete the AKS cluster"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "kind", "edit", "running", "words"), CASES, ids=[c[0] for c in CASES])
def test_a_broken_kubernetes_lifetime_is_caught_on_what_it_leaves_running(
    case: str, kind: str, edit: Edit, running: str | tuple[str, ...], words: str
) -> None:
    graph = list(canonical(kind))
    assert [str(v) for v in evaluate(graph, Context())] == []
    edit(graph)
    found = evaluate(graph, Context())
    assert found and {(v.rule.id, v.resource.endswith(running)) for v in found} == {("PRV-TTL-001", True)}, [
        str(v) for v in found
    ]
    assert any(words in v.message for v in found), [v.message for v in found]
    reported = _pack_stack_reports("PRV-TTL-001", graph)
    assert reported and all(m.startswith("PRV-TTL-001: ") for m in reported)
    assert _pack_stack_reports("PRV-TTL-001", list(canonical(kind))) == []


def test_the_schedule_is_matched_by_eks_asg_naming_before_eks_reports_the_group() -> None:
    """In a preview the node group's ASG is unknown: the schedule must still name eks-<group>-..."""
    graph = [replace(r, outputs={}) if r.type == NODE_GROUP else r for r in canonical("eks")]
    assert [str(v) for v in evaluate(graph, Context())] == []
    _wrong_asg_name = "eks-system-00000000-0000-0000-0"
    _set(graph, SCHEDULE, "-gpu-expiry", lambda i: i.update(autoscalingGroupName=_wrong_asg_name))
    assert [v.resource for v in evaluate(graph, Context())] == ["aws-p5-64-eks-gpu"]


def test_no_expiry_needs_no_lifetime() -> None:
    graph = []
    for r in canonical("eks"):
        tags = r.inputs.get("tags")
        if isinstance(tags, dict) and "provision-expires-at" in tags:
            r = replace(r, inputs={**r.inputs, "tags": {**tags, "provision-expires-at": "never"}})
        if r.type != SCHEDULE:
            graph.append(r)
    assert evaluate(graph, Context()) == []


@pytest.mark.parametrize(
    ("stack", "words"),
    [
        ("aws-p5-64-eks", "Auto Scaling group"),
        ("gcp-a3-64-gke", "Cloud Scheduler job deletes the GKE cluster"),
        ("azure-ndh100-64-aks", "CronJob"),
    ],
)
def test_the_plan_names_the_kubernetes_mechanism(stack: str, words: str) -> None:
    plan = plan_spec(stack_spec(stack))
    assert plan.lifetime_enforced_by is not None and words in plan.lifetime_enforced_by


def test_gke_lifetime_is_one_job_deleting_the_cluster_at_the_expiry_not_a_run_duration() -> None:
    """Standard pools carry no run duration (GKE would re-create the nodes); one job deletes the cluster."""
    graph = canonical("gke")
    pools = [r for r in graph if r.type == POOL]
    assert len(pools) == 2 and all("maxRunDuration" not in r.inputs["nodeConfig"] for r in pools)
    (job,) = [r for r in graph if r.type == JOB]
    (cluster,) = [r for r in graph if r.type == "gcp:container/cluster:Cluster"]
    assert job.inputs["httpTarget"]["uri"] == f"https://container.googleapis.com/v1/{cluster.id}"
    assert job.inputs["httpTarget"]["httpMethod"] == "DELETE"
    assert (job.inputs["schedule"], job.inputs["timeZone"]) == ("0 0 30 11 *", "Etc/UTC")  # the expiry, UTC
    email = job.inputs["httpTarget"]["oauthToken"]["serviceAccountEmail"]
    (grant,) = [r.inputs for r in graph if r.type == "gcp:projects/iAMMember:IAMMember" and email in r.inputs["member"]]
    (role,) = [r for r in graph if r.type == "gcp:projects/iAMCustomRole:IAMCustomRole"]
    assert grant["role"] == role.outputs["name"] and role.inputs["permissions"] == ["container.clusters.delete"]


def test_gke_flex_start_gpu_pool_ends_by_its_run_duration_and_the_job_covers_the_rest() -> None:
    from conftest import preview
    from test_kubernetes_plan import variant

    r = preview(variant("gcp-a3-64-gke", capacity={"type": "flex-start"}, lifetime={"ttl": "24h"}))
    graph = [Resource(x.type, x.name, x.inputs, x.outputs, x.id) for x in r.resources if x.custom]
    assert evaluate(graph, Context()) == []
    # Without the job the flex-start GPU pool still ends (GKE does not re-create flex-start nodes); the system
    # pool does not.
    left = [x for x in graph if x.type != JOB]
    assert [v.resource for v in evaluate(left, Context())] == ["llm-train-gke-system"]
