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
* GKE node pools: ``nodeConfig.maxRunDuration`` ("The maximum duration for the nodes to exist. If
  unspecified, the nodes can exist indefinitely": GKE API reference, NodeConfig). GKE has no
  termination time for pools, so a node that GKE re-creates (repair, upgrade) gets a fresh
  duration; the reaper stays the backstop for those.
* Alibaba instances: ``autoReleaseTime``.
* Azure has no VM lifetime: the nodes delete the cluster's scale sets at the expiry, and a standalone VM
  (the Slurm controller) deletes itself (``clouds/azure/expiry.py``; ``Microsoft.Compute/virtualMachines/delete``).
  A graph property too: an ephemeral scale set needs a user-assigned
  identity, a custom role (in the graph) whose actions include
  ``Microsoft.Compute/virtualMachineScaleSets/delete``, an assignment of that role, and the timer
  (``OnCalendar=``) in its custom data.

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
        run = r.get("nodeConfig", "maxRunDuration")
        m = _DURATION.match(run) if isinstance(run, str) else None
        if m is None or int(m.group(1)) <= 0:
            return [f"nodeConfig.maxRunDuration is {run!r}: the pool's nodes never expire"]
        return []
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


def lifetime_graph(resources: Sequence[Resource], ctx: Context) -> list[tuple[Resource, str]]:
    """Every PRV-TTL-001 violation of a graph, as (resource, message).

    EKS node groups are checked against the graph's ASG schedules; a launch template that an EKS
    node group uses is covered by that node group (EKS forbids the shutdown behaviour in it), so
    it is not reported on its own.
    """
    schedules = [r for r in resources if r.type == ASG_SCHEDULE]
    groups = [r for r in resources if r.type == EKS_NODE_GROUP]
    eks_templates = {_template_ref(g) for g in groups} - {("", "")}
    out: list[tuple[Resource, str]] = []
    for r in resources:
        if r.type == EKS_NODE_GROUP:
            if ephemeral(r):
                out.extend((r, m) for m in _node_group_problems(r, schedules))
        elif r.type == AWS_LT and any(_is_template(r, ref) for ref in eks_templates):
            continue
        elif r.type in (AZURE_VMSS, AZURE_VM):
            if ephemeral(r):
                out.extend((r, m) for m in _azure_vmss_problems(r, resources))
        else:
            out.extend((r, m) for m in check_lifetime(r, ctx))
    return out
