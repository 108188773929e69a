"""The host keys a node printed on its console at boot (cloud-init's block), for AWS, Azure and Alibaba.

cloud-init's ``keys_to_console`` module runs ``write-ssh-key-fingerprints`` at boot, which prints the
host *public* keys between ``-----BEGIN SSH HOST KEY KEYS-----`` and ``-----END SSH HOST KEY KEYS-----``
on the console (https://cloudinit.readthedocs.io/en/latest/reference/modules.html#keys-to-console;
the script: https://github.com/canonical/cloud-init/blob/main/tools/write-ssh-key-fingerprints).
The console log is read through the cloud's API with the user's credentials (the hypervisor, not the
node's network, carries it), so the keys it holds are the node's own, not what an address answers.
"""

from __future__ import annotations

import base64
import binascii
import re

BEGIN = "-----BEGIN SSH HOST KEY KEYS-----"
END = "-----END SSH HOST KEY KEYS-----"
#: Preferred first: the key type OpenSSH and asyncssh negotiate first among those cloud-init prints.
KEY_TYPES = ("ssh-ed25519", "ecdsa-sha2-nistp256", "ssh-rsa")
_KEY = re.compile(r"\b(ssh-ed25519|ecdsa-sha2-nistp256|ssh-rsa) ([A-Za-z0-9+/]{20,}={0,2})(?=\s|$)")


def decode_console(output: str | bytes | None) -> str:
    """Console text from an API answer that may be base64 (EC2 and ECS return it encoded)."""
    if not output:
        return ""
    raw = output.encode() if isinstance(output, str) else output
    if BEGIN.encode() in raw:
        return raw.decode("utf-8", "replace")
    try:
        return base64.b64decode(raw, validate=False).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        return raw.decode("utf-8", "replace")


def console_host_keys(text: str) -> list[str]:
    """``type base64`` of each host key in the *last* cloud-init block of ``text`` (the latest boot).

    Lines may carry a console prefix (a kernel timestamp, ``ci-info:``); a block cut off by the end of
    the log (the node is still booting) counts as no block. Returns ``[]`` when there is none.
    """
    lines = text.replace("\r", "").splitlines()
    block: list[str] | None = None
    current: list[str] | None = None
    for line in lines:
        if BEGIN in line:
            current = []
        elif END in line and current is not None:
            block, current = current, None
        elif current is not None:
            current.append(line)
    found = []
    for line in block or []:
        m = _KEY.search(line)
        if m and f"{m[1]} {m[2]}" not in found:
            found.append(f"{m[1]} {m[2]}")
    return found


def preferred(keys: list[str]) -> str | None:
    """The one key to pin: ed25519 when the node has one, else the next type in :data:`KEY_TYPES`."""
    for kind in KEY_TYPES:
        for key in keys:
            if key.startswith(kind + " "):
                return key
    return None
