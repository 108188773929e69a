"""GCP OS Login: the login user is derived from gcloud's active account, locally; PROVISION_SSH_USER overrides."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import isolated_home, stack_spec

from provision.ops import access, oslogin

SA = "trainer@my-ml-project.iam.gserviceaccount.com"


@pytest.mark.parametrize(
    ("account", "unique_id", "user"),
    [
        ("user@example.com", None, "user_example_com"),
        ("Jane.Doe@Research.Example.COM", None, "jane_doe_research_example_com"),
        ("a+b@example.com", None, "a_b_example_com"),
        (SA, "112233445566778899001", "sa_112233445566778899001"),
        (SA, None, None),  # a service account's name needs its unique ID
        ("not-an-email", None, None),
    ],
)
def test_posix_username_follows_os_login_naming(account: str, unique_id: str | None, user: str | None) -> None:
    assert oslogin.posix_username(account, unique_id) == user


def _gcloud(folder: Path, account: str, config: str = "work") -> dict[str, str]:
    """A gcloud configuration folder whose active configuration ``config`` has ``account``."""
    (folder / "configurations").mkdir(parents=True)
    (folder / "active_config").write_text(config + "\n")
    (folder / "configurations" / f"config_{config}").write_text(f"[core]\naccount = {account}\nproject = p\n")
    (folder / "configurations" / "config_default").write_text("[core]\naccount = someone-else@example.com\n")
    return {"CLOUDSDK_CONFIG": str(folder)}


def test_the_account_is_read_from_the_active_gcloud_configuration(tmp_path: Path) -> None:
    env = _gcloud(tmp_path / "gcloud", "jane.doe@example.com")
    assert oslogin.gcloud_account(env) == "jane.doe@example.com"
    assert oslogin.os_login_user(env) == "jane_doe_example_com"
    assert oslogin.gcloud_account({**env, "CLOUDSDK_ACTIVE_CONFIG_NAME": "default"}) == "someone-else@example.com"
    assert oslogin.gcloud_account({**env, "CLOUDSDK_CORE_ACCOUNT": "ci@example.com"}) == "ci@example.com"


def test_no_gcloud_configuration_means_no_derived_user(tmp_path: Path) -> None:
    env = {"CLOUDSDK_CONFIG": str(tmp_path / "missing")}
    assert oslogin.gcloud_account(env) is None and oslogin.os_login_user(env) is None
    (tmp_path / "broken" / "configurations").mkdir(parents=True)
    (tmp_path / "broken" / "configurations" / "config_default").write_text("not an ini file")
    assert oslogin.gcloud_account({"CLOUDSDK_CONFIG": str(tmp_path / "broken")}) is None


def test_a_service_account_gets_sa_and_the_client_id_of_its_key(tmp_path: Path) -> None:
    env = _gcloud(tmp_path / "gcloud", SA)
    assert oslogin.os_login_user(env) is None  # no key: the unique ID is unknown here
    key = {"type": "service_account", "client_email": SA, "client_id": "104857600000000000042", "private_key": "x"}
    folder = tmp_path / "gcloud" / "legacy_credentials" / SA
    folder.mkdir(parents=True)
    (folder / "adc.json").write_text(json.dumps(key))
    assert oslogin.os_login_user(env) == "sa_104857600000000000042"
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**key, "client_email": "else@p.iam.gserviceaccount.com", "client_id": "1"}))
    (folder / "adc.json").unlink()
    assert oslogin.os_login_user({**env, "GOOGLE_APPLICATION_CREDENTIALS": str(other)}) is None


def _stand_in(stack: str, **gcp: object) -> SimpleNamespace:
    spec = stack_spec(stack)
    if gcp:
        spec = spec.model_copy(update={"gcp": spec.gcp.model_copy(update=gcp)})
    outputs = {
        "hosts": ["10.0.0.2", "10.0.0.3"],
        "access": {"via": "iap", "user": spec.access.ssh_user, "project": "p", "zone": "us-central1-a"},
    }
    return SimpleNamespace(spec=spec, stack=stack, mock=True, outputs=outputs)


@pytest.fixture
def gcloud_user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    isolated_home(tmp_path, monkeypatch)
    monkeypatch.delenv(access.USER_ENV, raising=False)
    for key, value in _gcloud(tmp_path / "gcloud", "jane.doe@example.com").items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("CLOUDSDK_CORE_ACCOUNT", raising=False)
    monkeypatch.delenv("CLOUDSDK_ACTIVE_CONFIG_NAME", raising=False)
    return "jane_doe_example_com"


def test_gcp_os_login_ssh_config_logs_in_as_the_gcloud_accounts_posix_user(gcloud_user: str) -> None:
    cluster = _stand_in("gcp-a3-64")
    assert cluster.spec.gcp.os_login
    text = access.ssh_config_text(cluster)
    assert text.count(f"User {gcloud_user}") == 2 and "User ubuntu" not in text


def test_provision_ssh_user_overrides_the_derived_user(gcloud_user: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(access.USER_ENV, "jdoe")
    assert access.login_user(_stand_in("gcp-a3-64")) == "jdoe"


def test_without_os_login_or_off_gcp_the_spec_user_logs_in(gcloud_user: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert access.login_user(_stand_in("gcp-a3-64", os_login=False)) == "ubuntu"

    def must_not_read(*args: object) -> None:
        raise AssertionError("gcloud's files were read for a cluster that does not use OS Login")

    monkeypatch.setattr(oslogin, "gcloud_account", must_not_read)
    aws = SimpleNamespace(spec=stack_spec("aws-p5-64"), stack="aws-p5-64", mock=True, outputs={})
    assert access.login_user(aws, "ubuntu") == "ubuntu"


@pytest.mark.parametrize("os_login", [True, False])
def test_the_stack_outputs_ssh_config_names_no_fixed_user_under_os_login(os_login: bool) -> None:
    """The stack output is the same for everyone: under OS Login each person logs in as their own POSIX user."""
    from conftest import preview

    from provision.spec import load_spec

    data = stack_spec("gcp-a3-ci").model_dump(mode="json", exclude_none=True)
    data.setdefault("gcp", {})["os_login"] = os_login
    out = preview(load_spec(data), stack="gcp-a3-ci").outputs
    user_lines = [line for line in out["ssh_config"].splitlines() if line.strip().startswith("User ")]
    if os_login:
        assert user_lines == [] and "# User: your OS Login name" in out["ssh_config"]
        assert out["access"]["os_login"] is True
    else:
        assert user_lines and all(line.split()[1] == data["access"]["ssh_user"] for line in user_lines)
