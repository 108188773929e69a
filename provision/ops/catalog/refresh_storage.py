"""Storage price rows for ``provision catalog refresh``: FSx for Lustre (AWS) and Azure Managed Lustre.

Sources and the response shapes read here:

* AWS: the Price List Query API, ``pricing:GetProducts`` with ``ServiceCode=AmazonFSx``. Each ``PriceList``
  entry is a JSON string holding ``product`` (``productFamily``, ``attributes``) and ``terms.OnDemand`` ->
  ``priceDimensions`` -> ``{unit, pricePerUnit: {USD}}``.
  https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_pricing_GetProducts.html and
  https://docs.aws.amazon.com/awsaccountbilling/latest/aboutv2/reading-an-offer.html
  FSx for Lustre SSD storage bills per GB-month by deployment type and, for persistent file systems, by the
  per-unit throughput tier (https://aws.amazon.com/fsx/lustre/pricing/). A product is read as Lustre SSD storage
  when its attributes say so (``fileSystemType`` Lustre, ``storageType`` SSD, ``productFamily`` Storage); its
  tier comes from ``throughputCapacity`` or, failing that, the ``usagetype`` suffix (``...Storage.SSD.<tier>``).
  Anything else (backups, metadata IOPS, HDD, Intelligent-Tiering) is ignored.
* Azure: the Retail Prices API (public, no key), ``serviceName eq 'Azure Managed Lustre'`` in one region.
  ``Items`` rows carry ``retailPrice``, ``unitOfMeasure``, ``meterName``, ``skuName``, ``productName``,
  ``armRegionName``, ``tierMinimumUnits``, ``type``; pages follow ``NextPageLink``.
  https://learn.microsoft.com/rest/api/cost-management/retail-prices/azure-retail-prices
  A meter belongs to the catalog tier ``AMLFS-Durable-Premium-<N>`` when its names carry "Premium" and the
  number N as a word (SKU list: https://learn.microsoft.com/azure/azure-managed-lustre/create-file-system-portal).

Prices become USD per TiB-month on the catalog's 730-hour month (``models.HOURS_PER_MONTH``); a GB-month is taken
as a GiB-month, as the catalog's FSx rows already do (FSx sizes are GiB). A meter in a unit not in
``_PER_TIB_MONTH`` is reported, never guessed; two meters for one tier that disagree are reported and not used.
Every price read here holds for the one region it was read in.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from provision.catalog.models import HOURS_PER_MONTH, FilesystemOffer

AZURE_PRICES_URL = "https://prices.azure.com/api/retail/prices"
#: The Retail Prices API's service name for Azure Managed Lustre (the product's name on Microsoft Learn).
AZURE_LUSTRE_SERVICE = "Azure Managed Lustre"
#: Follow at most this many pages of one Retail Prices query (100 rows a page).
MAX_PAGES = 50
#: The region a storage row is checked in when the row names none (``priced_regions`` empty): the region the
#: catalog's figures were read for (aws.yaml and azure.yaml notes) and the shipped stacks use.
REFERENCE_REGION: Mapping[str, str] = MappingProxyType({"aws": "us-east-1", "azure": "eastus"})

#: Retail Prices ``unitOfMeasure`` -> factor to USD per TiB-month (1 TiB = 1024 GiB; 730-hour month).
_PER_TIB_MONTH: Mapping[str, float] = MappingProxyType(
    {
        "1 GiB/Hour": 1024 * HOURS_PER_MONTH,
        "1 GiB/Month": 1024.0,
        "1 TiB/Hour": HOURS_PER_MONTH,
        "1 TiB/Month": 1.0,
    }
)
#: Price List ``unit`` of FSx storage: GB-month, taken per GiB (see module doc).
_FSX_UNIT = "GB-Mo"

JsonGet = Callable[[str], Any]


@dataclass
class TierPrices:
    """What one storage answer gave: USD per TiB-month by tier key, plus what could not be used (with why)."""

    prices: dict[str, float] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    seen: int = 0
    candidates: dict[str, dict[float, str]] = field(default_factory=dict, repr=False)

    def add(self, key: str, usd: float, what: str) -> None:
        self.candidates.setdefault(key, {})[round(usd, 6)] = what

    def settle(self) -> TierPrices:
        """One price per tier; a tier whose rows disagree gets none and a problem naming the rows."""
        for key, found in sorted(self.candidates.items()):
            if len(found) == 1:
                self.prices[key] = next(iter(found))
            else:
                listed = "; ".join(f"{what} = {usd:g}" for usd, what in sorted(found.items()))
                self.problems.append(f"{key}: the vendor's rows disagree ({listed}); not used")
        return self


# --------------------------------------------------------------------------------------------- aws fsx


def fsx_tier_key(deployment: str, throughput: int | None) -> str:
    """``PERSISTENT/250`` or ``SCRATCH`` (scratch SSD has no throughput tier)."""
    return deployment if throughput is None else f"{deployment}/{throughput}"


def _fsx_throughput(attributes: Mapping[str, str]) -> int | None:
    raw = str(attributes.get("throughputCapacity", "")).strip()
    if raw.isdigit():
        return int(raw)
    m = re.search(r"Storage\.SSD\.(\d+)$", str(attributes.get("usagetype", "")))
    return int(m.group(1)) if m else None


def fsx_lustre_prices(products: Iterable[str], region: str) -> TierPrices:
    """USD per TiB-month of FSx for Lustre SSD storage in ``region``, keyed by :func:`fsx_tier_key`.

    ``products`` are the ``PriceList`` strings of a ``GetProducts`` answer for ``AmazonFSx``.
    """
    out = TierPrices()
    for raw in products:
        doc = json.loads(raw)
        product = doc.get("product", {})
        attrs = product.get("attributes", {})
        if product.get("productFamily") != "Storage" or str(attrs.get("fileSystemType", "")).lower() != "lustre":
            continue
        if str(attrs.get("storageType", "")).upper() != "SSD":
            continue
        if attrs.get("regionCode", region) != region:
            continue
        deployment = str(attrs.get("deploymentOption", "")).lower()
        kind = "PERSISTENT" if "persistent" in deployment else "SCRATCH" if "scratch" in deployment else None
        if kind is None:
            continue
        out.seen += 1
        throughput = _fsx_throughput(attrs) if kind == "PERSISTENT" else None
        if kind == "PERSISTENT" and throughput is None:
            out.problems.append(f"{product.get('sku', '?')}: persistent SSD storage row names no throughput tier")
            continue
        for term in doc.get("terms", {}).get("OnDemand", {}).values():
            for dim in term.get("priceDimensions", {}).values():
                usd = dim.get("pricePerUnit", {}).get("USD")
                if usd is None:
                    continue
                if dim.get("unit") != _FSX_UNIT:
                    out.problems.append(f"{product.get('sku', '?')}: unit {dim.get('unit')!r} is not {_FSX_UNIT}")
                    continue
                if float(usd) > 0:
                    what = f"{attrs.get('usagetype', product.get('sku', '?'))} {float(usd):g}/GB-Mo"
                    out.add(fsx_tier_key(kind, throughput), float(usd) * 1024, what)
    return out.settle()


def throughput_field(tier: int) -> str:
    """The change-field name of one throughput tier's price: ``price_per_tib_month_by_throughput[250]``."""
    return f"price_per_tib_month_by_throughput[{tier}]"


def field_throughput(field_name: str) -> int | None:
    """The tier a :func:`throughput_field` name carries (``None`` for any other field)."""
    m = re.fullmatch(r"price_per_tib_month_by_throughput\[(\d+)\]", field_name)
    return int(m.group(1)) if m else None


def fsx_row_keys(fs: FilesystemOffer) -> dict[str, str]:
    """Catalog field -> tier key for one FSx row: each throughput tier's price, or the flat price."""
    if fs.tier.startswith("PERSISTENT") and fs.throughput_mbps_per_tib:
        return {throughput_field(t): fsx_tier_key("PERSISTENT", t) for t in fs.throughput_mbps_per_tib}
    if fs.tier.startswith("SCRATCH"):
        return {"price_per_tib_month_usd": fsx_tier_key("SCRATCH", None)}
    return {}


def fsx_row_price(fs: FilesystemOffer, field_name: str) -> float | None:
    """The catalog's current value of ``field_name`` (as :func:`fsx_row_keys` names it) on ``fs``."""
    tier = field_throughput(field_name)
    if tier is not None:
        return fs.price_per_tib_month_by_throughput.get(tier)
    value = getattr(fs, field_name)
    return None if value is None else float(value)


def boto3_fsx_products(pricing: Any, region: str) -> list[str]:
    """``GetProducts`` for AmazonFSx in ``region`` through a boto3 ``pricing`` client (all pages)."""
    pages = pricing.get_paginator("get_products").paginate(
        ServiceCode="AmazonFSx", Filters=[{"Type": "TERM_MATCH", "Field": "regionCode", "Value": region}]
    )
    return [p for page in pages for p in page.get("PriceList", [])]


# --------------------------------------------------------------------------------------------- azure amlfs


def amlfs_tier_number(tier: str) -> int | None:
    """``AMLFS-Durable-Premium-250`` -> 250 (the MB/s per TiB the SKU name carries)."""
    m = re.fullmatch(r"AMLFS-Durable-Premium-(\d+)", tier)
    return int(m.group(1)) if m else None


def _words(text: str) -> set[str]:
    return set(re.findall(r"(?<![\w.])\d+(?![\w.])", text))


def azure_lustre_prices(get: JsonGet, region: str, tiers: Iterable[str]) -> TierPrices:
    """USD per TiB-month of each catalog AMLFS tier in ``region`` from the Retail Prices API.

    Only pay-as-you-go (``type`` Consumption) USD rows of the first usage band (``tierMinimumUnits`` 0) count.
    """
    numbers = {t: n for t in tiers if (n := amlfs_tier_number(t)) is not None}
    query = f"serviceName eq '{AZURE_LUSTRE_SERVICE}' and armRegionName eq '{region}' and priceType eq 'Consumption'"
    url: str | None = f"{AZURE_PRICES_URL}?{urllib.parse.urlencode({'$filter': query})}"
    out = TierPrices()
    for _ in range(MAX_PAGES):
        if not url:
            break
        page = get(url)
        for item in page.get("Items", []):
            if item.get("armRegionName") != region or item.get("currencyCode", "USD") != "USD":
                continue
            if item.get("type", "Consumption") != "Consumption" or float(item.get("tierMinimumUnits", 0) or 0) > 0:
                continue
            out.seen += 1
            names = f"{item.get('skuName', '')} {item.get('meterName', '')} {item.get('productName', '')}"
            hits = [t for t, n in numbers.items() if "premium" in names.lower() and str(n) in _words(names)]
            if len(hits) != 1:
                continue
            unit = item.get("unitOfMeasure", "")
            what = f"{item.get('meterName', '?')} ({unit})"
            if unit not in _PER_TIB_MONTH:
                out.problems.append(f"{hits[0]}: meter {what} is in a unit this refresh does not convert; not used")
                continue
            usd = float(item.get("retailPrice", item.get("unitPrice")))
            out.add(hits[0], usd * _PER_TIB_MONTH[unit], f"{what} {usd:g}")
        url = page.get("NextPageLink")
    return out.settle()
