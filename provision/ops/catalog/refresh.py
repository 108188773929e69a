"""Rebuild the catalog's price rows from the vendors' public price APIs and report what changed.

Sources (each queried only for the rows the catalog already holds):

* Azure: the Retail Prices API, ``https://prices.azure.com/api/retail/prices`` (public, no key), one OData
  query per VM size; ``Items`` pages follow ``NextPageLink``. Linux pay-as-you-go rows only: rows whose
  ``productName`` says Windows and "Low Priority" rows are skipped; "Spot" rows give the spot price.
  https://learn.microsoft.com/rest/api/cost-management/retail-prices/azure-retail-prices
* AWS: the Price List Query API (``pricing:GetProducts``, endpoint in us-east-1; any AWS credentials) for
  on-demand Linux, shared-tenancy prices, and ``ec2:DescribeSpotPriceHistory`` for the lowest current spot
  price in the region. https://docs.aws.amazon.com/awsaccountbilling/latest/aboutv2/using-price-list-query-api.html
* Storage (FSx for Lustre through the same Price List API, ``ServiceCode=AmazonFSx``; Azure Managed Lustre
  through the Retail Prices API): see :mod:`provision.ops.catalog.refresh_storage`. A storage price holds for the
  one region it was read in (the row's ``priced_regions``, else ``refresh_storage.REFERENCE_REGION``).
* Alibaba: ECS ``DescribePrice`` with the user's account (no key-less API exists): see
  :mod:`provision.ops.catalog.refresh_alibaba`.
* GCP: the Cloud Billing Catalog API (``services/6F81-5844-456A/skus``, Compute Engine; an API key in
  ``GOOGLE_API_KEY``). A machine's price is its GPUs plus its vCPUs and memory at the family's SKUs.
  https://cloud.google.com/billing/docs/reference/rest/v1/services.skus/list

Network access is injected (``Sources``), so tests replay recorded responses and never reach the network.
A cloud whose source is unavailable (no network, no credentials, no key) is skipped with the reason.
"""

from __future__ import annotations

import json
import os
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import yaml

from provision.catalog.models import CLOUDS, CloudFile, FilesystemOffer
from provision.ops.catalog import refresh_alibaba as alibaba
from provision.ops.catalog import refresh_storage as storage

AZURE_PRICES_URL = "https://prices.azure.com/api/retail/prices"
GCP_SKUS_URL = "https://cloudbilling.googleapis.com/v1/services/6F81-5844-456A/skus"
#: Price List Query API endpoint region (the API is served from us-east-1, eu-central-1 and ap-south-1).
AWS_PRICING_REGION = "us-east-1"
#: Follow at most this many pages of one query (the Retail Prices API pages hold 100 rows).
MAX_PAGES = 50

#: GCP machine families -> (vCPU SKU, memory SKU, GPU SKU) description prefixes in the billing catalog.
#: The machine price is vcpus * vCPU + memory_gib * memory + gpus * GPU (GCP bills A2/A3 that way:
#: https://cloud.google.com/compute/gpus-pricing). These prefixes are matched case-insensitively.
GCP_SKU_PREFIXES: dict[str, tuple[str, str, str]] = {
    "a2-highgpu-8g": ("A2 Instance Core", "A2 Instance Ram", "Nvidia Tesla A100 GPU"),
    "a2-ultragpu-8g": ("A2 Instance Core", "A2 Instance Ram", "Nvidia Tesla A100 80GB GPU"),
    "a3-highgpu-8g": ("A3 Instance Core", "A3 Instance Ram", "Nvidia H100 80GB GPU"),
    "a3-megagpu-8g": ("A3Plus Instance Core", "A3Plus Instance Ram", "Nvidia H100 80GB Plus GPU"),
}

JsonGet = Callable[[str], Any]


@dataclass(frozen=True)
class PriceChange:
    """One price field of one row that the vendor's API reports differently from the catalog."""

    cloud: str
    item: str
    region: str
    field: str
    old: float | None
    new: float | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "cloud": self.cloud,
            "item": self.item,
            "region": self.region,
            "field": self.field,
            "old": self.old,
            "new": self.new,
        }


@dataclass
class RefreshResult:
    """What a refresh found: changes per field, clouds skipped (with why), rows checked, and notes: prices the
    vendor's answer did not give or gave in a form not used (unknown stays as the catalog has it, and is said)."""

    retrieved: date
    changes: list[PriceChange] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    checked: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "retrieved": self.retrieved.isoformat(),
            "changes": [c.as_dict() for c in self.changes],
            "skipped": dict(self.skipped),
            "checked": dict(self.checked),
            "notes": list(self.notes),
        }


class SourceUnavailable(Exception):
    """A price source cannot be reached or used here (no network, credentials or key)."""


def http_json(url: str, timeout: float = 30.0) -> Any:
    """GET ``url`` and parse its JSON body.

    Raises:
        SourceUnavailable: the network, DNS or the server failed.
    """
    request = urllib.request.Request(url, headers={"Accept": "application/json", "User-Agent": "provision-catalog"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310  # fixed https URLs
            return json.load(response)
    except (OSError, ValueError) as e:
        raise SourceUnavailable(f"GET {url.split('?')[0]} failed: {e}") from None


# --------------------------------------------------------------------------------------------- azure


def azure_vm_prices(get: JsonGet, sku: str) -> dict[str, dict[str, float]]:
    """``{region: {"on-demand": usd, "spot": usd}}`` for the Linux pay-as-you-go rows of VM size ``sku``."""
    query = f"serviceName eq 'Virtual Machines' and armSkuName eq '{sku}' and priceType eq 'Consumption'"
    url: str | None = f"{AZURE_PRICES_URL}?{urllib.parse.urlencode({'$filter': query})}"
    out: dict[str, dict[str, float]] = {}
    for _ in range(MAX_PAGES):
        if not url:
            break
        page = get(url)
        for item in page.get("Items", []):
            name = f"{item.get('skuName', '')} {item.get('meterName', '')}"
            if "windows" in item.get("productName", "").lower() or "low priority" in name.lower():
                continue
            if item.get("unitOfMeasure") != "1 Hour" or item.get("currencyCode", "USD") != "USD":
                continue
            kind = "spot" if "spot" in name.lower() else "on-demand"
            region = item.get("armRegionName", "")
            price = float(item.get("retailPrice", item.get("unitPrice")))
            current = out.setdefault(region, {}).get(kind)
            out[region][kind] = price if current is None else min(current, price)
        url = page.get("NextPageLink")
    return out


def azure_netapp_prices(get: JsonGet, level: str) -> dict[str, float]:
    """``{region: usd per TiB-month}`` of an Azure NetApp Files service level (billed per GiB-hour)."""
    query = f"serviceName eq 'Azure NetApp Files' and meterName eq '{level} Capacity' and priceType eq 'Consumption'"
    page = get(f"{AZURE_PRICES_URL}?{urllib.parse.urlencode({'$filter': query})}")
    out = {}
    for item in page.get("Items", []):
        if item.get("unitOfMeasure") == "1 GiB/Hour" and item.get("currencyCode", "USD") == "USD":
            out[item["armRegionName"]] = round(float(item["retailPrice"]) * 1024 * 730, 2)
    return out


# --------------------------------------------------------------------------------------------- aws


def aws_on_demand(products: Iterable[str]) -> float | None:
    """The hourly on-demand USD price in a Price List ``GetProducts`` answer (JSON strings), or None."""
    prices = []
    for raw in products:
        doc = json.loads(raw)
        for term in doc.get("terms", {}).get("OnDemand", {}).values():
            for dim in term.get("priceDimensions", {}).values():
                if dim.get("unit") == "Hrs" and "USD" in dim.get("pricePerUnit", {}):
                    usd = float(dim["pricePerUnit"]["USD"])
                    if usd > 0:
                        prices.append(usd)
    return min(prices) if prices else None


@dataclass
class AwsSource:
    """The AWS calls a refresh makes, injectable for tests.

    ``fsx_products(region)`` answers ``GetProducts`` for ``AmazonFSx`` in ``region``; ``None``: not checked.
    """

    get_products: Callable[[str, str], list[str]]
    spot_prices: Callable[[str, str], list[float]]
    fsx_products: Callable[[str], list[str]] | None = None


def boto3_aws_source() -> AwsSource:
    """Price List and spot history through boto3 (needs AWS credentials; the Pricing API itself is free).

    Raises:
        SourceUnavailable: boto3 is not installed or no credentials are configured.
    """
    try:
        import boto3
        from botocore.exceptions import BotoCoreError, ClientError
    except ImportError:
        raise SourceUnavailable("boto3 is not installed: pip install 'provision[aws]'") from None
    session = boto3.Session()
    if session.get_credentials() is None:
        raise SourceUnavailable("no AWS credentials: the Price List Query API needs any AWS account's credentials")
    pricing = session.client("pricing", region_name=AWS_PRICING_REGION)

    def get_products(instance_type: str, region: str) -> list[str]:
        filters = [
            ("instanceType", instance_type),
            ("regionCode", region),
            ("operatingSystem", "Linux"),
            ("tenancy", "Shared"),
            ("preInstalledSw", "NA"),
            ("capacitystatus", "Used"),
        ]
        try:
            pages = pricing.get_paginator("get_products").paginate(
                ServiceCode="AmazonEC2", Filters=[{"Type": "TERM_MATCH", "Field": f, "Value": v} for f, v in filters]
            )
            return [p for page in pages for p in page.get("PriceList", [])]
        except (BotoCoreError, ClientError) as e:
            raise SourceUnavailable(f"pricing:GetProducts failed: {e}") from None

    def spot_prices(instance_type: str, region: str) -> list[float]:
        try:
            ec2 = session.client("ec2", region_name=region)
            history = ec2.describe_spot_price_history(
                InstanceTypes=[instance_type], ProductDescriptions=["Linux/UNIX"], MaxResults=100
            )
        except (BotoCoreError, ClientError) as e:
            raise SourceUnavailable(f"ec2:DescribeSpotPriceHistory failed in {region}: {e}") from None
        return [float(h["SpotPrice"]) for h in history.get("SpotPriceHistory", [])]

    def fsx_products(region: str) -> list[str]:
        try:
            return storage.boto3_fsx_products(pricing, region)
        except (BotoCoreError, ClientError) as e:
            raise SourceUnavailable(f"pricing:GetProducts (AmazonFSx) failed: {e}") from None

    return AwsSource(get_products=get_products, spot_prices=spot_prices, fsx_products=fsx_products)


# --------------------------------------------------------------------------------------------- gcp


def _usd(unit_price: dict[str, Any]) -> float:
    return int(unit_price.get("units", 0) or 0) + int(unit_price.get("nanos", 0) or 0) / 1e9


def gcp_sku_prices(get: JsonGet, key: str) -> list[dict[str, Any]]:
    """Every on-demand Compute Engine SKU: ``{"description", "regions", "usd_per_unit"}``."""
    out = []
    token = ""
    for _ in range(MAX_PAGES):
        params = {"key": key, "currencyCode": "USD", "pageSize": "5000"}
        if token:
            params["pageToken"] = token
        page = get(f"{GCP_SKUS_URL}?{urllib.parse.urlencode(params)}")
        for sku in page.get("skus", []):
            if sku.get("category", {}).get("usageType") != "OnDemand" or not sku.get("pricingInfo"):
                continue
            rates = sku["pricingInfo"][0].get("pricingExpression", {}).get("tieredRates", [])
            if not rates:
                continue
            out.append(
                {
                    "description": sku.get("description", ""),
                    "regions": tuple(sku.get("serviceRegions", [])),
                    "usd_per_unit": _usd(rates[-1].get("unitPrice", {})),
                }
            )
        token = page.get("nextPageToken", "")
        if not token:
            break
    return out


def gcp_machine_price(skus: list[dict[str, Any]], instance: Any, region: str) -> float | None:
    """vCPUs, memory and GPUs of ``instance`` at the family's SKUs in ``region``; None if one is missing."""
    prefixes = GCP_SKU_PREFIXES.get(instance.instance_type)
    if prefixes is None:
        return None
    parts = []
    for prefix in prefixes:
        hits = [
            s["usd_per_unit"]
            for s in skus
            if region in s["regions"] and s["description"].lower().startswith(prefix.lower() + " running in")
        ]
        if not hits:
            return None
        parts.append(min(hits))
    core, ram, gpu = parts
    return round(instance.vcpus * core + instance.memory_gib * ram + instance.gpus_per_node * gpu, 4)


# --------------------------------------------------------------------------------------------- refresh


@dataclass
class Sources:
    """Where prices come from; tests pass recorded responses."""

    get: JsonGet = http_json
    aws: Callable[[], AwsSource] = boto3_aws_source
    gcp_key: str | None = field(default_factory=lambda: os.environ.get("GOOGLE_API_KEY"))
    alibaba: Callable[[], alibaba.AlibabaSource] = alibaba.sdk_alibaba_source


def default_sources() -> Sources:
    """The live sources: the public APIs over HTTPS, boto3 for AWS, ``GOOGLE_API_KEY`` for GCP."""
    return Sources()


def _compare(result: RefreshResult, cloud: str, item: str, region: str, name: str, old: Any, new: Any) -> None:
    if new is not None and (old is None or abs(float(old) - float(new)) > 1e-6):
        result.changes.append(PriceChange(cloud, item, region, name, old, round(float(new), 6)))


def refresh(
    files: dict[str, CloudFile],
    clouds: Iterable[str] = CLOUDS,
    sources: Sources | None = None,
    today: date | None = None,
) -> RefreshResult:
    """Ask each cloud's price API for the rows in ``files`` and list every price that differs.

    Never raises for an unreachable source: that cloud lands in ``skipped`` with the reason.
    """
    src = sources or Sources()
    result = RefreshResult(retrieved=today or date.today())
    for cloud in clouds:
        f = files[cloud]
        try:
            if cloud == "azure":
                _refresh_azure(f, src, result)
            elif cloud == "aws":
                _refresh_aws(f, src, result)
            elif cloud == "gcp":
                _refresh_gcp(f, src, result)
            elif cloud == "alibaba":
                result.checked["alibaba"] = alibaba.refresh_alibaba(f, src.alibaba(), result, _compare)
        except (SourceUnavailable, alibaba.AlibabaUnavailable) as e:
            result.skipped[cloud] = str(e)
    return result


def _refresh_azure(f: CloudFile, src: Sources, result: RefreshResult) -> None:
    checked = 0
    for o in f.instances:
        prices = azure_vm_prices(src.get, o.instance_type)
        for region, offer in o.regions.items():
            got = prices.get(region, {})
            _compare(
                result,
                "azure",
                o.instance_type,
                region,
                "price_per_hour_usd",
                offer.price_per_hour_usd,
                got.get("on-demand"),
            )
            _compare(
                result,
                "azure",
                o.instance_type,
                region,
                "spot_price_per_hour_usd",
                offer.spot_price_per_hour_usd,
                got.get("spot"),
            )
            checked += 1
        for region in sorted(set(prices) - set(o.regions)):
            _compare(
                result, "azure", o.instance_type, region, "price_per_hour_usd", None, prices[region].get("on-demand")
            )
    for fs in f.filesystems:
        if fs.kind == "netapp":
            # Catalog figures are East US; the API lists every region.
            east = azure_netapp_prices(src.get, fs.tier).get("eastus")
            _compare(
                result,
                "azure",
                f"netapp/{fs.tier}",
                "eastus",
                "price_per_tib_month_usd",
                fs.price_per_tib_month_usd,
                east,
            )
            checked += 1
    checked += _refresh_amlfs(f, src, result)
    result.checked["azure"] = checked


def _storage_region(cloud: str, fs: FilesystemOffer) -> str:
    """The one region a storage row's price is read for: its own ``priced_regions[0]``, else the reference."""
    return fs.priced_regions[0] if fs.priced_regions else storage.REFERENCE_REGION[cloud]


def _refresh_amlfs(f: CloudFile, src: Sources, result: RefreshResult) -> int:
    rows = [fs for fs in f.filesystems if fs.kind == "amlfs"]
    checked = 0
    for region in sorted({_storage_region("azure", fs) for fs in rows}):
        here = [fs for fs in rows if _storage_region("azure", fs) == region]
        got = storage.azure_lustre_prices(src.get, region, [fs.tier for fs in here])
        result.notes.extend(f"azure amlfs {region}: {p}" for p in got.problems)
        for fs in here:
            new = got.prices.get(fs.tier)
            if new is None and not any(p.startswith(f"{fs.tier}:") for p in got.problems):
                result.notes.append(
                    f"azure amlfs/{fs.tier} {region}: no meter in the Retail Prices answer "
                    f"({got.seen} Azure Managed Lustre rows read); the catalog keeps "
                    f"{'no price' if fs.price_per_tib_month_usd is None else fs.price_per_tib_month_usd}"
                )
            item = f"amlfs/{fs.tier}"
            _compare(result, "azure", item, region, "price_per_tib_month_usd", fs.price_per_tib_month_usd, new)
            checked += 1
    return checked


def _refresh_aws(f: CloudFile, src: Sources, result: RefreshResult) -> None:
    aws = src.aws()
    checked = 0
    for o in f.instances:
        for region, offer in o.regions.items():
            on_demand = aws_on_demand(aws.get_products(o.instance_type, region))
            spots = aws.spot_prices(o.instance_type, region)
            _compare(result, "aws", o.instance_type, region, "price_per_hour_usd", offer.price_per_hour_usd, on_demand)
            _compare(
                result,
                "aws",
                o.instance_type,
                region,
                "spot_price_per_hour_usd",
                offer.spot_price_per_hour_usd,
                min(spots) if spots else None,
            )
            checked += 1
    checked += _refresh_fsx(f, aws, result)
    result.checked["aws"] = checked


def _refresh_fsx(f: CloudFile, aws: AwsSource, result: RefreshResult) -> int:
    rows = [fs for fs in f.filesystems if fs.kind == "fsx-lustre" and storage.fsx_row_keys(fs)]
    if aws.fsx_products is None:
        result.notes.append("aws fsx-lustre: not checked (this AWS source reads no AmazonFSx price list)")
        return 0
    checked = 0
    for region in sorted({_storage_region("aws", fs) for fs in rows}):
        try:
            got = storage.fsx_lustre_prices(aws.fsx_products(region), region)
        except SourceUnavailable as e:
            result.notes.append(f"aws fsx-lustre {region}: not checked ({e})")
            continue
        result.notes.extend(f"aws fsx-lustre {region}: {p}" for p in got.problems)
        for fs in (fs for fs in rows if _storage_region("aws", fs) == region):
            for name, key in storage.fsx_row_keys(fs).items():
                old, new = storage.fsx_row_price(fs, name), got.prices.get(key)
                if new is None and not any(p.startswith(f"{key}:") for p in got.problems):
                    result.notes.append(
                        f"aws fsx-lustre/{fs.tier} {name} {region}: no {key} SSD storage row in the Price List "
                        f"answer ({got.seen} Lustre SSD storage rows read); the catalog keeps "
                        f"{'no price' if old is None else old}"
                    )
                _compare(result, "aws", f"fsx-lustre/{fs.tier}", region, name, old, new)
                checked += 1
    return checked


def _refresh_gcp(f: CloudFile, src: Sources, result: RefreshResult) -> None:
    if not src.gcp_key:
        raise SourceUnavailable("no GOOGLE_API_KEY: the Cloud Billing Catalog API needs an API key")
    skus = gcp_sku_prices(src.get, src.gcp_key)
    checked = 0
    for o in f.instances:
        if "on-demand" not in o.consumption:
            continue
        for region, offer in o.regions.items():
            _compare(
                result,
                "gcp",
                o.instance_type,
                region,
                "price_per_hour_usd",
                offer.price_per_hour_usd,
                gcp_machine_price(skus, o, region),
            )
            checked += 1
    result.checked["gcp"] = checked


# --------------------------------------------------------------------------------------------- writing


def apply_changes(data_dir: Path, result: RefreshResult) -> list[Path]:
    """Write ``result``'s prices into the catalog files under ``data_dir``; returns the files changed.

    Each changed file gets ``version`` = the retrieval date and, on every changed row, a source naming the API
    and the date. Comment lines above the first key are kept; the rest is re-emitted by PyYAML.
    """
    by_cloud: dict[str, list[PriceChange]] = {}
    for c in result.changes:
        by_cloud.setdefault(c.cloud, []).append(c)
    written = []
    for cloud, changes in sorted(by_cloud.items()):
        path = data_dir / f"{cloud}.yaml"
        text = path.read_text(encoding="utf-8")
        header = "".join(line for line in text.splitlines(keepends=True) if line.startswith("#"))
        doc = yaml.safe_load(text)
        for c in changes:
            _apply(doc, c, result.retrieved)
        doc["version"] = result.retrieved.isoformat()
        CloudFile.model_validate(doc)  # never write a file the loader would refuse
        body = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=120)
        path.write_text(header + body, encoding="utf-8")
        written.append(path)
    return written


_API_REF = {
    "azure": AZURE_PRICES_URL,
    "aws": "AWS Price List Query API (pricing:GetProducts) and ec2:DescribeSpotPriceHistory",
    "aws-storage": "AWS Price List Query API (pricing:GetProducts, ServiceCode AmazonFSx)",
    "gcp": GCP_SKUS_URL,
    "alibaba": alibaba.API_REF,
}


def _apply(doc: dict[str, Any], c: PriceChange, retrieved: date) -> None:
    storage_row = "/" in c.item
    source = {
        "ref": _API_REF["aws-storage" if storage_row and c.cloud == "aws" else c.cloud],
        "retrieved": retrieved.isoformat(),
        "covers": f"prices in {c.region} (provision catalog refresh)"
        if storage_row
        else "prices (provision catalog refresh)",
    }
    if storage_row:
        kind, tier = c.item.split("/", 1)
        for fs in doc["filesystems"]:
            if fs["kind"] == kind and fs["tier"] == tier:
                _apply_storage(fs, c)
                _add_source(fs, source)
        return
    for row in doc["instances"]:
        if row["instance_type"] == c.item:
            region = row["regions"].setdefault(c.region, {"zones": []})
            region[c.field] = c.new
            _add_source(row, source)


def _apply_storage(fs: dict[str, Any], c: PriceChange) -> None:
    """Set one storage price and scope it: a price read in one region holds there, not everywhere.

    A row that names its regions keeps them (the refresh read the first of them, ``_storage_region``); a row that
    had no price at all gets this region only; a row priced before for every region (``priced_regions`` empty,
    its notes say where the figure is from) keeps that scope.
    """
    had_price = fs.get("price_per_tib_month_usd") is not None or bool(fs.get("price_per_tib_month_by_throughput"))
    tier = storage.field_throughput(c.field)
    if tier is not None:
        fs.setdefault("price_per_tib_month_by_throughput", {})[tier] = c.new
    else:
        fs[c.field] = c.new
    if not fs.get("priced_regions") and not had_price:
        fs["priced_regions"] = [c.region]


def _add_source(row: dict[str, Any], source: dict[str, str]) -> None:
    kept = [s for s in row.get("sources", []) if s.get("ref") != source["ref"]]
    row["sources"] = [*kept, source]
