"""The Alibaba preflight: the type's stock in the zone, CPFS/NAS in the zone, and the vCPU quota, asked before `up`.

Without it an unsold type, a CPFS zone that is not the GPU zone, or a pay-as-you-go vCPU quota below the cluster
surfaces only when RunInstances or CreateFileSystem fails, after the network exists. Reached through
:meth:`provision.clouds.base.Adapter.preflight`; takes an account object, so tests run it offline against fakes.

Vendor rules (ECS API 2014-05-26, NAS API 2017-06-26 reference pages):

* ``DescribeAvailableResource`` (DestinationResource ``InstanceType``): per zone ``Status`` (Available/SoldOut) and
  ``StatusCategory`` (WithStock, ClosedWithStock, WithoutStock) of each supported type. WithStock does not promise a
  create: the elastic quota is separate (Alibaba Compute Nest GPU solution notes, ``QuotaExceed.ElasticQuota``).
* ``DescribeAccountAttributes``: ``max-postpaid-instance-vcpu-count`` / ``used-postpaid-instance-vcpu-count`` (and the
  ``spot`` pair) per region.
* NAS ``DescribeZones`` with ``FileSystemType``: the zones where that file system type is sold, with the storage
  types (``InstanceTypes.InstanceType[].StorageType``) of each.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import hmac
import json
import os
import urllib.error
import urllib.parse
import urllib.request
import uuid
from typing import Any, Protocol

from provision.planning.plan import ClusterPlan
from provision.spec.errors import Problem, UnsupportedError

ECS_VERSION = "2014-05-26"
NAS_VERSION = "2017-06-26"
#: RPC endpoints: ``ecs.<region>.aliyuncs.com`` and ``nas.<region>.aliyuncs.com`` (ECS / NAS API "Endpoints").
ECS_ENDPOINT = "https://ecs.{region}.aliyuncs.com"
NAS_ENDPOINT = "https://nas.{region}.aliyuncs.com"


class AlibabaAccount(Protocol):
    """What the Alibaba preflight asks an account (tests pass fakes; :class:`RpcAccount` asks the APIs)."""

    def available_resource(self, region: str, zone: str, instance_type: str, charge: str, spot: str) -> dict[str, Any]:
        """The DescribeAvailableResource answer for the type in the zone."""
        ...

    def account_attributes(self, region: str) -> dict[str, Any]:
        """The DescribeAccountAttributes answer for the region."""
        ...

    def nas_zones(self, region: str, file_system_type: str) -> dict[str, Any]:
        """The NAS DescribeZones answer for the file system type."""
        ...


def _list(node: Any, *path: str) -> list[Any]:
    """The RPC JSON list at ``path`` (``{"AvailableZones": {"AvailableZone": [...]}}``), [] when absent."""
    for key in path:
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, list) else []


def _type_stock(answer: dict[str, Any], zone: str, instance_type: str) -> str | None:
    """The type's StatusCategory in ``zone`` (or its Status), ``None`` when the zone does not list it at all."""
    for z in _list(answer, "AvailableZones", "AvailableZone"):
        if z.get("ZoneId") != zone:
            continue
        for res in _list(z, "AvailableResources", "AvailableResource"):
            for sup in _list(res, "SupportedResources", "SupportedResource"):
                if sup.get("Value") == instance_type:
                    return str(sup.get("StatusCategory") or sup.get("Status") or "")
    return None


def _attribute(answer: dict[str, Any], name: str) -> int | None:
    for item in _list(answer, "AccountAttributeItems", "AccountAttributeItem"):
        if item.get("AttributeName") == name:
            values = _list(item, "AttributeValues", "ValueItem")
            try:
                return sum(int(v.get("Value")) for v in values)
            except (TypeError, ValueError):
                return None
    return None


def alibaba_preflight(plan: ClusterPlan, account: AlibabaAccount | None = None) -> list[Problem]:
    """Problems that would stop ``plan`` in this Alibaba account, before anything is created or billed."""
    from provision.clouds.alibaba.plan import AlibabaPlan, Cpfs

    extra = plan.extra
    assert isinstance(extra, AlibabaPlan), type(extra)  # noqa: S101 - only Alibaba plans come here
    account = account or RpcAccount.from_environment()
    problems: list[Problem] = []
    zone, itype = plan.zone or "", plan.instance_type  # an Alibaba plan always has its vSwitch's zone
    stock = _type_stock(
        account.available_resource(plan.region, zone, itype, extra.charge_type, extra.spot_strategy), zone, itype
    )
    if stock is None:
        problems.append(
            Problem(
                "zone",
                zone,
                f"{itype} is not offered to this account in {zone} (DescribeAvailableResource lists it nowhere there)",
                "pick a zone where DescribeAvailableResource lists the type, or ask Alibaba sales for it",
            )
        )
    elif stock not in ("WithStock", "Available"):
        problems.append(
            Problem(
                "zone",
                zone,
                f"{itype} is {stock} in {zone} (DescribeAvailableResource StatusCategory): RunInstances would fail "
                "with OperationDenied.NoStock",
                "pick another zone, use a private pool (alibaba.private_pool_id) or try later",
            )
        )
    spot = extra.spot_strategy != "NoSpot"
    kind = "spot" if spot else "postpaid"
    attrs = account.account_attributes(plan.region)
    limit = _attribute(attrs, f"max-{kind}-instance-vcpu-count")
    used = _attribute(attrs, f"used-{kind}-instance-vcpu-count") or 0
    needed = plan.nodes * plan.offer.vcpus
    if extra.charge_type == "PostPaid" and limit is not None and used + needed > limit:
        problems.append(
            Problem(
                "nodes",
                plan.nodes,
                f"needs {needed} {kind} vCPUs in {plan.region}, but the account uses {used} of its {limit} "
                f"(DescribeAccountAttributes max-{kind}-instance-vcpu-count): RunInstances would fail with QuotaExceed",
                "raise the quota in the Quota Center or use fewer nodes",
            )
        )
    storage = extra.storage
    if plan.storage is not None and storage is not None:
        zones = _list(account.nas_zones(plan.region, storage.file_system_type), "Zones", "Zone")
        here = next((z for z in zones if z.get("ZoneId") == zone), None)
        what = "CPFS" if isinstance(storage, Cpfs) else f"{storage.file_system_type} NAS"
        if here is None:
            offered = ", ".join(sorted(str(z.get("ZoneId")) for z in zones)) or "none"
            problems.append(
                Problem(
                    "zone",
                    zone,
                    f"{what} is not sold in {zone} (NAS DescribeZones lists: {offered}); CreateFileSystem would fail "
                    "after the network exists",
                    "pick a zone offering both the GPU type and the file system, or another storage.shared.kind",
                )
            )
        else:
            tiers = {str(t.get("StorageType")) for t in _list(here, "InstanceTypes", "InstanceType")}
            if tiers and storage.storage_type not in tiers:
                problems.append(
                    Problem(
                        "storage.shared.tier",
                        storage.storage_type,
                        f"{what} in {zone} offers {', '.join(sorted(tiers))} only (NAS DescribeZones)",
                        f"use one of {', '.join(sorted(tiers))}",
                    )
                )
    return problems


def preflight(plan: ClusterPlan, session: AlibabaAccount | None = None) -> list[Problem]:
    """The hook :meth:`~provision.clouds.base.Adapter.preflight` calls: ``session`` is the account."""
    return alibaba_preflight(plan, session)


def sign(params: dict[str, str], secret: str) -> str:
    """RPC signature V2: Base64(HMAC-SHA1(secret + "&", "GET&%2F&" + encoded sorted query)) (Alibaba "Signature
    method" for RPC APIs; only A-Z a-z 0-9 - _ . ~ stay literal)."""
    enc = lambda text: urllib.parse.quote(str(text), safe="-_.~")  # noqa: E731
    canonical = "&".join(f"{enc(k)}={enc(v)}" for k, v in sorted(params.items()))
    digest = hmac.new(f"{secret}&".encode(), f"GET&{enc('/')}&{enc(canonical)}".encode(), hashlib.sha1)
    return base64.b64encode(digest.digest()).decode()


class RpcAccount:
    """Signed RPC calls with an AccessKey pair (no SDK needed for three read-only calls)."""

    def __init__(self, key_id: str, secret: str, token: str | None = None) -> None:
        self._key_id, self._secret, self._token = key_id, secret, token

    @classmethod
    def from_environment(cls) -> RpcAccount:
        """From ``ALIBABA_CLOUD_ACCESS_KEY_ID``/``_SECRET`` (or pulumi-alicloud's ``ALICLOUD_ACCESS_KEY`` and
        ``ALICLOUD_SECRET_KEY``), with the STS token variables when set.

        Raises:
            UnsupportedError: no credentials in the environment.
        """
        env = os.environ
        key = env.get("ALIBABA_CLOUD_ACCESS_KEY_ID") or env.get("ALICLOUD_ACCESS_KEY")
        secret = env.get("ALIBABA_CLOUD_ACCESS_KEY_SECRET") or env.get("ALICLOUD_SECRET_KEY")
        if not key or not secret:
            raise UnsupportedError(
                "the Alibaba preflight needs credentials: set ALIBABA_CLOUD_ACCESS_KEY_ID and "
                "ALIBABA_CLOUD_ACCESS_KEY_SECRET (or ALICLOUD_ACCESS_KEY / ALICLOUD_SECRET_KEY)"
            )
        return cls(key, secret, env.get("ALIBABA_CLOUD_SECURITY_TOKEN") or env.get("ALICLOUD_SECURITY_TOKEN"))

    def _call(self, endpoint: str, version: str, action: str, extra: dict[str, str]) -> dict[str, Any]:
        params = {
            "Action": action,
            "Version": version,
            "Format": "JSON",
            "AccessKeyId": self._key_id,
            "SignatureMethod": "HMAC-SHA1",
            "SignatureVersion": "1.0",
            "SignatureNonce": str(uuid.uuid4()),
            "Timestamp": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            **({"SecurityToken": self._token} if self._token else {}),
            **extra,
        }
        params["Signature"] = sign(params, self._secret)
        url = endpoint + "/?" + urllib.parse.urlencode(params, quote_via=urllib.parse.quote)
        try:
            with urllib.request.urlopen(url, timeout=30) as resp:  # noqa: S310 - https endpoint built above
                return json.loads(resp.read().decode())  # type: ignore[no-any-return]
        except urllib.error.HTTPError as e:
            try:
                body = json.loads(e.read().decode() or "{}")
            except ValueError:
                body = {}
            raise UnsupportedError(
                f"Alibaba {action}: HTTP {e.code} {body.get('Code')}: {body.get('Message')}"
            ) from None
        except (urllib.error.URLError, OSError, ValueError) as e:
            raise UnsupportedError(f"Alibaba {action}: cannot ask {endpoint}: {type(e).__name__}") from None

    def available_resource(self, region: str, zone: str, instance_type: str, charge: str, spot: str) -> dict[str, Any]:
        args = {"RegionId": region, "ZoneId": zone, "DestinationResource": "InstanceType"}
        args |= {"InstanceType": instance_type, "InstanceChargeType": charge, "SpotStrategy": spot}
        return self._call(ECS_ENDPOINT.format(region=region), ECS_VERSION, "DescribeAvailableResource", args)

    def account_attributes(self, region: str) -> dict[str, Any]:
        return self._call(
            ECS_ENDPOINT.format(region=region), ECS_VERSION, "DescribeAccountAttributes", {"RegionId": region}
        )

    def nas_zones(self, region: str, file_system_type: str) -> dict[str, Any]:
        args = {"RegionId": region, "FileSystemType": file_system_type}
        return self._call(NAS_ENDPOINT.format(region=region), NAS_VERSION, "DescribeZones", args)
