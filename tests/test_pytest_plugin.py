"""The pytest plugin, as a user's suite sees it: a small test project run with ``pytester``."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import ROOT, stack_spec

pytest_plugins = ["pytester"]

PLUGIN = "provision.testing.pytest_plugin"


def _plugin_args() -> list[str]:
    """``-p`` the plugin unless the installed entry point (``pytest11: provision``) already loads it."""
    installed = {ep.value for ep in importlib.metadata.entry_points(group="pytest11") if ep.name == "provision"}
    return [] if PLUGIN in installed else ["-p", PLUGIN]


@pytest.fixture(scope="session")
def warm_imports() -> None:
    """Import what the inner runs use, before ``pytester`` snapshots ``sys.modules``.

    The inner runs are in-process, and pytester drops the modules imported after its snapshot;
    a provider SDK imported again would register its package with Pulumi twice.
    """
    from provision.ops.ephemeral import ephemeral_cluster
    from provision.testing import run_program

    run_program(stack_spec("aws-p5-ci"))
    with pytest.MonkeyPatch.context() as mp, tempfile.TemporaryDirectory() as tmp:
        mp.setenv("PROVISION_HOME", tmp)
        with ephemeral_cluster("aws-p5-ci", mock=True, root=ROOT, display="none"):
            pass


@pytest.fixture
def project(warm_imports: None, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A user's project: one stack file (the AWS CI stack as ``team-ci``) and an empty environment."""
    for var in ("PROVISION_HOME", "GITHUB_RUN_ID", "CI_JOB_ID", "BUILDKITE_JOB_ID"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(pytester.path / "user-home"))  # nothing may land in the real ~/.provision
    stacks = pytester.mkdir("stacks")
    (stacks / "Pulumi.team-ci.yaml").write_text((ROOT / "stacks" / "Pulumi.aws-p5-ci.yaml").read_text())
    return pytester


def test_mock_cloud_runs_a_stack_with_its_provider_config_and_faults(project: pytest.Pytester) -> None:
    project.makepyfile(
        """
        import pulumi
        import pytest
        from provision.spec.errors import SpecError
        from provision.testing import CloudFaultError, Fault

        def test_graph(provision_mock_cloud):
            result = provision_mock_cloud("team-ci")
            assert result.plan.nodes == 2 and len(result.of_type("aws:ec2/fleet:Fleet")) == 1
            assert result.outputs["hostfile"].count("slots=8") == 2

        def test_the_stack_files_region_reaches_the_program(provision_mock_cloud):
            with open("stacks/Pulumi.team-ci.yaml") as f:
                text = f.read().replace("aws:region: us-east-1", "aws:region: us-west-2")
            with open("stacks/Pulumi.other.yaml", "w") as f:
                f.write(text)
            with pytest.raises(Exception, match="aws:region is 'us-west-2'"):
                provision_mock_cloud("other")

        def test_a_fault(provision_mock_cloud):
            fault = Fault("InsufficientInstanceCapacity", type_token="aws:ec2/fleet:Fleet")
            with pytest.raises(CloudFaultError, match="InsufficientInstanceCapacity"):
                provision_mock_cloud("stacks/Pulumi.team-ci.yaml", faults=[fault])

        def test_a_bad_spec(provision_mock_cloud):
            with pytest.raises(SpecError):
                provision_mock_cloud({"name": "x", "cloud": "aws"})

        def test_pulumis_global_state_is_left_as_it_was(provision_mock_cloud):
            pulumi.runtime.set_config("user:key", "mine")
            spec, stack = pulumi.runtime.get_config("provision:cluster"), pulumi.runtime.settings.SETTINGS.stack
            provision_mock_cloud("team-ci", stack="elsewhere")
            assert pulumi.runtime.get_config("user:key") == "mine"
            assert pulumi.runtime.get_config("provision:cluster") == spec
            assert pulumi.runtime.settings.SETTINGS.stack == stack != "elsewhere"
        """
    )
    result = project.runpytest(*_plugin_args())
    result.assert_outcomes(passed=5)


def test_ephemeral_cluster_is_mocked_isolated_and_destroyed_after_each_test(project: pytest.Pytester) -> None:
    project.makepyfile(
        """
        import json, os

        def _note(c):
            with open("seen.jsonl", "a") as f:
                f.write(json.dumps({"home": os.environ["PROVISION_HOME"], "stack": c.stack}) + "\\n")

        def test_up(ephemeral_cluster, provision_home):
            c = ephemeral_cluster("team-ci")
            _note(c)
            assert c.mock and c.status()["state"] == "up" and len(c.hosts) == 2
            assert os.environ["PROVISION_HOME"] == str(provision_home)

        def test_a_failing_test_still_tears_down(ephemeral_cluster):
            c = ephemeral_cluster("team-ci", ttl="1h", max_cost_usd=200)
            _note(c)
            assert c.spec.lifetime.max_cost_usd == 200
            raise RuntimeError("the user's test failed")
        """
    )
    result = project.runpytest(*_plugin_args())
    result.assert_outcomes(passed=1, failed=1)
    seen = [json.loads(line) for line in (project.path / "seen.jsonl").read_text().splitlines()]
    assert len(seen) == 2 and seen[0]["home"] != seen[1]["home"]
    for s in seen:
        home = Path(s["home"])
        assert home.name == "provision-home" and home.is_dir()
        assert not list((home / "mock").glob("*.json")) and not list((home / "ephemeral").glob("*.json"))
    assert not (project.path / "user-home" / ".provision").exists()


def test_real_mode_is_refused_without_the_option(project: pytest.Pytester) -> None:
    project.makepyfile(
        """
        def test_real(ephemeral_cluster):
            ephemeral_cluster("team-ci", mock=False)
        """
    )
    result = project.runpytest(*_plugin_args())
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*would create real, billable cloud resources*--provision-real*"])
    assert "Traceback" not in result.stdout.str()


def test_the_options_make_real_the_default_and_set_cap_and_ttl(project: pytest.Pytester) -> None:
    project.makepyfile(
        """
        from contextlib import contextmanager
        import provision.ops.ephemeral

        def test_real_by_default(ephemeral_cluster, monkeypatch):
            calls = []

            @contextmanager
            def recording(target, **kwargs):
                calls.append(kwargs)
                yield target

            monkeypatch.setattr(provision.ops.ephemeral, "ephemeral_cluster", recording)
            ephemeral_cluster("team-ci")
            ephemeral_cluster("team-ci", mock=True, max_cost_usd=10)
            assert calls[0]["mock"] is False and calls[0]["max_cost_usd"] == 123.0 and calls[0]["ttl"] == "90m"
            assert calls[1]["mock"] is True and calls[1]["max_cost_usd"] == 10
        """
    )
    result = project.runpytest(
        *_plugin_args(), "--provision-real", "--provision-max-cost-usd", "123", "--provision-ttl", "90m"
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["provision: REAL clouds enabled*"])


def test_the_cap_option_refuses_a_cluster_over_it(project: pytest.Pytester) -> None:
    project.makepyfile(
        """
        import pytest
        from provision.spec.errors import BudgetError

        def test_capped(ephemeral_cluster, provision_home):
            with pytest.raises(BudgetError, match="over the cap"):
                ephemeral_cluster("team-ci")
            assert not (provision_home / "mock").exists() or not list((provision_home / "mock").iterdir())
        """
    )
    result = project.runpytest(*_plugin_args(), "--provision-max-cost-usd", "150")
    result.assert_outcomes(passed=1)


def test_loading_the_plugin_imports_neither_pulumi_nor_pydantic() -> None:
    code = (
        "import sys, provision.testing.pytest_plugin\n"
        "heavy = ('pulumi', 'pydantic', 'yaml', 'provision.ops.cluster', 'provision.spec.models')\n"
        "print([m for m in heavy if m in sys.modules])"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_entry_point_is_declared_for_pytest() -> None:
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["pytest11"] == {"provision": PLUGIN}


def test_provision_home_drops_an_inherited_backend_and_passphrase(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PULUMI_BACKEND_URL", "s3://someone-elses-real-state")
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "real-passphrase")
    project.makepyfile(
        """
        import os

        def test_isolated(provision_home):
            assert "PULUMI_BACKEND_URL" not in os.environ
            assert "PULUMI_CONFIG_PASSPHRASE" not in os.environ
        """
    )
    project.runpytest(*_plugin_args()).assert_outcomes(passed=1)


def test_ephemeral_cluster_fixture_is_also_a_context_manager(project: pytest.Pytester) -> None:
    project.makepyfile(
        """
        def test_with(ephemeral_cluster):
            with ephemeral_cluster("team-ci") as c:
                assert c.status()["state"] == "up"
            assert c.status()["state"] == "none"  # torn down at the end of the block, not only after the test
        """
    )
    project.runpytest(*_plugin_args()).assert_outcomes(passed=1)


def test_provider_deprecation_warnings_stay_out_of_the_users_run(project: pytest.Pytester) -> None:
    project.makepyfile(
        """
        import warnings

        def test_provider_warns():
            warnings.warn_explicit("old resource", DeprecationWarning, "x.py", 1, module="pulumi_aws.ec2")

        def test_own_code_still_warns():
            warnings.warn("mine", DeprecationWarning)
        """
    )
    result = project.runpytest(*_plugin_args())
    result.assert_outcomes(passed=2)
    text = result.stdout.str()
    assert "old resource" not in text and "mine" in text
