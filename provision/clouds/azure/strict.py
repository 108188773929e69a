"""Strict Azure: REST-spec enums, Microsoft's naming rules, and the network rules ARM enforces.

* **Enums** are read at check time from pulumi-azure-native's input types, which are generated
  from the Azure REST API specifications at the API versions the provider sends: every string
  input whose type names an enum must be one of its values.
* **Documented limits** quoted from the REST specs' descriptions (as pulumi-azure-native carries
  them: scale-set computer name prefix, NetApp pool and volume sizes; ``tests/test_strict_azure.py``
  checks each quote is still in the installed SDK), Microsoft's "Naming rules and restrictions for
  Azure resources", and the Managed Lustre size table.
* **Mocks never model**: a network security group rule mixing IPv4 and IPv6 prefixes, and a Managed
  Lustre subnet whose NSG denies the SSH its servers need among themselves while deploying.
"""

from __future__ import annotations

import enum
import importlib
import inspect
import ipaddress
import re
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from provision.clouds.azure import strict_aks, strict_launch, strict_rbac
from provision.clouds.azure.strict_datalink import hsm_grant_rules
from provision.clouds.strict import NameRule, Resource, Violation, check_enum, values_at, walk

if TYPE_CHECKING:
    from provision.clouds.mocking import MockContext

NAMING = "learn.microsoft.com/azure/azure-resource-manager/management/resource-name-rules"
_STD80 = r"[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,78}[A-Za-z0-9_])?"

#: Pulumi type token -> (name input, rule), from Microsoft's naming rules (entity, length, characters).
NAMES: dict[str, tuple[str, NameRule]] = {
    "azure-native:resources:ResourceGroup": (
        "resourceGroupName",
        NameRule(
            1,
            90,
            r"[-\w.()]*[-\w()]",
            "letters, digits, _ ( ) - and .; not ending in .",
            f"{NAMING} (Microsoft.Resources/resourcegroups)",
        ),
    ),
    "azure-native:network:VirtualNetwork": (
        "virtualNetworkName",
        NameRule(
            2,
            64,
            _STD80,
            "alphanumerics, _ . -; start alphanumeric; end alphanumeric or _",
            f"{NAMING} (Microsoft.Network/virtualNetworks)",
        ),
    ),
    "azure-native:network:Subnet": (
        "subnetName",
        NameRule(
            1,
            80,
            _STD80,
            "alphanumerics, _ . -; start alphanumeric; end alphanumeric or _",
            f"{NAMING} (Microsoft.Network/virtualNetworks/subnets)",
        ),
    ),
    "azure-native:network:NetworkSecurityGroup": (
        "networkSecurityGroupName",
        NameRule(
            1,
            80,
            _STD80,
            "alphanumerics, _ . -; start alphanumeric; end alphanumeric or _",
            f"{NAMING} (Microsoft.Network/networkSecurityGroups)",
        ),
    ),
    "azure-native:network:PublicIPAddress": (
        "publicIpAddressName",
        NameRule(
            1,
            80,
            _STD80,
            "alphanumerics, _ . -; start alphanumeric; end alphanumeric or _",
            f"{NAMING} (Microsoft.Network/publicIPAddresses)",
        ),
    ),
    "azure-native:network:VirtualNetworkPeering": (
        "virtualNetworkPeeringName",
        NameRule(
            1,
            80,
            _STD80,
            "alphanumerics, _ . -; start alphanumeric; end alphanumeric or _",
            f"{NAMING} (Microsoft.Network/virtualNetworks/virtualNetworkPeerings)",
        ),
    ),
    "azure-native:network:NatGateway": (
        "natGatewayName",
        NameRule(
            1,
            80,
            _STD80,
            "alphanumerics, _ . -; start alphanumeric; end alphanumeric or _",
            f"{NAMING} (Microsoft.Network/natGateways)",
        ),
    ),
    "azure-native:compute:ProximityPlacementGroup": (
        "proximityPlacementGroupName",
        NameRule(
            1,
            80,
            _STD80,
            "alphanumerics, _ . -; start alphanumeric; end alphanumeric or _",
            f"{NAMING} (Microsoft.Compute/proximityPlacementGroups)",
        ),
    ),
    "azure-native:compute:VirtualMachineScaleSet": (
        "vmScaleSetName",
        NameRule(
            1,
            64,
            r"(?!_)[^\\/\"\[\]:|<>+=;,?*@&\s]*(?<![.-])",
            'no \\ / " [ ] : | < > + = ; , ? * @ & or spaces; not starting with _; not ending with . or -',
            f"{NAMING} (Microsoft.Compute/virtualMachineScaleSets, Linux)",
        ),
    ),
    "azure-native:compute:VirtualMachine": (
        "vmName",
        NameRule(
            1,
            64,
            r"(?!_)[^\\/\"\[\]:|<>+=;,?*@&\s]*(?<![.-])",
            'no \\ / " [ ] : | < > + = ; , ? * @ & or spaces; not starting with _; not ending with . or -',
            f"{NAMING} (Microsoft.Compute/virtualMachines, Linux)",
        ),
    ),
    "azure-native:network:BastionHost": (
        "bastionHostName",
        NameRule(
            1,
            80,
            _STD80,
            "alphanumerics, _ . -; start alphanumeric; end alphanumeric or _",
            f"{NAMING} (Microsoft.Network/bastionHosts)",
        ),
    ),
    "azure-native:network:NetworkInterface": (
        "networkInterfaceName",
        NameRule(
            1,
            80,
            _STD80,
            "alphanumerics, _ . -; start alphanumeric; end alphanumeric or _",
            f"{NAMING} (Microsoft.Network/networkInterfaces)",
        ),
    ),
    "azure-native:managedidentity:UserAssignedIdentity": (
        "resourceName",
        NameRule(
            3,
            128,
            r"[A-Za-z0-9][A-Za-z0-9_-]{2,127}",
            "alphanumerics, - and _; start alphanumeric",
            f"{NAMING} (Microsoft.ManagedIdentity/userAssignedIdentities)",
        ),
    ),
    "azure-native:storagecache:AmlFilesystem": (
        "amlFilesystemName",
        NameRule(
            2,
            80,
            r"[0-9a-zA-Z][-0-9a-zA-Z_]{0,78}[0-9a-zA-Z]",
            "alphanumerics, - and _; start and end alphanumeric",
            "azure-rest-api-specs storagecache amlfs.json amlFilesystemName pattern",
        ),
    ),
    "azure-native:netapp:Account": (
        "accountName",
        NameRule(
            1,
            128,
            r"[a-zA-Z0-9][a-zA-Z0-9\-_]{0,127}",
            "alphanumerics, - and _; start alphanumeric",
            "azure-rest-api-specs netapp.json accountName pattern",
        ),
    ),
    "azure-native:netapp:CapacityPool": (
        "poolName",
        NameRule(
            1,
            64,
            r"[a-zA-Z0-9][a-zA-Z0-9\-_]{0,63}",
            "alphanumerics, - and _; start alphanumeric",
            "azure-rest-api-specs netapp.json poolName pattern",
        ),
    ),
    "azure-native:netapp:CapacityPoolVolume": (
        "volumeName",
        NameRule(
            1,
            64,
            r"[a-zA-Z][a-zA-Z0-9\-_]{0,63}",
            "letters, digits, - and _; start with a letter",
            "azure-rest-api-specs netapp.json volumeName pattern",
        ),
    ),
}

#: Every azure-native type gets the REST-spec enum rules; these also have name, network or RBAC rules.
KNOWN = frozenset(NAMES) | {strict_rbac.ROLE_DEFINITION, strict_rbac.ROLE_ASSIGNMENT} | strict_aks.KNOWN

#: Limits the REST specs state in prose, quoted as pulumi-azure-native 3.x carries them.
COMPUTER_NAME_PREFIX_QUOTE = "Computer name prefixes must be 1 to 15 characters long."
POOL_SIZE_QUOTE = "Allowed values are in 1TiB chunks (value must be multiple of 1099511627776)."
VOLUME_QUOTE = "For regular volumes, valid values are in the range 50GiB to 100TiB."
LARGE_VOLUME_QUOTE = "from to 2400GiB to 2400TiB"
GIB, TIB = 1 << 30, 1 << 40

#: Azure Managed Lustre SKU -> (minimum, step, maximum) TiB: MicrosoftDocs/azure-stack-docs
#: azure-managed-lustre/create-file-system-portal.md (throughput configurations table).
AMLFS_SIZES = {
    "AMLFS-Durable-Premium-40": (48, 48, 768),
    "AMLFS-Durable-Premium-125": (16, 16, 128),
    "AMLFS-Durable-Premium-250": (8, 8, 128),
    "AMLFS-Durable-Premium-500": (4, 4, 128),
}
AMLFS_SIZE_SOURCE = "MicrosoftDocs/azure-stack-docs azure-managed-lustre/create-file-system-portal.md"
AMLFS_SSH_SOURCE = (
    'MicrosoftDocs/azure-stack-docs azure-managed-lustre/configure-network-security-group.md: "The system also '
    'requires TCP port 22 (SSH) for initial deployment and configuration."'
)
FAMILY_SOURCE = (
    "ARM ResourceCannotContainAddressPrefixesFromDifferentAddressFamilies (hashicorp/terraform-provider-azurerm#12534, "
    "MicrosoftDocs/azure-docs#34567)"
)
#: An enum the REST spec itself retires: "The enum data type is currently deprecated" (VirtualMachine
#: hardwareProfile.vmSize, as pulumi-azure-native carries it; the API takes any size the region sells, which
#: the catalog and the preflight check). Its list stops at older series (no Standard_D4s_v5).
DEPRECATED_ENUMS = {"VirtualMachineSizeTypes": "The enum data type is currently deprecated"}
TAG_IN_LIST_SOURCE = (
    "ARM SecurityRuleParameterContainsUnsupportedValue: '*' and service tags only in the singular field"
)
#: NSG rule priorities: "a number between 100 and 4096 ... must be unique for each rule in the collection"
#: (azure-rest-api-specs network SecurityRulePropertiesFormat.priority; MicrosoftDocs/azure-docs
#: virtual-network/network-security-groups-overview.md "Priority": unique per direction).
PRIORITY_RANGE = (100, 4096)
PRIORITY_SOURCE = (
    'azure-rest-api-specs network SecurityRulePropertiesFormat.priority ("between 100 and 4096", unique in the '
    "collection); virtual-network/network-security-groups-overview.md (Priority)"
)


# ------------------------------------------------------------------ enums from the REST specs


def _type_names(tp: Any, out: list[Any]) -> None:
    if isinstance(tp, typing.ForwardRef):
        out.append(tp.__forward_arg__)
    elif isinstance(tp, (str, type)):
        out.append(tp)
    for arg in getattr(tp, "__args__", None) or ():
        _type_names(arg, out)


class _Schema:
    """Enum and nested input types of one pulumi-azure-native Args class, by engine (camelCase) name."""

    def __init__(self, module: Any, cls: type) -> None:
        self.module = module
        self.enums: dict[str, type[enum.Enum]] = {}
        self.nested: dict[str, type] = {}
        #: Every input property (engine name) the Args class declares.
        self.props: set[str] = set()
        params = inspect.signature(cls).parameters
        for attr in dir(cls):
            prop = getattr(cls, attr, None)
            getter = getattr(prop, "fget", None)
            camel = getattr(getter, "_pulumi_name", None)
            if camel is None or attr not in params:
                continue
            self.props.add(camel)
            names: list[Any] = []
            _type_names(params[attr].annotation, names)
            for name in names:
                found = name if isinstance(name, type) else getattr(module, str(name).split(".")[-1], None)
                if isinstance(found, type) and issubclass(found, enum.Enum):
                    self.enums[camel] = found
                elif isinstance(found, type) and found.__name__.endswith("Args"):
                    self.nested[camel] = found


@cache
def _schema(module: Any, cls: type) -> _Schema:
    """The enum map of one Args class (generated SDK code: immutable, built once per process)."""
    return _Schema(module, cls)


def _args_class(res_type: str) -> tuple[Any, type] | None:
    """(module, Args class) for ``azure-native:<module>:<Resource>``."""
    try:
        _, mod, name = res_type.split(":")
        module = importlib.import_module(f"pulumi_azure_native.{mod}")
    except (ValueError, ImportError):
        return None
    cls = getattr(module, f"{name}Args", None)
    return (module, cls) if isinstance(cls, type) else None


def enum_rules(res: Resource, ctx: MockContext) -> list[Violation]:
    found = _args_class(res.type)
    if found is None:
        return []
    module, cls = found
    out: list[Violation] = []

    def visit(schema: _Schema, value: Mapping[str, Any], path: str) -> None:
        for key, item in value.items():
            here = f"{path}.{key}" if path else key
            items = item if isinstance(item, list) else [item]
            for element in items:
                if key in schema.enums and isinstance(element, str):
                    enum_cls = schema.enums[key]
                    if enum_cls.__name__ in DEPRECATED_ENUMS:
                        continue
                    allowed = [str(m.value) for m in enum_cls]
                    src = (
                        f"Azure REST API spec enum {enum_cls.__name__} (pulumi-azure-native {module.__name__}, "
                        "generated from azure-rest-api-specs)"
                    )
                    out.extend(check_enum(res, here, element, allowed, src))
                elif key in schema.nested and isinstance(element, Mapping):
                    visit(_schema(module, schema.nested[key]), element, here + ("[]" if item is not element else ""))

    visit(_schema(module, cls), res.inputs, "")
    return out


# ------------------------------------------------------------------ names and documented limits


def name_rules(res: Resource) -> list[Violation]:
    out: list[Violation] = []
    if res.type in NAMES:
        key, rule = NAMES[res.type]
        if isinstance(res.inputs.get(key), str) or key == "name":
            out += rule.check(res, key)
    if res.type == "azure-native:compute:VirtualMachine":
        computer = res.inputs.get("osProfile", {}).get("computerName")
        if isinstance(computer, str):  # a Linux computer name follows the VM name's rule
            out += NAMES[res.type][1].check(Resource(res.type, res.name, {"name": computer}), "name")
    for prefix in values_at(res.inputs, "virtualMachineProfile.osProfile.computerNamePrefix"):
        if isinstance(prefix, str) and not 1 <= len(prefix) <= 15:
            out.append(
                res.violation(
                    "virtualMachineProfile.osProfile.computerNamePrefix",
                    prefix,
                    "1-15 characters",
                    f"Azure REST API spec VirtualMachineScaleSetOSProfile.computerNamePrefix: "
                    f'"{COMPUTER_NAME_PREFIX_QUOTE}"',
                )
            )
    if res.type == "azure-native:network:NetworkSecurityGroup":
        for rule in values_at(res.inputs, "securityRules[]"):
            if isinstance(rule, Mapping) and isinstance(rule.get("name"), str):
                out += NAMES["azure-native:network:NetworkSecurityGroup"][1].check(
                    Resource(res.type, res.name, {"name": rule["name"]}), "name"
                )
    return out


def storage_rules(res: Resource) -> list[Violation]:
    inputs = res.inputs
    out: list[Violation] = []
    if res.type == "azure-native:storagecache:AmlFilesystem":
        sku = (inputs.get("sku") or {}).get("name")
        size = inputs.get("storageCapacityTiB")
        if sku in AMLFS_SIZES and size is not None:
            lo, step, hi = AMLFS_SIZES[sku]
            if not (lo <= float(size) <= hi and float(size) % step == 0):
                out.append(
                    res.violation(
                        "storageCapacityTiB", size, f"{sku}: {lo}-{hi} TiB in steps of {step}", AMLFS_SIZE_SOURCE
                    )
                )
    if res.type == "azure-native:netapp:CapacityPool":
        size = inputs.get("size")
        if size is not None and (int(size) % TIB or int(size) < TIB):
            out.append(
                res.violation(
                    "size",
                    size,
                    "a whole number of TiB (bytes), at least 1 TiB",
                    f'Azure REST API spec NetApp CapacityPool.size: "{POOL_SIZE_QUOTE}"',
                ),
            )
    if res.type == "azure-native:netapp:CapacityPoolVolume":
        quota = inputs.get("usageThreshold")
        if quota is not None:
            large = bool(inputs.get("isLargeVolume"))
            lo, hi = (2400 * GIB, 2400 * TIB) if large else (50 * GIB, 100 * TIB)
            q = int(quota)
            if q % GIB or not lo <= q <= hi:
                quote = LARGE_VOLUME_QUOTE if large else VOLUME_QUOTE
                out.append(
                    res.violation(
                        "usageThreshold",
                        quota,
                        f"{'large' if large else 'regular'} volumes: {lo // GIB:,}-"
                        f"{hi // GIB:,} GiB in whole GiB (bytes)",
                        f'Azure REST API spec NetApp Volume.usageThreshold: "{quote}"',
                    )
                )
    return out


# ------------------------------------------------------------------ network security rules


def _family(prefix: str) -> int | None:
    try:
        return ipaddress.ip_network(prefix, strict=False).version
    except ValueError:
        return None


def nsg_rules(res: Resource) -> list[Violation]:
    if res.type != "azure-native:network:NetworkSecurityGroup":
        return []
    out: list[Violation] = []
    seen: dict[tuple[str, int], int] = {}
    for i, rule in enumerate(values_at(res.inputs, "securityRules[]")):
        if not isinstance(rule, Mapping):
            continue
        priority = rule.get("priority")
        low, high = PRIORITY_RANGE
        if isinstance(priority, (int, float)) and not low <= priority <= high:
            out.append(res.violation(f"securityRules[{i}].priority", priority, f"{low}-{high}", PRIORITY_SOURCE))
        elif isinstance(priority, (int, float)):
            key_ = (str(rule.get("direction", "")).lower(), int(priority))
            if key_ in seen:
                out.append(
                    res.violation(
                        f"securityRules[{i}].priority",
                        priority,
                        f"unique per direction (rule {seen[key_]} has it too)",
                        PRIORITY_SOURCE,
                    )
                )
            seen[key_] = i
        for key in ("sourceAddressPrefixes", "destinationAddressPrefixes"):
            prefixes = [str(p) for p in rule.get(key) or []]
            families = {f for f in map(_family, prefixes) if f is not None}
            if len(families) > 1:
                out.append(
                    res.violation(
                        f"securityRules[{i}].{key}", prefixes, "IPv4 and IPv6 prefixes in one rule", FAMILY_SOURCE
                    )
                )
            tags = [p for p in prefixes if _family(p) is None]
            if tags and len(prefixes) > 1:
                out.append(
                    res.violation(
                        f"securityRules[{i}].{key}",
                        prefixes,
                        f"'*' and service tags ({', '.join(tags)}) cannot be in a list",
                        TAG_IN_LIST_SOURCE,
                    )
                )
    return out


@dataclass(frozen=True)
class _Rule:
    priority: int
    access: str
    protocol: str
    sources: tuple[str, ...]
    destinations: tuple[str, ...]
    ports: tuple[str, ...]


def _rules(nsg: Mapping[str, Any], direction: str) -> list[_Rule]:
    out = []
    for r in nsg.get("securityRules") or []:
        if str(r.get("direction", "")).lower() != direction:
            continue
        out.append(
            _Rule(
                int(r.get("priority") or 0),
                str(r.get("access", "")),
                str(r.get("protocol", "*")),
                tuple(r.get("sourceAddressPrefixes") or [r.get("sourceAddressPrefix", "*")]),
                tuple(r.get("destinationAddressPrefixes") or [r.get("destinationAddressPrefix", "*")]),
                tuple(r.get("destinationPortRanges") or [r.get("destinationPortRange", "*")]),
            )
        )
    # Azure's default rules: AllowVnetInBound / AllowVnetOutBound at 65000.
    out.append(_Rule(65000, "Allow", "*", ("VirtualNetwork",), ("VirtualNetwork",), ("*",)))
    return sorted(out, key=lambda r: r.priority)


def _covers(prefixes: tuple[str, ...], cidr: str) -> bool:
    for p in prefixes:
        if p in ("*", "VirtualNetwork"):
            return True
        try:
            if ipaddress.ip_network(cidr).subnet_of(ipaddress.ip_network(p, strict=False)):  # type: ignore[arg-type]
                return True
        except (ValueError, TypeError):
            continue
    return False


def _port(ports: tuple[str, ...], port: int) -> bool:
    for p in ports:
        if p == "*":
            return True
        lo, _, hi = str(p).partition("-")
        if lo.isdigit() and int(lo) <= port <= int(hi or lo):
            return True
    return False


def _allows_ssh_within(nsg: Mapping[str, Any], cidr: str, direction: str) -> _Rule | None:
    """The first rule deciding TCP 22 from ``cidr`` to ``cidr``, if it denies; ``None`` when allowed."""
    for rule in _rules(nsg, direction):
        if rule.protocol.lower() not in ("*", "tcp") or not _port(rule.ports, 22):
            continue
        if _covers(rule.sources, cidr) and _covers(rule.destinations, cidr):
            return rule if rule.access.lower() == "deny" else None
    return None


def _by_id(ctx: MockContext, ref: Any) -> Any:
    ref = ref.get("id") if isinstance(ref, Mapping) else ref
    for r in ctx.ledger:
        if ref and (r.id == ref or r.outputs.get("id") == ref):
            return r
    return None


def amlfs_network_rules(res: Resource, ctx: MockContext) -> list[Violation]:
    """A Managed Lustre subnet must let its servers reach each other on TCP 22 while deploying."""
    if res.type != "azure-native:storagecache:AmlFilesystem":
        return []
    subnet = _by_id(ctx, res.inputs.get("filesystemSubnet"))
    if subnet is None:
        return []
    cidr = subnet.inputs.get("addressPrefix")
    nsg = _by_id(ctx, subnet.inputs.get("networkSecurityGroup"))
    if nsg is None or not cidr:
        return []
    out = []
    for direction in ("inbound", "outbound"):
        deny = _allows_ssh_within(nsg.inputs, str(cidr), direction)
        if deny is not None:
            out.append(
                res.violation(
                    "filesystemSubnet",
                    subnet.name,
                    f"the subnet's NSG {nsg.name!r} denies {direction} TCP 22 within "
                    f"{cidr} (rule at priority {deny.priority}); Managed Lustre servers need it to deploy",
                    AMLFS_SSH_SOURCE,
                )
            )
    return out


#: Tags: names 1-512 characters without ``<>%&\\?/``, values up to 256 (Microsoft naming rules,
#: Microsoft.Resources tagNames / tagNames/tagValues).
TAG_NAME = r"[^<>%&\\?/]{1,512}"
TAG_VALUE_MAX = 256


def tag_rules(res: Resource) -> list[Violation]:
    tags = res.inputs.get("tags")
    if not isinstance(tags, Mapping):
        return []
    out = []
    src = f"{NAMING} (Microsoft.Resources tagNames, tagNames/tagValues)"
    for key, value in tags.items():
        if not re.fullmatch(TAG_NAME, str(key)):
            out.append(res.violation(f"tags.{key}", key, "names: 1-512 characters, none of < > % & \\ ? /", src))
        if value is not None and len(str(value)) > TAG_VALUE_MAX:
            out.append(res.violation(f"tags.{key}", value, f"values: at most {TAG_VALUE_MAX} characters", src))
    return out


def zone_rules(res: Resource) -> list[Violation]:
    """A zonal resource in a region without availability zones is refused (catalog ``regions_without_zones``)."""
    from provision.catalog import cloud_facts

    zones, location = res.inputs.get("zones"), res.inputs.get("location")
    if not zones or location not in cloud_facts("azure").regions_without_zones:
        return []
    return [
        res.violation(
            "zones",
            zones,
            f"region {location} has no availability zones: no zonal resource there",
            "learn.microsoft.com/azure/reliability/regions-list (Availability zone support column)",
        )
    ]


HSM_SOURCE = (
    "pulumi-azure-native storagecache AmlFilesystemHsmSettingsArgs (azure-rest-api-specs storagecache amlfilesystem): "
    "container and logging_container are 'Resource ID of storage container'; the logging container 'Must be a "
    "separate container in the same storage account'; import_prefix is a path/prefix"
)
_CONTAINER_ID = re.compile(
    r"^(/subscriptions/[0-9a-fA-F-]{36}/resourceGroups/[-\w.()]{1,90}/providers/Microsoft\.Storage/"
    r"storageAccounts/[a-z0-9]{3,24})/blobServices/default/containers/([a-z0-9](?:[a-z0-9-]{1,61}[a-z0-9]))$"
)


def hsm_rules(res: Resource) -> list[Violation]:
    """Managed Lustre's HSM settings: two container resource ids of one account, not the same; a '/' prefix."""
    if res.type != "azure-native:storagecache:AmlFilesystem":
        return []
    hsm = res.inputs.get("hsm")
    settings = hsm.get("settings") if isinstance(hsm, Mapping) else None
    if not isinstance(settings, Mapping):
        return []
    out: list[Violation] = []
    found = {}
    for key in ("container", "loggingContainer"):
        value = settings.get(key)
        match = _CONTAINER_ID.match(value) if isinstance(value, str) else None
        if match is None:
            out.append(res.violation(f"hsm.settings.{key}", value, "a blob container's resource id", HSM_SOURCE))
        else:
            found[key] = match.groups()
    if len(found) == 2:
        (acct, data), (log_acct, logs) = found["container"], found["loggingContainer"]
        if acct != log_acct or data == logs:
            out.append(
                res.violation(
                    "hsm.settings.loggingContainer",
                    settings.get("loggingContainer"),
                    "a separate container in the same storage account as the data container",
                    HSM_SOURCE,
                )
            )
    prefix = settings.get("importPrefix")
    if prefix is not None and not (isinstance(prefix, str) and prefix.startswith("/")):
        out.append(res.violation("hsm.settings.importPrefix", prefix, "a path starting with '/'", HSM_SOURCE))
    return out


def check(res: Resource, ctx: MockContext) -> list[Violation]:
    """Every rule this cloud knows for one registration."""
    out = enum_rules(res, ctx) + name_rules(res) + tag_rules(res) + storage_rules(res) + nsg_rules(res) + hsm_rules(res)
    out += zone_rules(res) + strict_launch.check(res)
    out += hsm_grant_rules(res, ctx)
    return out + amlfs_network_rules(res, ctx) + strict_rbac.check(res, ctx) + strict_aks.check(res, ctx)


def model_paths(res: Resource) -> dict[str, str]:
    """Input leaf path -> the pulumi-azure-native Args property (generated from the REST specs) it maps onto.

    A leaf under a property whose type is a nested Args class is resolved in that class; a leaf under any
    other mapping (``tags``, identity maps) is the property's own value.
    """
    found = _args_class(res.type)
    if found is None:
        return {}
    module, cls = found
    out: dict[str, str] = {}

    def visit(args_cls: type, value: Mapping[str, Any], path: str) -> None:
        schema = _schema(module, args_cls)
        for key, item in value.items():
            if key not in schema.props:
                continue
            here = f"{path}.{key}" if path else key
            src = (
                f"pulumi-azure-native {module.__name__} {args_cls.__name__}.{key} (generated from azure-rest-api-specs)"
            )
            items = item if isinstance(item, list) else [item]
            suffix = "[]" if isinstance(item, list) else ""
            for element in items:
                if key in schema.nested and isinstance(element, Mapping):
                    visit(schema.nested[key], element, here + suffix)
                else:
                    for leaf, _ in walk(element, here + suffix):
                        out[leaf] = src

    visit(cls, res.inputs, "")
    return out
