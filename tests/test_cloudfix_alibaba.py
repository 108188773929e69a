"""Alibaba deploy blockers and security defaults from the 2026-12-01 review (issues 11 and 12).

Each test failed before its fix: CPFS created under the provider's 10-minute default timeout, subscription
periods the provider rejects, jumbo frames forced on types without them, an unverified installer script
fetched over plain HTTP, and the metadata service left in normal (token-less) mode.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from graph_deps import recorded_graph
from test_alibaba_graph import INSTANCE, _test_catalog, _text, spec

from provision.clouds.alibaba.adapter import AlibabaAdapter
from provision.clouds.alibaba.userdata import render as render_user_data
from provision.planning.bootstrap import materialize, parse
from provision.spec.errors import SpecError

from conftest import preview  # isort: skip

FS = "alicloud:nas/fileSystem:FileSystem"
PROTOCOL_SERVICE = "alicloud:nas/protocolService:ProtocolService"
CPFS = {"kind": "cpfs", "tier": "advance_200", "size_gib": 7200}


@pytest.fixture(scope="module", autouse=True)
def test_catalog() -> Any:
    with pytest.MonkeyPatch.context() as mp:
        catalog = _test_catalog()
        mp.setattr("provision.clouds.base.load_catalog", lambda: catalog)
        yield catalog


def _minutes(value: str) -> float:
    units = {"m": 1, "h": 60, "s": 1 / 60}
    return float(value[:-1]) * units[value[-1]]


# ------------------------------------------------------------------ CPFS create time (A1)


def test_cpfs_create_waits_longer_than_the_40_minutes_it_can_take() -> None:
    with recorded_graph() as graph:
        preview(spec(storage={"shared": CPFS}))
    # NAS API (CreateProtocolMountTarget): "it takes about 20 to 40 minutes to reach the Running state"; the
    # provider waits 10 minutes by default (resource_alicloud_nas_file_system.go).
    (fs,) = graph.of_type(FS)
    assert _minutes(fs.custom_timeouts["create"]) >= 60
    (service,) = graph.of_type(PROTOCOL_SERVICE)
    assert _minutes(service.custom_timeouts["create"]) >= 30


# ------------------------------------------------------------------ subscription periods (A2)


@pytest.mark.parametrize(("months", "ok"), [(1, True), (9, True), (10, False), (11, False), (12, True), (13, False)])
def test_subscription_months_follow_the_providers_period_rule(months: int, ok: bool) -> None:
    # terraform-provider-alicloud resource_alicloud_instance.go: period IntBetween(1, 9) or {12, 24, 36, 48, 60}.
    over = {"alibaba": {"subscription_months": months}, "lifetime": {}}
    if ok:
        assert AlibabaAdapter().plan(spec(**over)).extra.period_months == months
    else:
        with pytest.raises(SpecError) as err:
            AlibabaAdapter().plan(spec(**over))
        assert [p.path for p in err.value.problems] == ["alibaba.subscription_months"]


# ------------------------------------------------------------------ jumbo frames (A3)


def test_seventh_generation_erdma_nodes_get_no_jumbo_frames() -> None:
    result = preview(spec(instance_type="ecs.ebmgn7ex.32xlarge", zone="cn-beijing-l", region="cn-beijing"))
    assert all("enableJumboFrame" not in n.inputs for n in result.of_type(INSTANCE))
    assert result.plan.extra.mtu == 1400  # eRDMA without jumbo frames (Alibaba's GPU eRDMA guide)


def test_jumbo_frames_are_refused_where_alibaba_says_the_type_has_none() -> None:
    over = {"instance_type": "ecs.ebmgn7ex.32xlarge", "zone": "cn-beijing-l", "region": "cn-beijing"}
    with pytest.raises(SpecError) as err:
        AlibabaAdapter().plan(spec(**over, alibaba={"jumbo_frames": True}))
    assert [p.path for p in err.value.problems] == ["alibaba.jumbo_frames"]


def test_jumbo_frames_default_on_only_where_documented() -> None:
    gn8v = AlibabaAdapter().plan(spec(instance_type="ecs.gn8v-8x.48xlarge"))
    assert (gn8v.extra.jumbo_frames, gn8v.extra.mtu) == (True, 8500)
    ebmgn8v = AlibabaAdapter().plan(spec())
    assert (ebmgn8v.extra.jumbo_frames, ebmgn8v.extra.mtu) == (False, 1400)
    assert any("jumbo" in w for w in ebmgn8v.warnings)


def test_jumbo_frames_on_an_undocumented_eighth_generation_type_are_refused_as_the_cloud_would() -> None:
    # The plan used to accept this opt-in on ebmgn8v while the strict mocked cloud refused enableJumboFrame.
    with pytest.raises(SpecError) as err:
        AlibabaAdapter().plan(spec(alibaba={"jumbo_frames": True}))
    assert [p.path for p in err.value.problems] == ["alibaba.jumbo_frames"]
    assert "ecs.ebmgn8v.48xlarge" in str(err.value) and "DescribeInstanceTypes" in str(err.value)
    gn8v = AlibabaAdapter().plan(spec(instance_type="ecs.gn8v-8x.48xlarge", alibaba={"jumbo_frames": True}))
    assert gn8v.extra.mtu == 8500
    assert all(
        "enableJumboFrame" in n.inputs for n in preview(spec(instance_type="ecs.gn8v-8x.48xlarge")).of_type(INSTANCE)
    )


# ------------------------------------------------------------------ installer (C1) and metadata (C2)


def test_erdma_installs_only_what_its_checksum_verified() -> None:
    files = {f["path"]: f["content"] for f in parse(render_user_data(AlibabaAdapter().plan(spec())))["write_files"]}
    setup = next(c for p, c in files.items() if p.endswith("-erdma.sh"))
    assert "env_setup.sh" not in setup
    # pv_fetch checks the tarball's SHA-256 (lib.sh: sha256sum -c) and fails the step before anything unpacks.
    verify = setup.index(
        'pv_fetch "$ERDMA_INSTALLER_URL" "$work/erdma_installer.tar.gz" "$ERDMA_INSTALLER_SHA256" || exit 1'
    )
    install = setup.index("install.sh --batch")
    assert verify < setup.index("tar -xzf") < install
    lib = {f["path"]: f["content"] for f in parse(render_user_data(AlibabaAdapter().plan(spec())))["write_files"]}
    assert "sha256sum -c" in lib["/usr/local/lib/provision/lib.sh"]


def test_nodes_require_metadata_tokens() -> None:
    result = preview(spec())
    assert {n.inputs.get("httpTokens") for n in result.of_type(INSTANCE)} == {"required"}


def test_network_script_reads_metadata_with_a_token(tmp_path: Path) -> None:
    plan = AlibabaAdapter().plan(spec())
    node = tmp_path / "node"
    materialize(render_user_data(plan), node)
    script = node / "usr/local/lib/provision/provision-net"
    sysfs, fakebin, log = tmp_path / "net", tmp_path / "bin", tmp_path / "calls"
    for ifname, mac in (("eth0", "00:16:3e:00:00:01"), ("eth1", "00:16:3e:00:00:02")):
        (sysfs / ifname).mkdir(parents=True)
        (sysfs / ifname / "address").write_text(mac + "\n")
    fakebin.mkdir()
    (fakebin / "ip").write_text(
        f'#!/bin/bash\necho "ip $*" >> {log}\n[ "$*" = "-4 addr show dev eth0" ] && echo "inet 10.0.0.1/18"\nexit 0\n'
    )
    # Token mode: a PUT to /latest/api/token returns a token; reads without the token header are refused.
    (fakebin / "curl").write_text(
        "#!/bin/bash\n"
        'args="$*"\n'
        'case "$args" in *"-X PUT"*api/token*) echo tok123; exit 0;; esac\n'
        'case "$args" in *"X-aliyun-ecs-metadata-token: tok123"*) ;; *) exit 22;; esac\n'
        'case "${@: -1}" in\n'
        "  */00:16:3e:00:00:02/primary-ip-address) echo 10.0.0.9;;\n"
        "  */00:16:3e:00:00:02/vswitch-cidr-block) echo 10.0.0.0/18;;\n"
        "  *) exit 22;;\n"
        "esac\n"
    )
    for tool in ("ip", "curl"):
        (fakebin / tool).chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{fakebin}:{os.environ['PATH']}",
        "PROVISION_NET_SYSFS": str(sysfs),
        "PROVISION_NET_METADATA": "http://md/latest",
        "PROVISION_ROOT": str(node),
    }
    subprocess.run(["bash", str(script)], env=env, check=True)
    assert "ip addr add 10.0.0.9/18 dev eth1 noprefixroute" in log.read_text().splitlines()


def test_user_data_still_parses() -> None:
    doc = parse(_text(preview(spec()).of_type(INSTANCE)[0].inputs["userData"]))
    for f in doc["write_files"]:
        if f["content"].startswith("#!/bin/bash"):
            subprocess.run(["bash", "-n"], input=f["content"], text=True, check=True)


def test_metadata_tokens_can_be_turned_off_for_an_old_pinned_image() -> None:
    result = preview(spec(alibaba={"metadata_tokens": False}))
    assert all("httpTokens" not in n.inputs for n in result.of_type(INSTANCE))
