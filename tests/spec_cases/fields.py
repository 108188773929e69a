"""Unknown fields, bad per-cloud options, and several mistakes at once."""

from __future__ import annotations

from spec_cases.base import DELETE, VALID_KEY, C

UNKNOWN_FIELDS = [
    C("field-top-regoin", "aws", {"regoin": "us-east-1"}, "regoin", "not a known field", "did you mean 'region'?"),
    C("field-top-instance", "gcp", {"instance": "a3-megagpu-8g"}, "instance", fix="did you mean 'instance_type'"),
    C("field-top-tag", "azure", {"tag": {"a": "b"}}, "tag", fix="did you mean 'tags'"),
    C("field-top-lifetme", "alibaba", {"lifetme": {"ttl": "6h"}}, "lifetme", fix="did you mean 'lifetime'"),
    C("field-top-unrelated", "aws", {"zzzzzz": "blue"}, "zzzzzz", "not a known field (known: name, cloud", "remove it"),
    C("field-storage-shard", "gcp", {"storage.shard": {}}, "storage.shard", fix="did you mean 'shared'?"),
    C(
        "field-shared-sise",
        "aws",
        {"storage.shared.sise_gib": 2400},
        "storage.shared.sise_gib",
        fix="did you mean 'size_gib'?",
    ),
    C("field-shared-tiers", "azure", {"storage.shared.tiers": "x"}, "storage.shared.tiers", fix="did you mean 'tier'?"),
    C(
        "field-scratch-raid",
        "alibaba",
        {"storage.scratch.raid": True},
        "storage.scratch.raid",
        fix="did you mean 'raid0'?",
    ),
    C(
        "field-image-version",
        "aws",
        {"image.version": {"nccl": "2.23"}},
        "image.version",
        fix="did you mean 'versions'?",
    ),
    C(
        "field-access-ssh-public-key",
        "gcp",
        {"access.ssh_public_key": VALID_KEY},
        "access.ssh_public_key",
        fix="did you mean 'ssh_public_keys'",
    ),
    C(
        "field-access-allowed-cidr",
        "azure",
        {"access.allowed_cidr": ["10.0.0.0/8"]},
        "access.allowed_cidr",
        fix="did you mean 'allowed_cidrs'",
    ),
    C("field-capacity-typ", "aws", {"capacity.typ": "spot"}, "capacity.typ", fix="did you mean 'type'?"),
    C(
        "field-capacity-reservation-id",
        "gcp",
        {"capacity.reservation_id": "r"},
        "capacity.reservation_id",
        fix="did you mean 'reservation'?",
    ),
    C(
        "field-lifetime-max-cost",
        "azure",
        {"lifetime.max_cost": 500},
        "lifetime.max_cost",
        fix="did you mean 'max_cost_usd'?",
    ),
    C("field-lifetime-tll", "alibaba", {"lifetime.tll": "6h"}, "lifetime.tll", fix="did you mean 'ttl'?"),
    C("field-gcp-projet", "gcp", {"gcp.projet": "my-project"}, "gcp.projet", fix="did you mean 'project'?"),
    C("field-aws-vpc", "aws", {"aws.vpc": "vpc-0123456789abcdef0"}, "aws.vpc", fix="did you mean 'vpc_id'"),
    C(
        "field-azure-max-island",
        "azure",
        {"azure.max_island": 50},
        "azure.max_island",
        fix="did you mean 'max_island_nodes'",
    ),
    C(
        "field-alibaba-vpc-cidrs",
        "alibaba",
        {"alibaba.vpc_cidrs": "10.0.0.0/16"},
        "alibaba.vpc_cidrs",
        fix="did you mean 'vpc_cidr'?",
    ),
]

CLOUD_OPTIONS = [
    C("options-aws-on-gcp", "gcp", {"aws": {}}, "aws", "holds aws options on a gcp cluster", "move them under 'gcp:'"),
    C("options-gcp-on-aws", "aws", {"gcp": {"project": "my-project"}}, "gcp", "holds gcp options on a aws cluster"),
    C("options-alibaba-on-azure", "azure", {"alibaba": {"vpc_cidr": "10.0.0.0/16"}}, "alibaba", "on a azure cluster"),
    C("options-azure-on-alibaba", "alibaba", {"azure": {"split_islands": True}}, "azure", "on a alibaba cluster"),
    C("options-two-foreign", "aws", {"gcp": {}, "azure": {}}, ("azure", "gcp")),
    C("option-gcp-project-name", "gcp", {"gcp.project": "My Project"}, "gcp.project", "does not match", "project id"),
    C("option-aws-vpc-id", "aws", {"aws.vpc_id": "vpc-xyz"}, "aws.vpc_id", fix="vpc-0123456789abcdef0"),
    C("option-aws-subnet-id", "aws", {"aws.subnet_id": "subnet-1"}, "aws.subnet_id", fix="subnet-0123456789abcdef0"),
    C(
        "option-aws-root-volume-small",
        "aws",
        {"aws.root_volume_gib": 50},
        "aws.root_volume_gib",
        "greater than or equal to 100",
    ),
    C("option-aws-allocation", "aws", {"aws.allocation": "spot-fleet"}, "aws.allocation", fix="did you mean 'fleet'?"),
    C(
        "option-azure-island-zero",
        "azure",
        {"azure.max_island_nodes": 0},
        "azure.max_island_nodes",
        "greater than or equal to 1",
    ),
    C(
        "option-azure-island-huge",
        "azure",
        {"azure.max_island_nodes": 1000},
        "azure.max_island_nodes",
        "less than or equal to 300",
    ),
    C("options-not-mapping", "gcp", {"gcp": "my-project"}, "gcp", "valid dictionary", "mapping"),
]

MULTI = [
    C(
        "multi-three-shape",
        "aws",
        {"name": "Bad_Name", "lifetime.ttl": "10m", "capacity.typ": "spot"},
        ("capacity.typ", "lifetime.ttl", "name"),
    ),
    C(
        "multi-shape-and-cross-field",
        "gcp",
        {"name": "x", "gpus": DELETE, "aws": {}, "zone": "europe-west4-a"},
        ("aws", "gpus", "name", "zone"),
    ),
    C(
        "multi-three-catalog",
        "aws",
        {"gpus": 12, "fabric": "infiniband", "storage.shared.size_gib": 1000},
        ("fabric", "gpus", "storage.shared.size_gib"),
        stage="catalog",
    ),
    C(
        "multi-catalog-gpu-region",
        "gcp",
        {"gpu": "H10", "region": "us-centrl1", "storage.shared.kind": "amlfs"},
        ("gpu", "region", "storage.shared.kind"),
        stage="catalog",
    ),
]
