"""Alibaba Cloud prices for ``provision catalog refresh``: ECS ``DescribePrice`` with the user's account.

Alibaba publishes no key-less price API, so this source needs credentials (the Alibaba Cloud credentials chain:
``ALIBABA_CLOUD_ACCESS_KEY_ID`` / ``ALIBABA_CLOUD_ACCESS_KEY_SECRET``, a profile, or an instance role).
``DescribePrice`` (https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-describeprice)
answers the price of one instance type in one region; with ``PriceUnit=Hour`` the figure is per hour, and
``PriceInfo.Price.DetailInfos.DetailInfo`` splits it by resource, of which ``instanceType`` is the instance alone
(the default system disk is another line). The catalog keeps the instance's ``OriginalPrice`` (the list price
before the account's discounts) for ``SpotStrategy=NoSpot`` (pay-as-you-go) and ``SpotAsPriceGo`` (spot).

Only USD answers are used (the international site); a CNY answer (the China site) is noted and left out, since
the catalog's instance prices are USD. A type Alibaba refuses to price (sales-only, not sold in the region) is
noted with the error code, and its row keeps what it has (for instance a labelled estimate).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: Where the API is documented; also the ``ref`` of the source a refresh adds to a changed row.
DESCRIBE_PRICE_DOC = "https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-describeprice"
API_REF = f"Alibaba Cloud ECS DescribePrice API ({DESCRIBE_PRICE_DOC})"
#: ``SpotStrategy`` per catalog price field.
STRATEGIES = {"price_per_hour_usd": "NoSpot", "spot_price_per_hour_usd": "SpotAsPriceGo"}


class AlibabaUnavailable(Exception):
    """DescribePrice cannot be used here: no SDK or no credentials (``refresh`` skips the cloud with the reason)."""


class AlibabaRefused(Exception):
    """DescribePrice answered with an error for one type and region (its code and message)."""


@dataclass
class AlibabaSource:
    """The one call a refresh makes, injectable for tests: ``(instance_type, region, spot_strategy) -> body``.

    The body is ``DescribePriceResponseBody.to_map()`` (the API's JSON); raises :class:`AlibabaRefused` for an
    API error about that type or region.
    """

    describe_price: Callable[[str, str, str], dict[str, Any]]


def hourly_price(body: dict[str, Any]) -> tuple[float | None, str]:
    """The instance's hourly list price in USD from a DescribePrice body, or ``(None, why)``."""
    price = (body.get("PriceInfo") or {}).get("Price") or {}
    currency = price.get("Currency")
    if currency != "USD":
        return None, f"priced in {currency or 'no currency'}, not USD (the catalog keeps USD instance prices)"
    details = ((price.get("DetailInfos") or {}).get("DetailInfo")) or []
    instance = [d for d in details if d.get("Resource") == "instanceType"]
    if instance:
        value = instance[0].get("OriginalPrice")
        return (float(value), "") if value is not None else (None, "no OriginalPrice on the instanceType line")
    return None, "no instanceType line in DetailInfos (the total includes the system disk, so it is not used)"


def sdk_alibaba_source() -> AlibabaSource:
    """DescribePrice through the ECS SDK (``provision[alibaba]``) with the default credentials chain.

    Raises:
        AlibabaUnavailable: the SDK is not installed or no credentials are configured.
    """
    try:
        from alibabacloud_credentials.client import Client as Credentials
        from alibabacloud_ecs20140526 import models as ecs
        from alibabacloud_ecs20140526.client import Client
        from alibabacloud_tea_openapi import models as openapi
    except ImportError:
        raise AlibabaUnavailable("the Alibaba ECS SDK is not installed: pip install 'provision[alibaba]'") from None
    try:
        credential = Credentials()
        credential.get_credential()
    except Exception as e:  # noqa: BLE001  # the chain raises its own types per provider
        raise AlibabaUnavailable(f"no Alibaba Cloud credentials: DescribePrice needs an account ({e})") from None
    clients: dict[str, Any] = {}

    def describe_price(instance_type: str, region: str, strategy: str) -> dict[str, Any]:
        if region not in clients:
            config = openapi.Config(credential=credential, region_id=region, endpoint=f"ecs.{region}.aliyuncs.com")
            clients[region] = Client(config)
        request = ecs.DescribePriceRequest(
            region_id=region,
            resource_type="instance",
            instance_type=instance_type,
            price_unit="Hour",
            spot_strategy=strategy,
        )
        try:
            return clients[region].describe_price(request).body.to_map()
        except Exception as e:  # noqa: BLE001  # Tea raises TeaException with the API's code
            code = getattr(e, "code", None) or type(e).__name__
            raise AlibabaRefused(f"{code}: {getattr(e, 'message', e)}") from None

    return AlibabaSource(describe_price=describe_price)


def refresh_alibaba(f: Any, source: AlibabaSource, result: Any, compare: Callable[..., None]) -> int:
    """Compare every Alibaba instance row's region prices with DescribePrice; returns the rows checked.

    ``compare(result, cloud, item, region, field, old, new)`` records a change (``refresh._compare``).
    """
    checked = 0
    for o in f.instances:
        for region, offer in o.regions.items():
            for name, strategy in STRATEGIES.items():
                try:
                    new, why = hourly_price(source.describe_price(o.instance_type, region, strategy))
                except AlibabaRefused as e:
                    result.notes.append(f"alibaba {o.instance_type} {region} {strategy}: not priced ({e})")
                    continue
                if new is None:
                    result.notes.append(f"alibaba {o.instance_type} {region} {strategy}: {why}")
                compare(result, "alibaba", o.instance_type, region, name, getattr(offer, name), new)
            checked += 1
    return checked
