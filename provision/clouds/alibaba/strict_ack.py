"""The strict Alibaba cloud's rules for ACK: ``cs.ManagedKubernetes``, ``cs.NodePool`` and ``cs.KubernetesAddon``.

Each rule names its source: the pulumi-alicloud 4.0.0 docstrings (which the provider's schema documents), the
ACK API references and Kubernetes' own rules. :data:`CHECKED` and :data:`WAIVED` tell the coverage account
(:mod:`provision.clouds.alibaba.coverage`) how every input leaf is accounted for.
"""

from __future__ import annotations

import ipaddress
import json
import re
from typing import TYPE_CHECKING, Any

from provision.clouds.strict import Resource, Violation

if TYPE_CHECKING:
    from provision.clouds.mocking import MockContext

CLUSTER = "alicloud:cs/managedKubernetes:ManagedKubernetes"
POOL = "alicloud:cs/nodePool:NodePool"
ADDON = "alicloud:cs/kubernetesAddon:KubernetesAddon"

_SDK = "pulumi-alicloud 4.0.0 cs.{} {} docstring"
_REF = "the id of a resource this program created (an output of the mocked cloud), not a value it writes"
_TEXT = "a name this program composes from the cluster name (checked by its own rule where ACK states one)"
_K8S_LABELS = "kubernetes.io/docs/concepts/overview/working-with-objects/labels (syntax and character set)"
_K8S_TAINTS = "kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration (effects)"
#: ACK CreateCluster ``name``: 1-63 characters of letters, digits, Chinese characters and hyphens, not starting
#: with a hyphen (ACK API reference "CreateCluster", name).
_CLUSTER_NAME = re.compile(r"^[A-Za-z0-9\u4e00-\u9fa5][A-Za-z0-9\u4e00-\u9fa5_-]{0,62}$")
_NAME_SOURCE = "ACK API reference CreateCluster name (1-63 characters; letters, digits, '_', '-'; no leading '-')"
_LABEL_KEY = re.compile(r"^(?:[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(?:[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")
#: ESS CreateScalingConfiguration SystemDisk.Category (the node pool's scaling configuration).
DISK_CATEGORIES = ("cloud", "cloud_efficiency", "cloud_ssd", "cloud_essd", "cloud_auto", "cloud_essd_entry")
#: PL1 ESSD system disks: 20-2048 GiB (cs.NodePool system_disk_size docstring).
ESSD_PL_SIZES = {"PL0": (1, 2048), "PL1": (20, 2048), "PL2": (461, 2048), "PL3": (1261, 2048)}

#: Input path -> (allowed values, source).
ENUMS: dict[tuple[str, str], tuple[tuple[Any, ...], str]] = {
    (CLUSTER, "clusterSpec"): (
        ("ack.standard", "ack.pro.small", "ack.pro.xlarge", "ack.pro.2xlarge"),
        _SDK.format("ManagedKubernetes", "cluster_spec"),
    ),
    (CLUSTER, "proxyMode"): (("iptables", "ipvs", "nftables"), _SDK.format("ManagedKubernetes", "proxy_mode")),
    (POOL, "instanceChargeType"): (("PostPaid", "PrePaid"), _SDK.format("NodePool", "instance_charge_type")),
    (POOL, "spotStrategy"): (
        ("NoSpot", "SpotWithPriceLimit", "SpotAsPriceGo"),
        _SDK.format("NodePool", "spot_strategy"),
    ),
    (POOL, "imageType"): (
        (
            "AliyunLinux",
            "AliyunLinux3",
            "AliyunLinux3Arm64",
            "AliyunLinuxUEFI",
            "CentOS",
            "Windows",
            "WindowsCore",
            "AliyunLinux Qboot",
            "ContainerOS",
            "AliyunLinuxSecurity",
            "Ubuntu",
        ),
        _SDK.format("NodePool", "image_type"),
    ),
    (POOL, "systemDiskCategory"): (DISK_CATEGORIES, "ESS API reference CreateScalingConfiguration SystemDisk.Category"),
    (POOL, "systemDiskPerformanceLevel"): (
        tuple(ESSD_PL_SIZES),
        _SDK.format("NodePool", "system_disk_performance_level"),
    ),
}

CHECKED: dict[str, dict[str, str]] = {
    CLUSTER: {
        **{p: s for (t, p), (_, s) in ENUMS.items() if t == CLUSTER},
        "name": _NAME_SOURCE,
        "nodeCidrMask": _SDK.format("ManagedKubernetes", "node_cidr_mask") + " (24-28)",
        "podCidr": _SDK.format("ManagedKubernetes", "service_cidr") + " (not in the VPC's range)",
        "serviceCidr": _SDK.format("ManagedKubernetes", "service_cidr") + " (not in the VPC's range)",
        "addons[].name": "ACK add-on names (cs.ManagedKubernetes addons; the mocked ACK knows the ones used here)",
        "vswitchIds": "the control plane's vSwitches: registered vSwitches of this stack (mocked ACK)",
    },
    POOL: {
        **{p: s for (t, p), (_, s) in ENUMS.items() if t == POOL},
        "desiredSize": _SDK.format("NodePool", "desired_size") + " (a count of nodes, 0-1000)",
        "systemDiskSize": _SDK.format("NodePool", "system_disk_size"),
        "labels[].key": _K8S_LABELS,
        "labels[].value": _K8S_LABELS,
        "taints[].key": _K8S_LABELS,
        "taints[].value": _K8S_LABELS,
        "taints[].effect": _K8S_TAINTS,
        "keyName": _SDK.format("NodePool", "kms_encrypted_password")
        + " ('You have to specify one of password key_name kms_encrypted_password')",
        "instanceTypes": "one instance type the catalog lists (provision/catalog), checked at plan time",
        "vswitchIds": "registered vSwitches of this stack (mocked ACK)",
    },
    ADDON: {
        "name": "ACK add-on names (cs.KubernetesAddon name; the mocked ACK knows the ones used here)",
        "config": "ACK 'Use eRDMA to accelerate container networks in ACK clusters' (preferDriver; JSON object)",
    },
}
WAIVED: dict[str, dict[str, str]] = {
    CLUSTER: {
        "securityGroupId": _REF,
        "newNatGateway": "a switch (ACK's own NAT gateway off: the VPC has provision's)",
        "slbInternetEnabled": "a switch (the public API endpoint)",
        "deletionProtection": "a switch (off: `down` deletes the cluster)",
        "version": "checked at plan time against the full ACK version pattern (clouds/alibaba/kubeplan.py)",
    },
    POOL: {
        "clusterId": _REF,
        "deploymentSetId": _REF,
        "nodePoolName": _TEXT,
        "installCloudMonitor": "a switch",
    },
    ADDON: {"clusterId": _REF},
}
#: Add-ons the mocked ACK knows (ACK component names; anything else is refused as unknown).
KNOWN_ADDONS = ("flannel", "terway-eniip", "csi-plugin", "csi-provisioner", "ack-erdma-controller")


def _enum_rules(res: Resource) -> list[Violation]:
    out = []
    for (t, path), (values, source) in ENUMS.items():
        if t == res.type and path in res.inputs and res.inputs[path] not in values:
            out.append(res.violation(path, res.inputs[path], f"must be one of {', '.join(values)}", source))
    return out


def _cidr(value: Any) -> ipaddress.IPv4Network | None:
    try:
        return ipaddress.IPv4Network(str(value))
    except ValueError:
        return None


def _cluster_rules(res: Resource, ctx: MockContext | None) -> list[Violation]:
    src = CHECKED[CLUSTER]
    out = []
    name = res.inputs.get("name")
    if not (isinstance(name, str) and _CLUSTER_NAME.match(name)):
        out.append(res.violation("name", name, "1-63 letters, digits, '_' or '-', not starting with '-'", src["name"]))
    mask = res.inputs.get("nodeCidrMask")
    if mask is not None and not (isinstance(mask, (int, float)) and 24 <= mask <= 28):
        out.append(res.violation("nodeCidrMask", mask, "24-28 is allowed", src["nodeCidrMask"]))
    for addon in res.inputs.get("addons") or []:
        if isinstance(addon, dict) and addon.get("name") not in KNOWN_ADDONS:
            out.append(res.violation("addons[].name", addon.get("name"), "is not an ACK add-on", src["addons[].name"]))
    vpcs = []
    if ctx is not None:
        switches = {r.id: r for r in ctx.ledger if r.type == "alicloud:vpc/switch:Switch"}
        for sw in res.inputs.get("vswitchIds") or []:
            if sw not in switches:
                out.append(res.violation("vswitchIds", sw, "is not a vSwitch of this stack", src["vswitchIds"]))
        nets = {r.id: r for r in ctx.ledger if r.type == "alicloud:vpc/network:Network"}
        vpcs = [
            _cidr(nets[s.inputs["vpcId"]].inputs.get("cidrBlock"))
            for s in switches.values()
            if s.inputs.get("vpcId") in nets
        ]
    ranges = {k: _cidr(res.inputs.get(k)) for k in ("podCidr", "serviceCidr") if res.inputs.get(k) is not None}
    for key, net in ranges.items():
        if net is None:
            out.append(res.violation(key, res.inputs.get(key), "is not an IPv4 CIDR block", src[key]))
        elif any(v is not None and v.overlaps(net) for v in vpcs):
            out.append(res.violation(key, str(net), "overlaps the VPC's range", src[key]))
    pods, services = ranges.get("podCidr"), ranges.get("serviceCidr")
    if pods is not None and services is not None and pods.overlaps(services):
        out.append(
            res.violation("serviceCidr", str(ranges["serviceCidr"]), "overlaps the pod range", src["serviceCidr"])
        )
    return out


def _pool_rules(res: Resource, ctx: MockContext | None) -> list[Violation]:
    src = CHECKED[POOL]
    out = []
    size = res.inputs.get("desiredSize")
    if size is not None and not (str(size).isdigit() and 0 <= int(str(size)) <= 1000):
        out.append(res.violation("desiredSize", size, "a number of nodes, 0-1000", src["desiredSize"]))
    level = res.inputs.get("systemDiskPerformanceLevel") or "PL1"
    disk = res.inputs.get("systemDiskSize")
    if res.inputs.get("systemDiskCategory") == "cloud_essd" and disk is not None and level in ESSD_PL_SIZES:
        lo, hi = ESSD_PL_SIZES[level]
        if not lo <= disk <= hi:
            out.append(
                res.violation("systemDiskSize", disk, f"{level} ESSD takes {lo}-{hi} GiB", src["systemDiskSize"])
            )
    for label in res.inputs.get("labels") or []:
        key, value = str(label.get("key", "")), str(label.get("value", ""))
        if not _LABEL_KEY.match(key) or not _LABEL_VALUE.match(value):
            out.append(res.violation("labels[].key", f"{key}={value}", "not a Kubernetes label", src["labels[].key"]))
    for taint in res.inputs.get("taints") or []:
        if taint.get("effect") not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            out.append(
                res.violation("taints[].effect", taint.get("effect"), "not a taint effect", src["taints[].effect"])
            )
        if not _LABEL_KEY.match(str(taint.get("key", ""))) or not _LABEL_VALUE.match(str(taint.get("value", ""))):
            out.append(res.violation("taints[].key", taint.get("key"), "not a Kubernetes taint", src["taints[].key"]))
    if not any(res.inputs.get(k) for k in ("keyName", "password", "kmsEncryptedPassword")):
        out.append(
            res.violation(
                "keyName", None, "a node pool needs key_name, password or kms_encrypted_password", src["keyName"]
            )
        )
    if ctx is not None:
        switches = {r.id for r in ctx.ledger if r.type == "alicloud:vpc/switch:Switch"}
        for sw in res.inputs.get("vswitchIds") or []:
            if sw not in switches:
                out.append(res.violation("vswitchIds", sw, "is not a vSwitch of this stack", src["vswitchIds"]))
    return out


def _addon_rules(res: Resource) -> list[Violation]:
    src = CHECKED[ADDON]
    out = []
    if res.inputs.get("name") not in KNOWN_ADDONS:
        out.append(res.violation("name", res.inputs.get("name"), "is not an ACK add-on", src["name"]))
    config = res.inputs.get("config")
    if config is not None:
        try:
            ok = isinstance(json.loads(config), dict)
        except (TypeError, ValueError):
            ok = False
        if not ok:
            out.append(res.violation("config", config, "must be a JSON object", src["config"]))
        elif res.inputs.get("name") == "ack-erdma-controller" and json.loads(config).get("preferDriver") not in (
            None,
            "default",
            "compat",
            "ofed",
        ):
            out.append(res.violation("config", config, "preferDriver is default, compat or ofed", src["config"]))
    return out


def ack_rules(res: Resource, ctx: MockContext | None = None) -> list[Violation]:
    """What ACK refuses in a cluster, node pool or add-on registration."""
    if res.type not in CHECKED:
        return []
    out = _enum_rules(res)
    if res.type == CLUSTER:
        out += _cluster_rules(res, ctx)
    elif res.type == POOL:
        out += _pool_rules(res, ctx)
    else:
        out += _addon_rules(res)
    return out
