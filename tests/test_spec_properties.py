"""Property tests of spec loading.

* Every accepted spec round-trips: ``model_dump(mode="json")`` -> ``load_spec`` -> an equal spec.
* Every rejected spec raises ``SpecError`` (never another exception), each problem with a path,
  a rule and a fix, serialisable to JSON, and no private key material in the message.
* The catalog checks and the cost estimate never crash on an accepted spec.

Each property runs 100 examples in the suite (hypothesis draws new ones on every run);
``PROVISION_PROPERTY_EXAMPLES`` sets the count for the long run: ``PROVISION_PROPERTY_EXAMPLES=1000 pytest
tests/test_spec_properties.py`` (.ci/run passes it on to the suite).
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
from datetime import timedelta
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from test_spec_errors import PRIVATE_KEYS, SECRET_MATERIAL, public_key

from provision.catalog import load_catalog
from provision.planning.cost import estimate
from provision.planning.resolve import resolve
from provision.spec import (
    LABEL_KEY_PATTERN,
    LABEL_VALUE_PATTERN,
    MAX_COST_USD,
    NAME_PATTERN,
    RESERVED_TAG_PREFIX,
    ClusterSpec,
    load_spec,
)
from provision.spec.cidrs import world_wide
from provision.spec.errors import BudgetError, ProblemCollector, SpecError

CATALOG = load_catalog()
CLOUDS = ("aws", "gcp", "azure", "alibaba")
EXAMPLES = int(os.environ.get("PROVISION_PROPERTY_EXAMPLES", "100"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ------------------------------------------------------------------------------------ strategies

valid_names = st.from_regex(NAME_PATTERN, fullmatch=True)
any_names = st.one_of(
    valid_names,
    st.sampled_from(["LLM-train", "a", "llm-", "1llm", "llm_train", "x" * 41, "", "llm train", "-x"]),
    st.text(max_size=45),
    st.integers(),
)

catalog_regions = sorted({r for o in CATALOG.instances for r in o.regions})
regions_for = {c: sorted({r for o in CATALOG.instances_for(c) for r in o.regions}) or ["us-east-1"] for c in CLOUDS}
gpu_names = sorted({n for g in CATALOG.gpus for n in (g.name, *g.aliases)})

any_gpus = st.one_of(
    st.none(),
    st.integers(min_value=-16, max_value=70_000),
    st.sampled_from([8, 16, 64, 12, 0, "64", 8.0, 8.5, True, "lots", 10**30]),
)
unit_names = ["", "GiB", "TiB", "GB", "TB", "Ti", "G", "MiB", "PiB", "B", "XB", "tib"]
sizes = st.one_of(
    st.none(),
    st.integers(min_value=-10, max_value=10**9),
    st.floats(allow_nan=True, allow_infinity=True),
    st.builds(lambda n, u: f"{n}{u}", st.integers(min_value=0, max_value=10**7), st.sampled_from(unit_names)),
    st.builds(lambda n, u: f"{n:.3f}{u}", st.floats(0, 1e6), st.sampled_from(unit_names)),
    st.text(max_size=12),
)
valid_sizes = st.one_of(
    st.integers(min_value=1, max_value=100 * 1024**2),
    st.builds(lambda n: f"{n}TiB", st.integers(min_value=1, max_value=100 * 1024)),
    st.builds(lambda n: f"{n}GB", st.integers(min_value=2, max_value=10**6)),
)
duration_units = ["d", "h", "m", "s", "x", ""]
durations = st.one_of(
    st.none(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-100, max_value=10**6),
    st.builds(lambda n, u: f"{n}{u}", st.integers(min_value=-5, max_value=10**5), st.sampled_from(duration_units)),
    st.builds(lambda h, m: f"{h}h{m}m", st.integers(0, 3000), st.integers(0, 59)),
    st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=200)),
    st.text(max_size=10),
)
valid_durations = st.one_of(
    st.builds(lambda m: f"{m}m", st.integers(min_value=30, max_value=90 * 24 * 60)),
    st.builds(lambda d, h: f"{d}d{h}h", st.integers(1, 89), st.integers(0, 23)),
    st.floats(min_value=0.5, max_value=90 * 24),  # a number means hours
    st.timedeltas(min_value=timedelta(minutes=30), max_value=timedelta(days=90)),
)
money = st.one_of(
    st.none(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-10, max_value=10**13),
    st.sampled_from([True, "5000", "lots"]),
)
valid_money = st.floats(min_value=0.01, max_value=MAX_COST_USD)

label_keys = st.from_regex(LABEL_KEY_PATTERN, fullmatch=True).filter(lambda k: not k.startswith(RESERVED_TAG_PREFIX))
label_values = st.from_regex(LABEL_VALUE_PATTERN, fullmatch=True)
any_tags = st.one_of(
    st.dictionaries(label_keys, label_values, max_size=4),
    st.dictionaries(
        st.one_of(label_keys, st.text(max_size=8), st.just("provision-x")), st.text(max_size=8), max_size=4
    ),
    st.dictionaries(label_keys, st.integers(), max_size=2),
)


def _network(version: int, value: int, prefix: int) -> str:
    bits = 32 if version == 4 else 128
    prefix = min(prefix, bits)
    net = ipaddress.ip_network((value % (2**bits), prefix), strict=False)
    return str(net)


valid_cidrs = st.builds(
    _network, st.sampled_from([4, 6]), st.integers(min_value=0, max_value=2**128 - 1), st.integers(1, 128)
)
any_cidrs = st.lists(
    st.one_of(
        valid_cidrs,
        st.sampled_from(["0.0.0.0/0", "::/0", "10.0.0.1/8", "10.0.0.0/33", "office", ""]),
        st.text(max_size=20),
    ),
    max_size=3,
)
valid_keys = st.builds(public_key, st.integers(0, 255), st.from_regex(r"[a-z]{1,8}@[a-z]{1,8}", fullmatch=True))
any_keys = st.lists(
    st.one_of(
        valid_keys,
        st.sampled_from(sorted(PRIVATE_KEYS.values())),
        st.sampled_from(["ssh-ed25519", "ssh-dss AAAA", "AAAAC3Nz", "ssh-ed25519 AAAA$$"]),
        st.text(max_size=30),
    ),
    max_size=3,
)
capacities = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["on-demand", "spot", "reservation", "capacity-block", "flex-start", "ondemand"])},
        optional={
            "reservation": st.sampled_from(["r-1", "projects/p/reservations/r", "bad id!", ""]),
            "max_price_per_hour_usd": money,
        },
    ),
)


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


@st.composite
def any_specs(draw: st.DrawFn) -> dict[str, Any]:
    """Mostly plausible specs, with a few fields broken at random."""
    cloud = draw(st.one_of(st.sampled_from(CLOUDS), st.sampled_from(["gpc", "oracle", ""])))
    region = draw(st.one_of(st.sampled_from(regions_for.get(cloud, catalog_regions)), st.text(max_size=12)))
    data: dict[str, Any] = {
        "name": draw(any_names),
        "cloud": cloud,
        "region": region,
        "zone": draw(st.one_of(st.none(), st.just(f"{region}-a"), st.text(max_size=8))),
        "gpu": draw(st.one_of(st.none(), st.sampled_from(gpu_names), st.sampled_from(["H100:64", "H100:x", "X9"]))),
        "gpus": draw(any_gpus),
        "nodes": draw(st.one_of(st.none(), st.integers(min_value=-2, max_value=200))),
        "instance_type": draw(st.one_of(st.none(), st.sampled_from([o.instance_type for o in CATALOG.instances]))),
        "fabric": draw(st.one_of(st.none(), st.sampled_from(["auto", "efa", "tcpxo", "rdma", "infiniband", "ib"]))),
        "owner": draw(st.one_of(st.none(), label_values, st.text(max_size=8))),
        "tags": draw(st.one_of(st.none(), any_tags)),
        "capacity": draw(capacities),
    }
    shared = draw(
        st.one_of(
            st.none(),
            st.fixed_dictionaries(
                {},
                optional={
                    "kind": st.sampled_from(["auto", "none", "fsx-lustre", "managed-lustre", "amlfs", "cpfs", "x"]),
                    "size_gib": sizes,
                    "throughput_mbps_per_tib": st.one_of(st.none(), st.integers(-5, 2000)),
                    "mount": st.sampled_from(["/shared", "shared", "/mnt/data"]),
                },
            ),
        )
    )
    if shared is not None:
        data["storage"] = {"shared": _drop_none(shared)}
    data["lifetime"] = _drop_none(
        {"ttl": draw(durations), "max_cost_usd": draw(money), "hourly_price_usd": draw(st.one_of(st.none(), money))}
    )
    data["access"] = _drop_none(
        {
            "allow_world_ssh": draw(st.one_of(st.none(), st.booleans())),
            "ssh_public_keys": draw(st.one_of(st.none(), any_keys)),
            "allowed_cidrs": draw(st.one_of(st.none(), any_cidrs)),
        }
    )
    if draw(st.integers(0, 9)) == 0:
        data[draw(st.sampled_from(["regoin", "gpu_count", "aws", "gcp"]))] = {}
    return _drop_none(data)


@st.composite
def valid_specs(draw: st.DrawFn) -> dict[str, Any]:
    """Specs that satisfy every shape and cross-field rule (the catalog may still refuse them)."""
    cloud = draw(st.sampled_from(CLOUDS))
    region = draw(st.sampled_from(regions_for[cloud]))
    data: dict[str, Any] = {"name": draw(valid_names), "cloud": cloud, "region": region}
    if cloud != "azure" and draw(st.booleans()):
        data["zone"] = f"{region}-{draw(st.sampled_from('abc'))}"
    count = draw(st.integers(min_value=1, max_value=64)) * 8
    gpu = draw(st.sampled_from(gpu_names))
    if draw(st.booleans()):
        data["gpu"] = f"{gpu}:{count}"
    else:
        data["gpu"] = gpu
        if draw(st.booleans()):
            data["gpus"] = count
        else:
            data["nodes"] = count // 8
    if draw(st.booleans()):
        data["storage"] = {
            "shared": _drop_none(
                {
                    "kind": draw(st.sampled_from(["auto", "none", "fsx-lustre", "managed-lustre", "amlfs", "cpfs"])),
                    "size_gib": draw(st.one_of(st.none(), valid_sizes)),
                    "throughput_mbps_per_tib": draw(st.one_of(st.none(), st.sampled_from([125, 250, 500, 1000]))),
                    "retain": draw(st.booleans()),
                }
            )
        }
    world = draw(st.booleans())
    cidrs = draw(st.lists(valid_cidrs, max_size=3))
    data["access"] = {
        "ssh_public_keys": draw(st.lists(valid_keys, max_size=2)),
        "allowed_cidrs": cidrs + (["0.0.0.0/0"] if world else []),
        # Short prefixes (::/1, 0.0.0.0/1: more public addresses than a /8) are world access too and need the opt-in.
        "allow_world_ssh": world or world_wide(cidrs),
        "public_head_node": draw(st.booleans()),
    }
    ctype = draw(st.sampled_from(["on-demand", "spot", "reservation", "capacity-block", "flex-start"]))
    data["capacity"] = {"type": ctype}
    if ctype in ("reservation", "capacity-block"):
        data["capacity"]["reservation"] = draw(st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True))
    if ctype == "spot" and draw(st.booleans()):
        data["capacity"]["max_price_per_hour_usd"] = draw(st.floats(min_value=0.01, max_value=1000))
    data["lifetime"] = _drop_none(
        {
            "ttl": draw(st.one_of(st.none(), valid_durations)),
            "max_cost_usd": draw(st.one_of(st.none(), valid_money)),
            "hourly_price_usd": draw(st.one_of(st.none(), st.floats(min_value=0.01, max_value=500))),
        }
    )
    data["tags"] = draw(st.dictionaries(label_keys, label_values, max_size=5))
    if draw(st.booleans()):
        data["owner"] = draw(label_values)
    if draw(st.booleans()):
        data[cloud] = {}
    return data


CORRUPTIONS: list[tuple[str, st.SearchStrategy[Any]]] = [
    ("name", any_names),
    ("cloud", st.sampled_from(["gpc", "oracle", "", "AWS"])),
    ("region", st.one_of(st.text(max_size=12), st.just(""))),
    ("zone", st.text(max_size=12)),
    ("gpu", st.one_of(st.text(max_size=8), st.sampled_from(["H100:x", "H100:0", "H100:12"]))),
    ("gpus", any_gpus),
    ("nodes", st.integers(min_value=-2, max_value=10**6)),
    ("fabric", st.sampled_from(["ib", "EFA", "nvlink", "none"])),
    ("storage", st.fixed_dictionaries({"shared": st.fixed_dictionaries({"size_gib": sizes})})),
    ("lifetime", st.fixed_dictionaries({"ttl": durations, "max_cost_usd": money})),
    ("tags", any_tags),
    ("owner", st.text(max_size=10)),
    ("capacity", capacities),
    ("access", st.fixed_dictionaries({"ssh_public_keys": any_keys, "allowed_cidrs": any_cidrs})),
    ("regoin", st.just("us-east-1")),
    ("gcp", st.fixed_dictionaries({"project": st.text(max_size=12)})),
]


@st.composite
def broken_specs(draw: st.DrawFn) -> dict[str, Any]:
    """A valid spec with one to three fields replaced by anything (often still valid)."""
    data = draw(valid_specs())
    for key, strategy in draw(st.lists(st.sampled_from(CORRUPTIONS), min_size=1, max_size=3)):
        data[key] = draw(strategy)
    return data


# --------------------------------------------------------------------------------------- helpers


def _assert_good_error(err: SpecError, data: dict[str, Any]) -> None:
    assert err.problems
    for p in err.problems:
        assert isinstance(p.path, str)
        assert p.rule, p
        assert p.fix, p
    doc = json.dumps(err.as_dict(), allow_nan=True)
    text = str(err)
    keys = (data.get("access") or {}).get("ssh_public_keys") or []
    for kind, secret in SECRET_MATERIAL.items():
        if PRIVATE_KEYS[kind] in keys:
            assert secret not in text
            assert secret not in doc


def _assert_round_trips(spec: ClusterSpec) -> None:
    dumped = spec.model_dump(mode="json")
    json.dumps(dumped, allow_nan=False)  # plain JSON: no NaN, no timedelta, no tuples that fail

    again = load_spec(dumped)

    assert again == spec
    assert again.model_dump(mode="json") == dumped


# ------------------------------------------------------------------------------------ properties


@SETTINGS
@given(data=st.one_of(any_specs(), broken_specs()))
def test_every_spec_is_accepted_and_round_trips_or_raises_spec_error(data: dict[str, Any]) -> None:
    try:
        spec = load_spec(data)
    except SpecError as err:
        event("rejected")
        _assert_good_error(err, data)
        return
    event("accepted")
    _assert_round_trips(spec)


@SETTINGS
@given(data=valid_specs())
def test_valid_specs_are_accepted_and_round_trip(data: dict[str, Any]) -> None:
    spec = load_spec(data)

    _assert_round_trips(spec)
    assert spec.gpus is not None or spec.nodes is not None


@SETTINGS
@given(data=valid_specs())
def test_catalog_checks_and_cost_never_crash(data: dict[str, Any]) -> None:
    spec = load_spec(data)
    found = ProblemCollector()

    res = resolve(spec, CATALOG, found)

    for p in found.problems:
        assert p.path and p.rule and p.fix, p
    if found:
        event("refused by the catalog")
        return
    event("feasible")
    assert res.offer is not None and res.nodes is not None and res.nodes * res.offer.gpus_per_node >= 8
    storage = (res.storage, res.storage_size_gib, res.storage_throughput) if res.storage else None
    try:
        cost = estimate(spec, CATALOG, res.offer, res.nodes, storage)
    except BudgetError as err:
        paths = [p.path for p in err.problems]
        if paths == ["lifetime.hourly_price_usd"]:  # an override below the catalog's price
            listed = res.offer.price(spec.region)
            override = spec.lifetime.hourly_price_usd
            assert override is not None
            if listed is None:  # unpriced type: the floor is the cheapest catalog price of that GPU on any cloud
                assert "cheapest catalog price" in err.problems[0].rule
            else:
                assert override < listed
            return
        assert paths == ["lifetime.max_cost_usd"]
        return
    if cost.lifetime_usd is not None and spec.lifetime.max_cost_usd is not None:
        assert cost.lifetime_usd <= spec.lifetime.max_cost_usd + 0.01


@SETTINGS
@given(data=any_specs())
def test_model_validate_raises_only_validation_errors(data: dict[str, Any]) -> None:
    from pydantic import ValidationError

    with contextlib.suppress(ValidationError):
        ClusterSpec.model_validate(data)
