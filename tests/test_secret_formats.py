"""No secret of any common format is echoed: each is refused (exit 2) without showing it.

Ten vendor formats (random values of the documented shape, seeded) in five free-text fields of
the spec, through ``provision plan`` in text and ``--json``: 50 probes, 0 printed.
"""

from __future__ import annotations

import json
import random
import string
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import MINIMAL_SPEC, isolated_home, set_dotted
from typer.testing import CliRunner

from provision.cli.app import app
from provision.spec.secrets import scrub, secret_kind

runner = CliRunner()
_RND = random.Random(20261201)
_ALNUM = string.ascii_letters + string.digits
_HEX = "0123456789abcdef"


def _r(chars: str, n: int) -> str:
    return "".join(_RND.choice(chars) for _ in range(n))


#: Shapes: AWS https://docs.aws.amazon.com/IAM/latest/UserGuide/id_credentials_access-keys.html (40 base64),
#: Entra client secrets (gitleaks azure-ad-client-secret), Google OAuth "GOCSPX-", Stripe "sk_live_"/"rk_live_"
#: (https://docs.stripe.com/keys), GitHub "ghp_", Slack "xoxb-", W&B (40 hex), Databricks "dapi" + 32 hex.
FORMATS: dict[str, str] = {
    "aws-secret-access-key": _r(_ALNUM + "/+", 40),
    "azure-client-secret": _r(_ALNUM, 3) + "8Q~" + _r(_ALNUM + "_~.-", 34),
    "google-oauth-client-secret": "GOCSPX-" + _r(_ALNUM + "-_", 28),
    "stripe-live-key": "sk_live_" + _r(_ALNUM, 24),
    "stripe-restricted-key": "rk_live_" + _r(_ALNUM, 24),
    "github-token": "ghp_" + _r(_ALNUM, 36),
    "slack-token": "xoxb-" + _r(string.digits, 12) + "-" + _r(string.digits, 12) + "-" + _r(_ALNUM, 24),
    "wandb-hex-key": _r(_HEX, 40),
    "databricks-token": "dapi" + _r(_HEX, 32),
    "hex-key-64": _r(_HEX, 64),
}
FIELDS = ("tags.key", "owner", "name", "image.id", "gcp.project")
GCP_SPEC: dict[str, Any] = {**MINIMAL_SPEC, "cloud": "gcp", "region": "us-central1", "gcp": {"project": "my-proj-1"}}


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolated_home(tmp_path, monkeypatch)


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_a_secret_of_any_common_format_is_refused_and_never_printed(tmp_path: Path, field: str, fmt: str) -> None:
    secret = FORMATS[fmt]
    doc = set_dotted(GCP_SPEC if field.startswith("gcp.") else MINIMAL_SPEC, field, secret)
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    pieces = {secret[i : i + 12] for i in range(0, len(secret) - 11, 6)}  # no 12-character piece either
    for extra in ((), ("--json",)):
        result = runner.invoke(app, ["plan", str(path), *extra])
        assert result.exit_code == 2, (fmt, field, extra, result.stdout)
        shown = result.stdout + result.stderr
        assert not [p for p in pieces if p in shown], (fmt, field, extra)
    problems = json.loads(runner.invoke(app, ["plan", str(path), "--json"]).stdout)["problems"]
    assert any(p["path"] == field and "looks like a secret" in p["rule"] for p in problems), problems


@pytest.mark.parametrize(
    "value",
    [
        "projects/my-ml-project/global/images/a3high-tcpx-ubuntu2204",
        "/subscriptions/00000000-1111-2222-3333-444444444444/resourceGroups/rg/providers/Microsoft.Compute/"
        "galleries/g/images/ubuntu-hpc/versions/1.0.0",
        "Canonical:0001-com-ubuntu-server-jammy:22_04-lts-gen2:latest",
        "registry.k8s.io/pause@sha256:7031c1b283388d2c2e09b57badb803c05ebed362dc88d84b480cc47f72a21097",
        "ami-0123456789abcdef0",
        "ubuntu_22_04_x64_20G_alibase_20240926.vhd",
        "Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) 20240923",
        "0a1b2c3d4e5f",  # a short commit hash
    ],
)
def test_image_paths_ids_and_labelled_digests_are_not_secrets(value: str) -> None:
    assert secret_kind(value, blobs=True) is None
    assert scrub(value, blobs=True) == value
