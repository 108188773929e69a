"""GCP deploy blockers and security defaults from the 2026-12-01 review (issues 11 and 12), through the mocked graph.

Each test failed before its fix: Parallelstore sizes the API refuses, physical names over 63 characters
for long cluster names, a private-services connection whose delete can strand the VPC, service-account
ids that collide, one getInstance read per node, a local user with a static key beside OS Login, and an
apt source added with trusted=yes.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from conftest import preview, shipped_preview, stack_spec
from test_gcp_graph import KEY, LUSTRE, gspec

from provision.clouds.gcp.adapter import GcpAdapter
from provision.clouds.gcp.layout import service_account_id
from provision.spec import load_spec
from provision.spec.errors import SpecError

PARALLELSTORE = "gcp:parallelstore/instance:Instance"
CONNECTION = "gcp:servicenetworking/connection:Connection"
TEMPLATE = "gcp:compute/regionInstanceTemplate:RegionInstanceTemplate"
SERVICE_ACCOUNT = "gcp:serviceaccount/account:Account"
#: RFC 1035 names of 1-63 characters, as compute v1 documents for every resource name.
RFC1035 = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
#: Pulumi autonaming: the logical name plus "-" and 7 random hex characters.
AUTONAME_SUFFIX = 8
#: Resources whose physical name comes from ``name`` (or autonaming) and must follow RFC 1035 in compute v1.
NAMED = (
    "gcp:compute/network:Network",
    "gcp:compute/subnetwork:Subnetwork",
    "gcp:compute/firewall:Firewall",
    "gcp:compute/router:Router",
    "gcp:compute/routerNat:RouterNat",
    "gcp:compute/resourcePolicy:ResourcePolicy",
    "gcp:compute/globalAddress:GlobalAddress",
    "gcp:compute/regionInstanceTemplate:RegionInstanceTemplate",
    "gcp:compute/instanceGroupManager:InstanceGroupManager",
    "gcp:compute/resizeRequest:ResizeRequest",
    "gcp:filestore/instance:Instance",
)
STACKS = ("gcp-a3-64", "gcp-a3high-16", "gcp-a3ultra-64", "gcp-a3-ci")
LONGEST = "a" * 17 + "-" + "b" * 22  # 40 characters: the longest name the spec allows


def physical_name(resource: Any) -> str:
    return str(resource.inputs.get("name") or f"{resource.name}-{'f' * (AUTONAME_SUFFIX - 1)}")


# ------------------------------------------------------------------ Parallelstore sizes


def test_shipped_parallelstore_stack_asks_for_a_capacity_the_api_accepts() -> None:
    result = shipped_preview("gcp-a3high-16")
    gib = int(result.one(PARALLELSTORE).inputs["capacityGib"])
    # parallelstore v1 Instance.capacityGib: "between 12000 and 100000, in multiples of 4000".
    assert 12000 <= gib <= 100000 and gib % 4000 == 0


@pytest.mark.parametrize(
    ("size", "ok"), [(12000, True), (16000, True), (100000, True), (12288, False), (104000, False)]
)
def test_parallelstore_sizes_follow_the_api_rule(size: int, ok: bool) -> None:
    shared = {"kind": "parallelstore", "size_gib": size}
    # A3 High with TCPX needs an image with the TCPX kernel (the stock one is refused).
    image = {"id": "projects/my-ml-project/global/images/a3high-tcpx-ubuntu2204", "versions": {"os": "ubuntu-22.04"}}
    spec = gspec(instance_type="a3-highgpu-8g", storage={"shared": shared}, image=image)
    if ok:
        assert GcpAdapter().plan(spec).storage.size_gib == size
    else:
        with pytest.raises(SpecError) as err:
            GcpAdapter().plan(spec)
        assert any(p.path.startswith("storage.shared") for p in err.value.problems)


# ------------------------------------------------------------------ names


@pytest.mark.parametrize("stack", STACKS)
def test_every_physical_name_fits_rfc1035_for_the_longest_cluster_name(stack: str) -> None:
    base = stack_spec(stack)
    spec = base.model_copy(update={"name": LONGEST})
    result = preview(load_spec(spec.model_dump(mode="json", exclude_none=True)))
    names = [(r.type, physical_name(r)) for r in result.resources if r.custom and r.type in NAMED]
    assert len(names) > 5
    assert [n for n in names if not RFC1035.match(n[1])] == []


def test_short_names_keep_autonaming_so_deployed_clusters_are_not_renamed() -> None:
    result = preview(gspec(storage={"shared": LUSTRE}))
    assert all("name" not in r.inputs for r in result.resources if r.type in NAMED)


# ------------------------------------------------------------------ teardown of private services access


def test_private_services_connection_removes_its_peering_on_delete() -> None:
    result = preview(gspec(storage={"shared": LUSTRE}))
    # pulumi-gcp servicenetworking.Connection deletion_policy: REMOVE_PEERING removes the peering when the API
    # refuses the delete ("Producer services are still using this connection"), so the VPC can be deleted.
    assert result.one(CONNECTION).inputs["deletionPolicy"] == "REMOVE_PEERING"


# ------------------------------------------------------------------ service-account ids


def test_clusters_sharing_a_long_prefix_get_distinct_service_accounts() -> None:
    a, b = "research-team-llm-train-a", "research-team-llm-train-b"
    assert a[:23] == b[:23]
    ids = {service_account_id(a), service_account_id(b)}
    assert len(ids) == 2
    for name in (a, b, LONGEST, "ab"):
        sid = service_account_id(name)
        # IAM: 6-30 characters, ^[a-z](?:[-a-z0-9]{4,28}[a-z0-9])$ (serviceaccount.Account docstring).
        assert re.fullmatch(r"[a-z][-a-z0-9]{4,28}[a-z0-9]", sid), sid


def test_short_cluster_names_keep_their_service_account_id() -> None:
    # Changing the id replaces the account; names that never collided keep theirs.
    assert service_account_id("llm-train") == "llm-train-nodes"


# ------------------------------------------------------------------ node addresses


def test_hostfile_comes_from_one_list_call_and_internal_dns_names() -> None:
    result = preview(gspec(nodes=64))
    tokens = [c[0] for c in result.calls]
    assert tokens.count("gcp:compute/getInstanceGroup:getInstanceGroup") == 1
    assert "gcp:compute/getInstance:getInstance" not in tokens
    hosts = result.outputs["hosts"]
    assert len(hosts) == len(set(hosts)) == 64
    assert hosts == sorted(hosts)
    # Zonal internal DNS: VM_NAME.ZONE.c.PROJECT_ID.internal (Compute Engine "Internal DNS").
    assert all(re.fullmatch(r"llm-train-[a-z0-9]{4}\.us-central1-a\.c\.my-ml-project\.internal", h) for h in hosts)
    assert result.outputs["hostfile"].splitlines()[0] == f"{hosts[0]} slots=8"
    # The zonal name is the only one that resolves whatever the project's default DNS type.
    assert result.one(TEMPLATE).inputs["metadata"]["VmDnsSetting"] == "ZonalOnly"


# ------------------------------------------------------------------ OS Login


def _user_data(result: Any) -> str:
    return str(result.one(TEMPLATE).inputs["metadata"]["user-data"])


def test_os_login_is_the_only_way_in_by_default() -> None:
    result = preview(gspec())
    metadata = result.one(TEMPLATE).inputs["metadata"]
    assert metadata["enable-oslogin"] == "TRUE"
    assert "ssh-keys" not in metadata
    script = _user_data(result)
    assert "NOPASSWD" not in script and KEY.split()[1] not in script and "useradd" not in script
    assert any("OS Login" in w for w in result.plan.warnings)


def test_metadata_keys_are_an_explicit_choice_that_turns_os_login_off() -> None:
    result = preview(gspec(gcp={"project": "my-ml-project", "os_login": False}))
    metadata = result.one(TEMPLATE).inputs["metadata"]
    assert metadata["enable-oslogin"] == "FALSE"
    assert metadata["block-project-ssh-keys"] == "TRUE"
    assert metadata["ssh-keys"] == f"ubuntu:{KEY}"
    assert "NOPASSWD" not in _user_data(result)


def test_tcpxo_apt_source_is_verified_with_googles_key() -> None:
    script = _user_data(preview(gspec()))
    sources = [line for line in script.splitlines() if "deb " in line and "gpudirect-tcpxo" in line]
    assert sources
    assert all("trusted=yes" not in s and "signed-by=/etc/apt/keyrings/gcp-ar-repo.gpg" in s for s in sources)


def test_gcp_spec_refuses_unknown_login_values() -> None:
    with pytest.raises(Exception):  # noqa: B017  # pydantic's ValidationError or SpecError, both name the field
        load_spec(
            {
                "name": "x1",
                "cloud": "gcp",
                "region": "us-central1",
                "gpu": "H100",
                "nodes": 1,
                "access": {"ssh_public_keys": [KEY]},
                "gcp": {"os_login": "maybe"},
            }
        )
