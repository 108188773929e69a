"""Strict GCP: inputs checked against Google's discovery documents and documented limits.

* **Model rules** come from ``data/strict.json``, generated from the discovery documents of compute
  v1, file v1, parallelstore v1 and servicenetworking v1 (:mod:`provision.clouds.gcp.strict_data`):
  enums, name patterns, and the numeric rules each field's description states (Parallelstore
  ``capacityGib`` 12,000-100,000 in multiples of 4,000, network MTU 1,300-8,896, firewall priority).
  A Pulumi input maps onto the API schema by name, with the aliases in :data:`APIS` where
  pulumi-gcp renames or flattens a field.
* **Not in a discovery document** (the Managed Lustre API ships none in google-api-python-client
  2.202.0): Managed Lustre tiers from the pulumi-gcp 10.2 docstrings and Google's "Performance
  tiers" table; Filestore capacities per tier from Google's service-tier pages; label rules.
* **Networks** (:mod:`provision.clouds.gcp.strict_network`): a subnet, firewall rule, router or private-services
  range names a network that exists (this program's or a referenced stack's), subnet ranges are unique in their
  network, and a VPC_PEERING range is internal, sized and RFC 1918.
* **Mocks never model**: autonamed physical names (logical name + ``-`` + 7 hex) against the
  RFC 1035 1-63 rule, and the private-services connection whose default deletion policy makes
  teardown fail while producers still use it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from provision.clouds.gcp.strict_datalink import datalink_rules
from provision.clouds.gcp.strict_network import network_rules
from provision.clouds.gcp.strict_provider import provider_rules
from provision.clouds.strict import Resource, Violation, check_enum, check_range, values_at

if TYPE_CHECKING:
    from provision.clouds.mocking import MockContext

DATA = Path(__file__).resolve().parent / "data" / "strict.json"


@dataclass(frozen=True)
class Api:
    """The API schema a Pulumi resource creates and how its inputs map onto it.

    Attributes:
        doc: discovery document (``compute.v1``).
        schema: the request body schema.
        aliases: Pulumi input path (``[]`` for list items) -> API path, where names differ; a value
            of ``""`` means the input has no API counterpart to check.
        autoname: the input Pulumi autonames when absent (the API's ``name``).
    """

    doc: str
    schema: str
    aliases: Mapping[str, str] = field(default_factory=dict)
    autoname: str | None = "name"


_TEMPLATE = {
    "name": "name",
    "description": "description",
    "labels": "",
    "region": "",
    "project": "",
    "disks[].diskSizeGb": "properties.disks[].initializeParams.diskSizeGb",
    "disks[].diskType": "properties.disks[].initializeParams.diskType",
    "disks[].sourceImage": "properties.disks[].initializeParams.sourceImage",
    "disks[].labels": "",
    "reservationAffinity.type": "properties.reservationAffinity.consumeReservationType",
    "reservationAffinity.specificReservation.key": "properties.reservationAffinity.key",
    "reservationAffinity.specificReservation.values[]": "properties.reservationAffinity.values[]",
    "scheduling.maxRunDuration.seconds": "properties.scheduling.maxRunDuration.seconds",
    "serviceAccount": "properties.serviceAccounts[]",
    "metadata": "",
}

#: Pulumi type token -> the API schema it creates.
APIS: dict[str, Api] = {
    "gcp:compute/firewall:Firewall": Api(
        "compute.v1", "Firewall", {"allows[].protocol": "allowed[].IPProtocol", "allows[].ports[]": "allowed[].ports[]"}
    ),
    "gcp:compute/network:Network": Api("compute.v1", "Network", {"routingMode": "routingConfig.routingMode"}),
    "gcp:compute/subnetwork:Subnetwork": Api("compute.v1", "Subnetwork"),
    "gcp:compute/router:Router": Api("compute.v1", "Router"),
    "gcp:compute/routerNat:RouterNat": Api(
        "compute.v1",
        "Router",
        {
            "name": "nats[].name",
            "natIpAllocateOption": "nats[].natIpAllocateOption",
            "sourceSubnetworkIpRangesToNat": "nats[].sourceSubnetworkIpRangesToNat",
            "subnetworks[].sourceIpRangesToNats[]": "nats[].subnetworks[].sourceIpRangesToNat[]",
            "logConfig.filter": "nats[].logConfig.filter",
            "subnetworks[].name": "nats[].subnetworks[].name",
            "router": "",
        },
    ),
    "gcp:compute/globalAddress:GlobalAddress": Api("compute.v1", "Address"),
    "gcp:compute/resourcePolicy:ResourcePolicy": Api("compute.v1", "ResourcePolicy"),
    "gcp:compute/regionInstanceTemplate:RegionInstanceTemplate": Api(
        "compute.v1", "InstanceTemplate", _TEMPLATE | {"*": "properties."}
    ),
    "gcp:compute/instanceTemplate:InstanceTemplate": Api(
        "compute.v1", "InstanceTemplate", _TEMPLATE | {"*": "properties."}
    ),
    # The Slurm controller (clouds/gcp/slurm.py): pulumi-gcp's boot_disk is the API's first attached disk.
    "gcp:compute/instance:Instance": Api(
        "compute.v1",
        "Instance",
        {
            "serviceAccount": "serviceAccounts[]",
            "bootDisk.initializeParams.type": "disks[].initializeParams.diskType",
            "bootDisk.initializeParams.image": "disks[].initializeParams.sourceImage",
            "bootDisk.initializeParams.size": "disks[].initializeParams.diskSizeGb",
            "bootDisk.initializeParams.labels": "",
            "bootDisk.autoDelete": "disks[].autoDelete",
            "metadata": "",
        },
    ),
    "gcp:compute/instanceGroupManager:InstanceGroupManager": Api(
        "compute.v1",
        "InstanceGroupManager",
        {
            "targetSizePolicies[].mode": "targetSizePolicy.mode",
            "updatePolicy.maxSurgeFixed": "updatePolicy.maxSurge.fixed",
            "updatePolicy.maxUnavailableFixed": "updatePolicy.maxUnavailable.fixed",
            "waitForInstancesStatus": "",
        },
    ),
    "gcp:compute/regionInstanceGroupManager:RegionInstanceGroupManager": Api(
        "compute.v1", "InstanceGroupManager", {"targetSizePolicies[].mode": "targetSizePolicy.mode"}
    ),
    "gcp:compute/resizeRequest:ResizeRequest": Api("compute.v1", "InstanceGroupManagerResizeRequest"),
    "gcp:filestore/instance:Instance": Api(
        "file.v1",
        "Instance",
        {"fileShares.capacityGb": "fileShares[].capacityGb", "fileShares.name": "fileShares[].name"},
        autoname=None,
    ),
    "gcp:parallelstore/instance:Instance": Api("parallelstore.v1", "Instance", autoname=None),
    "gcp:servicenetworking/connection:Connection": Api("servicenetworking.v1", "Connection", autoname=None),
    # scheduler: kubernetes (GKE); names are explicit, so no autonaming rule
    "gcp:container/cluster:Cluster": Api(
        "container.v1",
        "Cluster",
        {
            "datapathProvider": "networkConfig.datapathProvider",
            "enableMultiNetworking": "networkConfig.enableMultiNetworking",
            "nodeLocations": "locations",
            "networkingMode": "",
        },
        autoname=None,
    ),
    # pulumi-gcp's nodeConfig is the API's config; its accelerators and sizes are renamed too.
    "gcp:container/nodePool:NodePool": Api(
        "container.v1",
        "NodePool",
        {
            "nodeConfig": "config",
            "nodeConfig.guestAccelerators": "config.accelerators",
            "nodeConfig.guestAccelerators[].type": "config.accelerators[].acceleratorType",
            "nodeConfig.guestAccelerators[].count": "config.accelerators[].acceleratorCount",
            "nodeConfig.metadata": "",
            "nodeCount": "initialNodeCount",
            "nodeLocations": "locations",
            "cluster": "",
        },
        autoname=None,
    ),
    # The GKE expiry job: pulumi-gcp's name is the job id, the API's the full path (checked in job_rules).
    "gcp:cloudscheduler/job:Job": Api("cloudscheduler.v1", "Job", {"name": ""}, autoname=None),
    "gcp:projects/iAMCustomRole:IAMCustomRole": Api(
        "iam.v1", "Role", {"permissions": "includedPermissions", "roleId": ""}, autoname=None
    ),
}

#: Every type this module has rules for (the suite checks each type a program registers is here); the
#: IAM binding carries only a role and a member, which IAM validates against the project at create.
KNOWN = frozenset(APIS) | {
    "gcp:lustre/instance:Instance",
    "gcp:compute/projectMetadataItem:ProjectMetadataItem",  # key and value: strict_provider.provider_rules
    "gcp:serviceaccount/account:Account",
    "gcp:projects/iAMMember:IAMMember",
    "gcp:serviceaccount/iAMMember:IAMMember",  # GKE Workload Identity binding: a role and a member, as above
}

#: RFC 1035 names: the rule compute v1 states for every resource name.
NAME_PATTERN = r"[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?"

#: Label keys and values (Resource Manager "Labels overview": keys 1-63 characters starting with a
#: lowercase letter; keys and values only lowercase letters, digits, ``_`` and ``-``; values up to 63).
LABEL_KEY = r"[a-z][a-z0-9_-]{0,62}"
LABEL_VALUE = r"[a-z0-9_-]{0,63}"
LABEL_SOURCE = "cloud.google.com/resource-manager/docs/labels-overview (requirements for labels)"

#: Managed Lustre capacity per throughput tier: (minimum = step, GiB). Google's "Performance tiers"
#: table (docs.cloud.google.com/managed-lustre/docs/create-instance#performance-tiers), referenced
#: by the pulumi-gcp 10.2 ``lustre.Instance`` docstring, which gives 9,000-7,632,000 GiB overall and
#: valid throughputs 125, 250, 500, 1000.
LUSTRE_TIERS = {1000: 9000, 500: 18000, 250: 36000, 125: 72000}
LUSTRE_MAX_GIB = 7_632_000
LUSTRE_SOURCE = (
    "pulumi-gcp 10.2 lustre.Instance docstring (capacityGib 9000-7632000; perUnitStorageThroughput 125, 250, "
    "500, 1000) and Google's Managed Lustre performance-tiers table (minimum and step per tier)"
)
#: lustre.Instance ``filesystem``: "Must be eight characters or less and can only contain letters and numbers."
LUSTRE_FILESYSTEM = r"[A-Za-z0-9]{1,8}"
#: lustre/parallelstore ``instanceId``: lowercase letters, digits and hyphens, start with a letter,
#: 1-63 characters, end with a letter or digit (pulumi-gcp 10.2 docstrings).
INSTANCE_ID = NAME_PATTERN

#: Filestore capacity per tier in GiB (Google's Filestore service-tier pages; Filestore counts 1 GB as
#: 1024^3 bytes): (ranges of valid sizes).
FILESTORE_TIERS: dict[str, tuple[tuple[int, int], ...]] = {
    "BASIC_HDD": ((1024, 65434),),
    "BASIC_SSD": ((2560, 65434),),
    "ZONAL": ((1024, 9984), (10240, 102400)),
    "REGIONAL": ((1024, 9984), (10240, 102400)),
    "ENTERPRISE": ((1024, 10240),),
}
FILESTORE_SOURCE = "cloud.google.com/filestore/docs/service-tiers (capacity per service tier)"

#: servicenetworking.Connection delete with the default policy fails while producers still use it
#: ("Producer services ... are still using this connection"; hashicorp/terraform-provider-google
#: #16275, #19908, pulumi/pulumi-gcp#3354), and the peering then blocks deleting the network.
PSA_DELETE_POLICIES = ("REMOVE_PEERING", "ABANDON")
PSA_SOURCE = (
    "pulumi-gcp 10.2 servicenetworking.Connection deletion_policy docstring; terraform-provider-google #16275, "
    "#19908; magic-modules #18476"
)

#: Service account ids: "must be 6-30 characters long, and match the regular expression [a-z]([-a-z0-9]*[a-z0-9])"
#: (pulumi-gcp 10.2 serviceaccount.Account docstring; IAM CreateServiceAccount).
ACCOUNT_ID = r"[a-z](?:[-a-z0-9]{4,28}[a-z0-9])"


@cache
def data() -> dict[str, Any]:
    """The generated discovery rules (read once per process: immutable data shipped with provision)."""
    return json.loads(DATA.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def _source(doc: str, schema: str, prop: str, quote: str | None = None) -> str:
    rev = data()["documents"][doc]["revision"]
    text = f"Google discovery document {doc} (revision {rev}) {schema}.{prop}"
    return f'{text}: "{quote}"' if quote else text


def _api_path(api: Api, path: str) -> str | None:
    if path in api.aliases:
        return api.aliases[path] or None
    for alias in sorted(api.aliases, key=len, reverse=True):  # the most specific alias first
        target = api.aliases[alias]
        if alias == "*" or not (path.startswith(alias + ".") or path.startswith(alias + "[]")):
            continue
        return target + path[len(alias) :] if target else None
    prefix = api.aliases.get("*", "")
    return prefix + path


def _resolve(doc: str, schema: str, api_path: str) -> tuple[str, str, dict[str, Any]] | None:
    """(schema, property, rules) at ``api_path`` under ``schema``, following ``$ref``s."""
    schemas = data()["schemas"][doc]
    parts = api_path.split(".")
    for i, part in enumerate(parts):
        name = part.removesuffix("[]")
        props = schemas.get(schema)
        if props is None or name not in props:
            return None
        rules = props[name]
        if i == len(parts) - 1:
            return schema, name, rules
        if "ref" not in rules:
            return None
        schema = rules["ref"]
    return None


def model_rules(res: Resource, api: Api) -> list[Violation]:
    """Enums, name patterns and described numeric limits for every input the schema knows."""
    inputs = dict(res.inputs)
    autonamed = ""
    if api.autoname and not inputs.get(api.autoname):
        inputs[api.autoname], autonamed = res.physical_name(api.autoname)
    out: list[Violation] = []
    for path, value in _leaves(inputs):
        if value is None or isinstance(value, bool):
            continue
        api_path = _api_path(api, path)
        found = _resolve(api.doc, api.schema, api_path) if api_path else None
        if found is None:
            continue
        schema, prop, rules = found
        quote = (rules.get("quotes") or [None])[0]
        src = _source(api.doc, schema, prop, quote)
        field_name = autonamed if autonamed and path == api.autoname else path
        text = str(value)
        if "enum" in rules:
            out += check_enum(res, field_name, text, rules["enum"], src)
        if "pattern" in rules and not re.fullmatch(rules["pattern"], text):
            out.append(res.violation(field_name, value, f"must match {rules['pattern']}", src))
        lo, hi = rules.get("min_length"), rules.get("max_length")
        if (lo is not None and len(text) < lo) or (hi is not None and len(text) > hi):
            out.append(res.violation(field_name, value, f"must be {lo or 0}-{hi} characters (is {len(text)})", src))
        if "min" in rules or "max" in rules:
            out += check_range(res, field_name, value, rules.get("min"), rules.get("max"), src)
        if rules.get("format") == "google-duration" and not re.fullmatch(r"-?\d+(?:\.\d{1,9})?s", text):
            out.append(res.violation(field_name, value, "a duration in seconds with an 's' suffix, e.g. '3600s'", src))
        if "step" in rules:
            try:
                if int(value) % rules["step"]:
                    out.append(res.violation(field_name, value, f"must be a multiple of {rules['step']:,}", src))
            except (TypeError, ValueError):
                out.append(res.violation(field_name, value, "must be a whole number", src))
    return out


def _leaves(value: Any, path: str = "") -> list[tuple[str, Any]]:
    if isinstance(value, Mapping):
        if path.endswith(("labels", "Labels")):
            return []
        return [leaf for k, v in value.items() for leaf in _leaves(v, f"{path}.{k}" if path else str(k))]
    if isinstance(value, (list, tuple)):
        return [leaf for v in value for leaf in _leaves(v, f"{path}[]")]
    return [(path, value)]


def label_rules(res: Resource) -> list[Violation]:
    out = []
    for path in (
        "labels",
        "disks[].labels",
        "bootDisk.initializeParams.labels",
        "resourceLabels",
        "nodeConfig.resourceLabels",
    ):
        for labels in values_at(res.inputs, path):
            if not isinstance(labels, Mapping):
                continue
            for key, value in labels.items():
                if not re.fullmatch(LABEL_KEY, str(key)):
                    out.append(res.violation(f"{path}.{key}", key, f"label keys must match {LABEL_KEY}", LABEL_SOURCE))
                if not re.fullmatch(LABEL_VALUE, str(value)):
                    out.append(
                        res.violation(f"{path}.{key}", value, f"label values must match {LABEL_VALUE}", LABEL_SOURCE)
                    )
    return out


def storage_rules(res: Resource) -> list[Violation]:
    inputs = res.inputs
    out: list[Violation] = []
    if res.type == "gcp:lustre/instance:Instance":
        tput = inputs.get("perUnitStorageThroughput")
        cap = inputs.get("capacityGib")
        try:
            tput_i, cap_i = int(str(tput)), int(str(cap))
        except (TypeError, ValueError):
            return [res.violation("capacityGib", cap, "capacity and throughput must be whole numbers", LUSTRE_SOURCE)]
        step = LUSTRE_TIERS.get(tput_i)
        if step is None:
            out.append(
                res.violation("perUnitStorageThroughput", tput, "must be one of 125, 250, 500, 1000", LUSTRE_SOURCE)
            )
        elif cap_i < step or cap_i % step or cap_i > LUSTRE_MAX_GIB:
            out.append(
                res.violation(
                    "capacityGib",
                    cap,
                    f"at {tput_i} MB/s/TiB: a multiple of {step:,} GiB, at least {step:,} and at "
                    f"most {LUSTRE_MAX_GIB:,}",
                    LUSTRE_SOURCE,
                )
            )
        fs = inputs.get("filesystem")
        if isinstance(fs, str) and not re.fullmatch(LUSTRE_FILESYSTEM, fs):
            out.append(res.violation("filesystem", fs, "at most 8 letters and digits", LUSTRE_SOURCE))
    if res.type in ("gcp:lustre/instance:Instance", "gcp:parallelstore/instance:Instance"):
        iid = inputs.get("instanceId")
        if isinstance(iid, str) and not re.fullmatch(INSTANCE_ID, iid):
            out.append(
                res.violation(
                    "instanceId",
                    iid,
                    "1-63 lowercase letters, digits and hyphens, starting with a letter and ending "
                    "with a letter or digit",
                    f"pulumi-gcp 10.2 {res.type.split(':')[1].split('/')[0]}.Instance instance_id docstring",
                )
            )
    if res.type == "gcp:filestore/instance:Instance":
        tier = inputs.get("tier")
        for cap in values_at(inputs, "fileShares.capacityGb"):
            ranges = FILESTORE_TIERS.get(str(tier))
            try:
                gib = int(cap)
            except (TypeError, ValueError):
                continue
            if ranges and not any(lo <= gib <= hi for lo, hi in ranges):
                shown = " or ".join(f"{lo:,}-{hi:,}" for lo, hi in ranges)
                out.append(res.violation("fileShares.capacityGb", cap, f"{tier} takes {shown} GiB", FILESTORE_SOURCE))
    return out


def teardown_rules(res: Resource) -> list[Violation]:
    if res.type != "gcp:servicenetworking/connection:Connection":
        return []
    policy = res.inputs.get("deletionPolicy") or "DELETE (default)"
    if policy in PSA_DELETE_POLICIES:
        return []
    return [
        res.violation(
            "deletionPolicy",
            policy,
            "teardown fails while producer services (Lustre, Parallelstore) still use the "
            "connection, and the peering then blocks deleting the network; set deletion_policy='REMOVE_PEERING'",
            PSA_SOURCE,
        )
    ]


def account_rules(res: Resource) -> list[Violation]:
    if res.type != "gcp:serviceaccount/account:Account":
        return []
    aid = res.inputs.get("accountId")
    if isinstance(aid, str) and not re.fullmatch(ACCOUNT_ID, aid):
        return [
            res.violation(
                "accountId",
                aid,
                "6-30 characters: lowercase letters, digits, hyphens; start with a letter, end with a letter or digit",
                "pulumi-gcp 10.2 serviceaccount.Account account_id docstring (IAM CreateServiceAccount)",
            )
        ]
    return []


def check(res: Resource, ctx: MockContext) -> list[Violation]:
    """Every rule this cloud knows for one registration."""
    api = APIS.get(res.type)
    out = model_rules(res, api) if api else []
    out += label_rules(res) + storage_rules(res) + teardown_rules(res) + account_rules(res)
    return out + provider_rules(res) + network_rules(res, ctx) + datalink_rules(res)


def model_paths(res: Resource) -> dict[str, str]:
    """Input leaf path -> the discovery-document property whose rules checked it."""
    api = APIS.get(res.type)
    if api is None:
        return {}
    inputs = dict(res.inputs)
    if api.autoname and not inputs.get(api.autoname):
        inputs[api.autoname] = res.physical_name(api.autoname)[0]
    out: dict[str, str] = {}
    for path, value in _leaves(inputs):
        if value is None:
            continue
        api_path = _api_path(api, path)
        found = _resolve(api.doc, api.schema, api_path) if api_path else None
        if found is not None:
            out[path] = _source(api.doc, found[0], found[1])
    return out
