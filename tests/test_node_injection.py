"""No injection into node scripts (issue 12): hostile strings in every string field that reaches a bootstrap.

Every such string is either refused (UnsafeValueError / SpecError naming the field) or rendered so that the
scripts still parse (``bash -n``) and, executed in a sandbox with stubbed system commands, never run the
marker command the string carries.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nodekit import plan_of, run_bootstrap, scripts_of, stubs

from provision.clouds.alibaba import userdata as alibaba
from provision.clouds.aws import userdata as aws
from provision.clouds.azure import userdata as azure
from provision.clouds.gcp import userdata as gcp
from provision.planning.bootstrap import UnsafeValueError
from provision.spec.errors import SpecError

MARKER_NAME = "PWNED"


def payloads(marker: Path) -> st.SearchStrategy[str]:
    cmd = f"touch {marker}"
    attacks = [
        f"$({cmd})",
        f"`{cmd}`",
        f"; {cmd} ;",
        f"\n{cmd}\n",
        f"' ; {cmd} ; '",
        f'" ; {cmd} ; "',
        f"&& {cmd}",
        f"| {cmd}",
        f"\nExecStartPre=/bin/{cmd}\n",
        f"\r\n{cmd}\r\n",
        f"$(IFS=_;t=touch_{marker};$t)",
        f"\n---\nruncmd: [[{cmd.replace(' ', ', ')}]]\n",
        f"KEYS\n{cmd}\nKEYS",
        f"\\\n{cmd}",
        f"%n{cmd}",
    ]
    safe = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=12)
    return st.builds(lambda a, p, b: a + p + b, safe, st.sampled_from(attacks), safe)


def _hostile_plan(stack: str, field: str, value: str) -> Any:
    """``stack``'s plan with ``value`` planted in ``field``, bypassing the spec's own validation on purpose."""
    plan = plan_of(stack)
    if field.startswith("image.versions."):
        key = field.rsplit(".", 1)[1]
        return plan.model_copy(
            update={"image": plan.image.model_copy(update={"versions": {**plan.image.versions, key: value}})}
        )
    if field == "access.ssh_user":
        return plan.model_copy(update={"access": plan.access.model_copy(update={"ssh_user": value})})
    if field == "access.ssh_public_keys":
        key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHByb3Zpc2lvbi1leGFtcGxlLWtleS1kby1ub3QtdXNl " + value
        return plan.model_copy(update={"access": plan.access.model_copy(update={"ssh_public_keys": [key]})})
    if field == "storage.scratch.mount":
        return plan.model_copy(update={"scratch": plan.scratch.model_copy(update={"mount": value})})
    if field == "storage.shared.mount":
        return plan.model_copy(update={"storage": plan.storage.model_copy(update={"mount": value})})
    if field == "name":
        return plan.model_copy(update={"name": value})
    if field == "nccl_env":
        return plan.model_copy(update={"nccl_env": {**plan.nccl_env, "NCCL_DEBUG": value}})
    raise AssertionError(field)


def _render(stack: str, plan: Any, source: str | None) -> str:
    cloud = plan.cloud
    if cloud == "aws":
        # The FSx source is read at boot from its SSM parameter (the fsx-source step checks it before use): a
        # hostile value reaches the node through the `aws` stub's answer (see the shared_fs.source case).
        return aws.render(plan)
    if cloud == "azure":
        # The address is read at boot from Azure Resource Manager (the fs-address step checks it before use): a
        # hostile value reaches the node through the curl stub's answer (see the shared_fs.source case).
        return azure.render(plan)
    if cloud == "alibaba":
        # No source reaches Alibaba's user data: the node looks the domain up at boot, and the shared-mount step
        # refuses a looked-up value that is not a DNS name (tests/test_alibaba_fs_lookup.py).
        return alibaba.render(plan)
    return gcp.render(plan, ": # mount" if plan.storage else "")


#: IMDS and Azure Resource Manager as the fs-address step asks them, answering $HOSTILE as the filesystem's address.
HOSTILE_ARM = """#!/bin/bash
for a in "$@"; do url=$a; done
case $url in
*subscriptionId*) echo 11111111-2222-3333-4444-555555555555 ;;
*oauth2/token*) echo '{"access_token":"t"}' ;;
*) printf '{"clientInfo":{"mgsAddress":"%s"},"mountTargets":[{"ipAddress":"%s"}]}\\n' "$HOSTILE" "$HOSTILE" ;;
esac
"""

#: (stack, field) for every spec string that reaches a node script, on every cloud.
CASES = [
    *[
        ("alibaba-gn8-ci", f"image.versions.{k}")
        for k in ("driver_package", "fabricmanager", "driver_branch", "erdma_installer", "erdma_installer_sha256")
    ],
    *[("gcp-a3-ci", f"image.versions.{k}") for k in ("rxdm", "nccl_plugin", "dmabuf_import_helper")],
    *[("gcp-a3ultra-64", f"image.versions.{k}") for k in ("nccl", "nccl_gib")],
    *[
        (s, f)
        for s in ("aws-p5-ci", "gcp-a3-ci", "azure-ndh100-ci", "alibaba-gn8-ci")
        for f in (
            "access.ssh_user",
            "access.ssh_public_keys",
            "storage.scratch.mount",
            "storage.shared.mount",
            "name",
            "nccl_env",
        )
    ],
    *[(s, "shared_fs.source") for s in ("aws-p5-ci", "azure-ndh100-ci")],
]


@pytest.mark.parametrize(("stack", "field"), CASES, ids=[f"{s}:{f}" for s, f in CASES])
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_hostile_strings_are_refused_or_inert(stack: str, field: str, data: Any, tmp_path_factory: Any) -> None:
    tmp = tmp_path_factory.mktemp("hostile")
    marker = tmp / MARKER_NAME
    value = data.draw(payloads(marker))
    try:
        if field == "shared_fs.source" and stack.startswith("aws"):
            text = _render(stack, plan_of(stack), None)
            for path, script in scripts_of(text).items():
                check = subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True)
                assert check.returncode == 0, (path, check.stderr)
            run_bootstrap(tmp, text, STUB_OUT_aws=value)
            assert not marker.exists(), f"{field}={value!r} ran its payload"
            return
        if field == "shared_fs.source" and stack.startswith("azure"):
            text = _render(stack, plan_of(stack), None)
            bin_dir = tmp / "arm"
            bin_dir.mkdir()
            (bin_dir / "curl").write_text(HOSTILE_ARM)
            (bin_dir / "curl").chmod(0o755)
            path = f"{bin_dir}{os.pathsep}{stubs(tmp)}{os.pathsep}{os.environ['PATH']}"
            run_bootstrap(tmp, text, PATH=path, HOSTILE=value)
            assert not marker.exists(), f"{field}={value!r} ran its payload"
            return
        if field == "shared_fs.source":
            text = _render(stack, plan_of(stack), value)
        else:
            text = _render(stack, _hostile_plan(stack, field, value), None)
    except (UnsafeValueError, SpecError) as e:
        assert field.split(".")[0] in str(e) or "nccl_env" in str(e) or "shared_fs" in str(e)
        return
    for path, script in scripts_of(text).items():
        check = subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True)
        assert check.returncode == 0, (path, check.stderr)
    run_bootstrap(tmp, text)
    assert not marker.exists(), f"{field}={value!r} ran its payload"


def test_the_property_test_would_catch_an_injection(tmp_path: Path) -> None:
    """Sanity: the same harness does see a payload that reaches a shell unquoted."""
    from nodekit import sandbox

    text = _render("aws-p5-ci", plan_of("aws-p5-ci"), None)
    root = sandbox(tmp_path, text)
    marker = tmp_path / MARKER_NAME
    env_file = root / "etc/provision/bootstrap.env"
    env_file.write_text(env_file.read_text() + f"CLUSTER=x; touch {marker}\n")  # what an unquoted render would do
    run_bootstrap(tmp_path, text, root=root)
    assert marker.exists()


def test_accepted_hostile_key_comment_lands_verbatim_in_authorized_keys(tmp_path: Path) -> None:
    marker = tmp_path / MARKER_NAME
    plan = _hostile_plan("alibaba-gn8-ci", "access.ssh_public_keys", f"c$(touch {marker})`touch {marker}`")
    result = run_bootstrap(tmp_path, _render("alibaba-gn8-ci", plan, None))
    assert result["state"]["steps"]["login-user"]["status"] == "ok"
    keys = (result["root"] / "home/ubuntu/.ssh/authorized_keys").read_text()
    assert f"c$(touch {marker})`touch {marker}`" in keys
    assert not marker.exists()


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("driver_package", "nvidia-driver-570-server-open; touch /tmp/PWNED #"),
        ("erdma_installer", "1.5.7$(touch /tmp/PWNED)"),
        ("erdma_installer_sha256", "$(touch /tmp/PWNED)"),
        ("rxdm", "img --x\nExecStartPre=/bin/sh -c 'touch /tmp/PWNED'"),
        ("nccl", "2.21 `id`"),
    ],
)
def test_spec_versions_with_shell_are_a_spec_error_naming_the_field(key: str, value: str) -> None:
    """The review's reproductions, through the public path: the plan refuses them before anything exists."""
    from conftest import FIXED_NOW, stack_spec

    from provision.clouds.base import get_adapter

    stack = "gcp-a3-ci" if key == "rxdm" else "alibaba-gn8-ci"
    spec = stack_spec(stack)
    spec = spec.model_copy(update={"image": spec.image.model_copy(update={"versions": {key: value}})})
    with pytest.raises(SpecError) as err:
        get_adapter(spec.cloud).plan(spec, now=FIXED_NOW, owner="test")
    assert [p.path for p in err.value.problems] == [f"image.versions.{key}"]
    assert "is not a valid" in str(err.value)
