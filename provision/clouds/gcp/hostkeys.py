"""The nodes' host keys as Compute Engine reports them: the ``hostkeys/`` guest attributes.

With ``enable-guest-attributes=TRUE`` in the instance metadata, Google's guest agent writes each
host public key under the ``hostkeys`` namespace (``hostkeys/ssh-ed25519`` ...) at boot
(https://cloud.google.com/compute/docs/metadata/manage-guest-attributes; the agent:
https://github.com/GoogleCloudPlatform/guest-agent). ``instances.getGuestAttributes`` with
``queryPath=hostkeys/`` returns them as ``queryValue.items[] {namespace, key, value}``
(https://cloud.google.com/compute/docs/reference/rest/v1/instances/getGuestAttributes); the call is
made with the user's credentials and the value is written by the VM through its metadata server,
which authenticates the VM (the network cannot forge it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from provision.clouds.consolekeys import KEY_TYPES, preferred

#: The metadata key that turns guest attributes on (the guest agent then publishes ``hostkeys/``).
GUEST_ATTRIBUTES = {"enable-guest-attributes": "TRUE"}
API = (
    "https://compute.googleapis.com/compute/v1/projects/{project}/zones/{zone}/instances/{instance}/getGuestAttributes"
)

Fetch = Callable[[str, str, str], dict[str, Any]]


def rest_fetch(project: str, zone: str, instance: str) -> dict[str, Any]:
    """``getGuestAttributes?queryPath=hostkeys/`` with Application Default Credentials."""
    import google.auth  # lazily
    from google.auth.transport.requests import AuthorizedSession

    credentials, _ = google.auth.default(scopes=["https://www.googleapis.com/auth/compute.readonly"])
    answer = AuthorizedSession(credentials).get(
        API.format(project=project, zone=zone, instance=instance), params={"queryPath": "hostkeys/"}, timeout=30
    )
    if answer.status_code == 404:  # the agent has not written the namespace yet
        return {}
    answer.raise_for_status()
    return dict(answer.json())


def keys_in(answer: dict[str, Any]) -> list[str]:
    """``type base64`` per ``hostkeys/<type>`` entry of a getGuestAttributes answer."""
    found = []
    for item in (answer.get("queryValue") or {}).get("items") or []:
        if item.get("namespace") != "hostkeys" or item.get("key") not in KEY_TYPES:
            continue
        words = str(item.get("value") or "").split()
        if words and words[0] == item["key"]:
            words = words[1:]  # some agents write the whole line
        if words:
            found.append(f"{item['key']} {words[0]}")
    return found


def read_host_keys(instances: Sequence[str], project: str, zone: str, fetch: Fetch | None = None) -> dict[int, str]:
    """``rank -> "type base64"`` for each instance (by name) whose guest attributes hold its host keys."""
    get = fetch or rest_fetch
    out = {}
    for rank, name in enumerate(instances):
        key = preferred(keys_in(get(project, zone, name))) if name else None
        if key:
            out[rank] = key
    return out
