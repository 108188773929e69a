"""PRV-TTL-001: every VM of an ephemeral cluster has a lifetime the cloud enforces.

A cluster with an expiry (the ``provision-expires-at`` tag is a time, not ``never``) must stop
billing at that time even when nobody runs ``down``. What really enforces it, per kind of VM:

* AWS launch templates / instances: ``instanceInitiatedShutdownBehavior: terminate`` plus a
  shutdown timer in the user data (the node powers itself off at the expiry and EC2 deletes it).
* EKS managed node groups: EKS refuses a shutdown behaviour in a node group's launch template
  ("Customizing managed nodes with launch templates", EKS user guide), so the node group's own
  Auto Scaling group gets a scheduled action (``aws:autoscaling/schedule:Schedule``) that sets
  min, max and desired capacity to 0 at the expiry; the ASG then terminates every node
  (PutScheduledUpdateGroupAction, Amazon EC2 Auto Scaling API reference). This is a *graph*
  property: the schedule must name the ASG that EKS created for that node group
  (``resources[0].autoscalingGroups[*].name``; EKS names it ``eks-<nodegroup>-<uuid>``), fire at the
  expiry, once, and scale to exactly 0.
* GCP instance templates / instances: ``scheduling.maxRunDuration`` or ``terminationTime`` with
  ``instanceTerminationAction: DELETE``.
* GKE node pools: a Cloud Scheduler job deletes the pool's cluster at the expiry (``DELETE`` on
  ``https://container.googleapis.com/v1/<cluster id>`` with an OAuth token, a unix-cron schedule at
  the expiry's minute in UTC: ``clouds/gcp/kubeexpiry.py``). A graph property, like EKS. A pool's own
  ``nodeConfig.maxRunDuration`` counts only on flex-start pools: a standard pool re-creates each
  node it deletes with a fresh duration ("The maximum duration for the nodes to exist": GKE API
  reference, NodeConfig), so the duration alone does not end its billing.
* Alibaba instances: ``autoReleaseTime``.
* Azure has no VM lifetime: the nodes delete the cluster's scale sets at the expiry, and a standalone VM
  (the Slurm controller) deletes itself (``clouds/azure/expiry.py``; ``Microsoft.Compute/virtualMachines/delete``).
  A graph property too: an ephemeral scale set needs a user-assigned
  identity, a custom role (in the graph) whose actions include
  ``Microsoft.Compute/virtualMachineScaleSets/delete``, an assignment of that role, and the timer
  (``OnCalendar=``) in its custom data.

* AKS node pools (``ManagedCluster`` system pool, ``AgentPool``): AKS has no node or cluster lifetime and
  its nodes run the AKS image, so a CronJob (``kubernetes:batch/v1:CronJob``) scheduled at the expiry minute
  deletes the managed cluster through a custom role (in the graph) whose actions include
  ``Microsoft.ContainerService/managedClusters/delete``, assigned to someone (``clouds/azure/kubeexpiry.py``).

Because of the EKS case the rule runs over the whole graph (:func:`lifetime_graph`); the Pulumi
policy pack serves it as a ``StackValidationPolicy``. :func:`check_lifetime` is the per-resource
part, which needs nothing but the resource itself.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from provision.clouds.base import TAG_EXPIRES, parse_label_time
from provision.ops.policy_rules import _AWS_VM, _GCP_VM, Context, Resource, _items, tag_field
from provision.spec.secrets import decoded

EKS_NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
ASG_SCHEDULE = "aws:autoscaling/schedule:Schedule"
AWS_LT = "aws:ec2/launchTemplate:LaunchTemplate"
GKE_NODE_POOL = "gcp:container/nodePool:NodePool"
_DURATION = re.compile(r"^([0-9]+)(\.[0-9]{1,9})?s$")


def _expiry(r: Resource) -> str:
    labels = ("nodeConfig", "resourceLabels") if r.type == GKE_NODE_POOL else (tag_field(r.cloud) or "tags",)
    tags = r.get(*labels)
    return str(tags.get(TAG_EXPIRES, "")) if isinstance(tags, Mapping) else ""


def ephemeral(r: Resource) -> bool:
    """The resource carries an expiry (``never`` or no tag: not an ephemeral cluster)."""
    expiry = _expiry(r)
    return bool(expiry) and expiry != "never"


def check_lifetime(r: Resource, ctx: Context) -> list[str]:
    """The part of PRV-TTL-001 one resource shows by itself (EKS node groups need the graph)."""
    if not ephemeral(r):
        return []  # not an ephemeral cluster (or the tag rule reports the missing tag)
    if r.type in _AWS_VM:
        out = []
        if r.get("instanceInitiatedShutdownBehavior") != "terminate":
            out.append("instanceInitiatedShutdownBehavior is not 'terminate': a shutdown only stops the node")
        script = decoded(str(r.get("userData") or r.get("userDataBase64") or ""))  # Instance: either input
        if "OnCalendar=" not in script and not re.search(r"shutdown\s+(-h|-P|--poweroff)", script):
            out.append("the user data sets no shutdown timer at the expiry")
        return out
    if r.type in _GCP_VM:
        sched = r.get("scheduling") or {}
        sched = sched if isinstance(sched, Mapping) else {}
        out = []
        if sched.get("instanceTerminationAction") != "DELETE":
            out.append("scheduling.instanceTerminationAction is not DELETE")
        if not (sched.get("maxRunDuration") or sched.get("terminationTime")):
            out.append("scheduling sets neither maxRunDuration nor terminationTime")
        return out
    if r.type == GKE_NODE_POOL:
        if _flex_run_duration(r):
            return []
        return [
            "no Cloud Scheduler job deletes this pool's cluster at the expiry (and it is no flex-start pool "
            "with a maxRunDuration): the pool's nodes never expire"
        ]
    if r.type == "alicloud:ecs/instance:Instance" and not r.get("autoReleaseTime"):
        return ["autoReleaseTime is not set"]
    return []


# ---------------------------------------------------------------------- EKS: node group + ASG schedule


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        t = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return t.astimezone(timezone.utc) if t.tzinfo else None


def node_group_asgs(group: Resource) -> list[str]:
    """The Auto Scaling group(s) EKS made for ``group`` (its ``resources`` output); [] while unknown."""
    names: list[str] = []
    for res in _items(group.outputs.get("resources")):
        if isinstance(res, Mapping):
            for asg in _items(res.get("autoscalingGroups")):
                if isinstance(asg, Mapping) and isinstance(asg.get("name"), str) and asg["name"]:
                    names.append(asg["name"])
    return names


def _targets(schedule: Resource, group: Resource) -> bool:
    asg = schedule.get("autoscalingGroupName")
    if not isinstance(asg, str) or not asg:
        return False
    known = node_group_asgs(group)
    if known:
        return asg in known
    # Before EKS reports the group (a preview), its ASG name is eks-<nodegroup name>-<uuid>.
    name = group.get("nodeGroupName")
    return isinstance(name, str) and bool(name) and asg.startswith(f"eks-{name}-")


def schedule_problems(schedule: Resource, expiry: datetime) -> list[str]:
    """Why ``schedule`` does not stop every node of its ASG at ``expiry`` ([] when it does)."""
    out = []
    for key in ("minSize", "maxSize", "desiredCapacity"):
        value = _number(schedule.get(key))
        if value != 0:
            out.append(f"{key} is {schedule.get(key)!r}, not 0")
    start = _time(schedule.get("startTime"))
    if start is None:
        out.append(f"startTime {schedule.get('startTime')!r} is not a time")
    elif not (expiry <= start < expiry + timedelta(minutes=1)):  # the tag has minute precision
        out.append(f"startTime {schedule.get('startTime')} is not the expiry {expiry:%Y-%m-%dT%H:%MZ}")
    if schedule.get("recurrence"):
        out.append("it recurs instead of firing once at the expiry")
    end = _time(schedule.get("endTime"))
    if end is not None and start is not None and end <= start:
        out.append("its endTime is not after its startTime")
    return out


def _node_group_problems(group: Resource, schedules: Sequence[Resource]) -> list[str]:
    expiry = parse_label_time(_expiry(group))
    if expiry is None:
        return [f"the expiry tag {_expiry(group)!r} is not a time"]
    mine = [s for s in schedules if _targets(s, group)]
    if not mine:
        return ["no scheduled action scales this node group's Auto Scaling group to 0 at the expiry"]
    found = {s.name: schedule_problems(s, expiry) for s in mine}
    if any(not problems for problems in found.values()):
        return []
    return [f"schedule {name!r}: {'; '.join(problems)}" for name, problems in found.items()]


def _template_ref(group: Resource) -> tuple[str, str]:
    lt = group.get("launchTemplate")
    lt = lt if isinstance(lt, Mapping) else {}
    return str(lt.get("id") or ""), str(lt.get("name") or "")


def _is_template(r: Resource, ref: tuple[str, str]) -> bool:
    lt_id, lt_name = ref
    ids = {r.id, str(r.outputs.get("id") or "")} - {""}
    names = {str(r.get("name") or ""), str(r.outputs.get("name") or "")} - {""}
    return bool(lt_id and lt_id in ids or lt_name and lt_name in names)


AZURE_VMSS = "azure-native:compute:VirtualMachineScaleSet"
AZURE_VM = "azure-native:compute:VirtualMachine"
AZURE_ROLE = "azure-native:authorization:RoleDefinition"
AZURE_ASSIGNMENT = "azure-native:authorization:RoleAssignment"
#: The action the expiry timer needs (Azure resource provider operations, Microsoft.Compute:
#: https://learn.microsoft.com/azure/role-based-access-control/permissions/compute).
VMSS_DELETE = "microsoft.compute/virtualmachinescalesets/delete"
#: The action a standalone VM's timer needs to delete itself (the Slurm controller, ``clouds/azure/slurm.py``).
VM_DELETE = "microsoft.compute/virtualmachines/delete"


def _allows(actions: Any, operation: str) -> bool:
    from fnmatch import fnmatchcase

    return any(isinstance(a, str) and fnmatchcase(operation, a.lower()) for a in _items(actions))


def _azure_vmss_problems(vmss: Resource, resources: Sequence[Resource]) -> list[str]:
    """An ephemeral scale set (its nodes delete it) or standalone VM (it deletes itself): identity, role, timer."""
    vm = vmss.type == AZURE_VM
    what, action = ("VM", VM_DELETE) if vm else ("scale set", VMSS_DELETE)
    shown = "Microsoft.Compute/virtualMachines/delete" if vm else "Microsoft.Compute/virtualMachineScaleSets/delete"
    out = []
    ident = vmss.get("identity", "userAssignedIdentities")
    if not ident:
        out.append(f"the {what} carries no user-assigned identity, so {'it' if vm else 'its nodes'} cannot delete it "
                   "at the expiry")  # fmt: skip
    roles = [
        r
        for r in resources
        if r.type == AZURE_ROLE
        and any(isinstance(p, Mapping) and _allows(p.get("actions"), action) for p in _items(r.get("permissions")))
    ]
    guids = {str(r.get("roleDefinitionId") or r.id or "").rsplit("/", 1)[-1].lower() for r in roles} - {""}
    assigned = [
        a
        for a in resources
        if a.type == AZURE_ASSIGNMENT and str(a.get("roleDefinitionId") or "").rsplit("/", 1)[-1].lower() in guids
    ]
    if not roles:
        out.append(f"no role in the graph may delete {what}s ({shown})")
    elif not assigned:
        out.append(f"the {what} delete role is assigned to nobody")
    profile = ("osProfile",) if vm else ("virtualMachineProfile", "osProfile")
    data = decoded(str(vmss.get(*profile, "customData") or ""))
    if "OnCalendar=" not in data:
        out.append("the custom data sets no timer at the expiry")
    return out


# ---------------------------------------------------------------------- GKE: Cloud Scheduler cluster deletion

SCHEDULER_JOB = "gcp:cloudscheduler/job:Job"
GKE_API = "https://container.googleapis.com/v1/"


def _flex_run_duration(pool: Resource) -> bool:
    """A flex-start pool whose nodes GKE ends after a positive ``maxRunDuration`` (and does not re-create)."""
    run = pool.get("nodeConfig", "maxRunDuration")
    m = _DURATION.match(run) if isinstance(run, str) else None
    return bool(pool.get("nodeConfig", "flexStart")) and m is not None and int(m.group(1)) > 0


def _deletes_cluster(job: Resource, pool: Resource) -> bool:
    target = job.get("httpTarget")
    uri = str(target.get("uri") or "") if isinstance(target, Mapping) else ""
    cluster = str(pool.get("cluster") or "").strip("/")
    if not uri.startswith(GKE_API) or not cluster:
        return False
    path = uri[len(GKE_API) :].strip("/")
    # The pool names its cluster by id (projects/P/locations/L/clusters/C) or by name alone.
    return path == cluster if "/" in cluster else path.startswith("projects/") and path.endswith(f"/clusters/{cluster}")


def _cron_fires_at(schedule: Any, expiry: datetime) -> bool:
    fields = schedule.split() if isinstance(schedule, str) else []
    want = [expiry.minute, expiry.hour, expiry.day, expiry.month]
    return (
        len(fields) == 5
        and fields[4] == "*"
        and all(f.isdigit() and int(f) == w for f, w in zip(fields, want, strict=False))
    )


def job_problems(job: Resource, expiry: datetime) -> list[str]:
    """Why Cloud Scheduler ``job`` does not delete its GKE cluster at ``expiry`` ([] when it does)."""
    out = []
    target = job.get("httpTarget")
    target = target if isinstance(target, Mapping) else {}
    if target.get("httpMethod") != "DELETE":
        out.append(f"httpMethod is {target.get('httpMethod')!r}, not DELETE")
    token = target.get("oauthToken")
    if not (isinstance(token, Mapping) and token.get("serviceAccountEmail")):
        out.append("it sends no OAuth token, so the GKE API refuses it")
    if job.get("timeZone") not in (None, "UTC", "Etc/UTC"):
        out.append(f"timeZone is {job.get('timeZone')!r}, not UTC")
    if not _cron_fires_at(job.get("schedule"), expiry):
        out.append(f"schedule {job.get('schedule')!r} does not fire at the expiry {expiry:%Y-%m-%dT%H:%MZ}")
    if job.get("paused"):
        out.append("it is paused")
    return out


def _gke_pool_problems(pool: Resource, jobs: Sequence[Resource]) -> list[str]:
    if _flex_run_duration(pool):
        return []
    expiry = parse_label_time(_expiry(pool))
    if expiry is None:
        return [f"the expiry tag {_expiry(pool)!r} is not a time"]
    mine = [j for j in jobs if _deletes_cluster(j, pool)]
    if not mine:
        return ["no Cloud Scheduler job deletes this pool's cluster at the expiry: the pool's nodes never expire"]
    found = {j.name: job_problems(j, expiry) for j in mine}
    if any(not problems for problems in found.values()):
        return []
    return [f"job {name!r}: {'; '.join(problems)}" for name, problems in found.items()]


AKS_TYPES = ("azure-native:containerservice:ManagedCluster", "azure-native:containerservice:AgentPool")
K8S_CRONJOB = "kubernetes:batch/v1:CronJob"
AKS_DELETE = "microsoft.containerservice/managedclusters/delete"


def _aks_problems(pool: Resource, resources: Sequence[Resource]) -> list[str]:
    out = []
    roles = [
        r
        for r in resources
        if r.type == AZURE_ROLE
        and any(isinstance(p, Mapping) and _allows(p.get("actions"), AKS_DELETE) for p in _items(r.get("permissions")))
    ]
    guids = {str(r.get("roleDefinitionId") or r.id or "").rsplit("/", 1)[-1].lower() for r in roles} - {""}
    assigned = any(
        a.type == AZURE_ASSIGNMENT and str(a.get("roleDefinitionId") or "").rsplit("/", 1)[-1].lower() in guids
        for a in resources
    )
    if not roles:
        out.append(
            "no role in the graph may delete the AKS cluster (Microsoft.ContainerService/managedClusters/delete)"
        )
    elif not assigned:
        out.append("the AKS cluster delete role is assigned to nobody")
    expiry = parse_label_time(_expiry(pool))
    if expiry is not None:
        cron = f"{expiry.minute} {expiry.hour} {expiry.day} {expiry.month} *"
        jobs = [r for r in resources if r.type == K8S_CRONJOB and r.get("spec", "schedule") == cron]
        if not jobs:
            out.append(f"no CronJob fires at the expiry ({cron} UTC) to delete the cluster")
    return out


def lifetime_graph(resources: Sequence[Resource], ctx: Context) -> list[tuple[Resource, str]]:
    """Every PRV-TTL-001 violation of a graph, as (resource, message).

    EKS node groups are checked against the graph's ASG schedules, GKE pools against its Cloud
    Scheduler jobs; a launch template that an EKS node group uses is covered by that node group (EKS
    forbids the shutdown behaviour in it), so it is not reported on its own.
    """
    schedules = [r for r in resources if r.type == ASG_SCHEDULE]
    jobs = [r for r in resources if r.type == SCHEDULER_JOB]
    groups = [r for r in resources if r.type == EKS_NODE_GROUP]
    eks_templates = {_template_ref(g) for g in groups} - {("", "")}
    out: list[tuple[Resource, str]] = []
    for r in resources:
        if r.type == EKS_NODE_GROUP:
            if ephemeral(r):
                out.extend((r, m) for m in _node_group_problems(r, schedules))
        elif r.type == AWS_LT and any(_is_template(r, ref) for ref in eks_templates):
            continue
        elif r.type == GKE_NODE_POOL:
            if ephemeral(r):
                out.extend((r, m) for m in _gke_pool_problems(r, jobs))
        elif r.type in (AZURE_VMSS, AZURE_VM):
            if ephemeral(r):
                out.extend((r, m) for m in _azure_vmss_problems(r, resources))
        elif r.type in AKS_TYPES:
            if ephemeral(r):
                out.extend((r, m) for m in _aks_problems(r, resources))
        else:
            out.extend((r, m) for m in check_lifetime(r, ctx))
    return out
