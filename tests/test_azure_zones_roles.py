"""Azure regions without availability zones, and the deploy permissions of the expiry role."""

from __future__ import annotations

from test_azure_plan import plan, problems

from provision.catalog import cloud_facts
from provision.clouds.azure import strict
from provision.clouds.strict import Resource

AMLFS = "azure-native:storagecache:AmlFilesystem"


def test_the_catalog_records_westus_as_a_region_without_zones() -> None:
    assert "westus" in cloud_facts("azure").regions_without_zones
    assert "eastus" not in cloud_facts("azure").regions_without_zones


def test_a_zone_in_a_region_without_zones_is_refused_naming_the_field() -> None:
    found = problems(region="westus", zone="1")
    assert "zone" in found
    assert "westus has no availability zones" in found["zone"].rule
    assert "drop zone" in found["zone"].fix


def test_the_default_filesystem_zone_does_not_apply_where_there_are_no_zones() -> None:
    p = plan(region="westus")
    assert p.extra.filesystem is not None and p.extra.filesystem.zone is None
    assert not [w for w in p.warnings if "availability zone" in w]
    # Where the region has zones the default still applies (and warns that the nodes have none).
    assert plan(region="eastus").extra.filesystem.zone == "1"


def test_the_strict_cloud_refuses_a_zonal_resource_where_there_are_no_zones() -> None:
    zonal = Resource(AMLFS, "x-lustre", {"location": "westus", "zones": ["1"]})
    (v,) = strict.zone_rules(zonal)
    assert (v.field, v.value) == ("zones", ["1"]) and "regions-list" in v.source
    assert strict.zone_rules(Resource(AMLFS, "x-lustre", {"location": "westus"})) == []
    assert strict.zone_rules(Resource(AMLFS, "x-lustre", {"location": "eastus", "zones": ["1"]})) == []
