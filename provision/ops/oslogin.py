"""The POSIX user GCP OS Login gives this machine's Google account, worked out locally.

With OS Login (``gcp.os_login``, the default) a node has no fixed login user: OS Login makes one
per Google account. Its name is derived from the account, documented by Google and seen in the
field:

* a user account: its email with every ``@`` and ``.`` (and any other character a POSIX name
  cannot hold) turned into ``_``, e.g. ``user@example.com`` -> ``user_example_com``
  (Google's OS Login documentation, cloud.google.com/compute/docs/oslogin; seen in
  GoogleCloudPlatform/compute-image-packages#692: ``username_gmail_com``);
* a service account: ``sa_`` followed by its numeric unique ID, e.g. ``sa_112233445566778899001``
  (google/syzkaller#4423); the unique ID is the ``client_id`` of the account's key file.

The account is gcloud's active one, read from gcloud's own files (``$CLOUDSDK_CONFIG``, default
``~/.config/gcloud``: ``active_config``, ``configurations/config_<name>`` ``[core] account``;
``$CLOUDSDK_CORE_ACCOUNT`` and ``$CLOUDSDK_ACTIVE_CONFIG_NAME`` as gcloud honours them). No gcloud
process, no network, nothing read until a login user is needed. An organisation can give users other
names (the Directory API's posixAccounts; ``ext_`` prefixes for accounts of other organisations):
``$PROVISION_SSH_USER`` overrides whatever is derived here.
"""

from __future__ import annotations

import configparser
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path

_NOT_POSIX = re.compile(r"[^a-z0-9_-]")
SERVICE_ACCOUNT_DOMAIN = ".gserviceaccount.com"


def posix_username(account: str, unique_id: str | None = None) -> str | None:
    """The OS Login user of ``account`` (``None`` for a service account whose unique ID is unknown)."""
    account = account.strip().lower()
    if not account or "@" not in account:
        return None
    if account.endswith(SERVICE_ACCOUNT_DOMAIN):
        return f"sa_{unique_id}" if unique_id and unique_id.isdigit() else None
    return _NOT_POSIX.sub("_", account)


def gcloud_dir(env: Mapping[str, str] | None = None) -> Path:
    """gcloud's configuration folder: ``$CLOUDSDK_CONFIG``, else ``~/.config/gcloud`` (``%APPDATA%\\gcloud``)."""
    env = os.environ if env is None else env
    if env.get("CLOUDSDK_CONFIG"):
        return Path(env["CLOUDSDK_CONFIG"]).expanduser()
    if os.name == "nt" and env.get("APPDATA"):
        return Path(env["APPDATA"]) / "gcloud"
    return Path.home() / ".config" / "gcloud"


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def gcloud_account(env: Mapping[str, str] | None = None) -> str | None:
    """gcloud's active account (``core/account`` of the active configuration), or ``None``."""
    env = os.environ if env is None else env
    if env.get("CLOUDSDK_CORE_ACCOUNT"):
        return env["CLOUDSDK_CORE_ACCOUNT"].strip()
    folder = gcloud_dir(env)
    name = env.get("CLOUDSDK_ACTIVE_CONFIG_NAME") or (_read(folder / "active_config") or "").strip() or "default"
    text = _read(folder / "configurations" / f"config_{name}")
    if text is None:
        return None
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return None
    account = parser.get("core", "account", fallback="").strip()
    return account or None


def _key_client_id(path: Path, account: str) -> str | None:
    """The ``client_id`` (the unique ID) of a service-account key file, when it is ``account``'s."""
    text = _read(path)
    try:
        doc = json.loads(text) if text else None
    except ValueError:
        return None
    if not isinstance(doc, dict) or str(doc.get("client_email", "")).lower() != account.lower():
        return None
    client_id = str(doc.get("client_id") or "")
    return client_id if client_id.isdigit() else None


def service_account_id(account: str, env: Mapping[str, str] | None = None) -> str | None:
    """The unique ID of service account ``account`` from the key gcloud or ADC holds for it, or ``None``."""
    env = os.environ if env is None else env
    candidates = [gcloud_dir(env) / "legacy_credentials" / account / "adc.json"]
    if env.get("GOOGLE_APPLICATION_CREDENTIALS"):
        candidates.append(Path(env["GOOGLE_APPLICATION_CREDENTIALS"]).expanduser())
    for path in candidates:
        found = _key_client_id(path, account)
        if found:
            return found
    return None


def os_login_user(env: Mapping[str, str] | None = None) -> str | None:
    """The OS Login user of gcloud's active account, or ``None`` when it cannot be worked out here."""
    account = gcloud_account(env)
    if not account:
        return None
    unique_id = service_account_id(account, env) if account.lower().endswith(SERVICE_ACCOUNT_DOMAIN) else None
    return posix_username(account, unique_id)
