"""Recognising secrets in text, so that no error, log, JSON document or state file echoes one.

Two strengths of evidence:

* **markers** (always applied): a PEM/OpenSSH/PuTTY private key, or a token whose vendor
  prefix is documented (AWS access key ids, GitHub, GitLab, Slack, Google API keys, Hugging
  Face, OpenAI-style ``sk-`` keys, Alibaba AccessKey ids, JWTs, Azure storage ``AccountKey=``).
* **blobs** (only where no legitimate value looks like one, e.g. a value echoed in an error):
  a long run of base64 with upper case, lower case and digits, which is what a private key's
  body line looks like once its header is cut off; and every format the maintained detector
  of :mod:`provision.spec.detector` knows (unprefixed cloud secrets, vendor tokens, long hex
  keys). Labelled digests (``sha256:...``) are not blobs.

:func:`scrub` replaces every match with ``<redacted: kind>``; :func:`scrub_data` does so in
every string of a JSON-like document.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator
from typing import Any

#: Shown instead of a secret; the kind says what was found, never any of its characters.
REDACTED_TEMPLATE = "<redacted: {kind}>"

# (kind, pattern). Sources of the token formats:
#   AWS access key ids: https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_identifiers.html#identifiers-unique-ids
#   GitHub: https://github.blog/engineering/platform-security/behind-githubs-new-authentication-token-formats/
#   GitLab: https://docs.gitlab.com/security/tokens/#token-prefixes
#   Slack: https://api.slack.com/authentication/token-types
#   Google API keys ("AIza" + 35): https://cloud.google.com/docs/authentication/api-keys
#   Hugging Face "hf_": https://huggingface.co/docs/hub/security-tokens
#   Alibaba AccessKey ids start with "LTAI": https://www.alibabacloud.com/help/en/ram/user-guide/create-an-accesskey-pair
_MARKERS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "private key",
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.S,
        ),
    ),
    ("private key", re.compile(r"PuTTY-User-Key-File-\d+:.*", re.S)),
    # "openssh-key-v1\0" in base64: the body of an OpenSSH private key, header or not.
    ("private key", re.compile(r"b3BlbnNzaC1rZXktdjE[A-Za-z0-9+/=]*(?:\r?\n[A-Za-z0-9+/=]+(?=\r?\n|\Z))*")),
    ("private key", re.compile(r"(?i)\"private_key\"\s*:\s*\"[^\"]*\"?")),
    ("access key", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b")),
    ("access key", re.compile(r"(?i)aws_secret_access_key\s*[=:]\s*\S+")),
    ("access key", re.compile(r"\bLTAI[A-Za-z0-9]{12,30}\b")),
    ("token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36,255}\b")),
    ("token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,255}\b")),
    ("token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}\b")),
    ("token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b")),
    ("token", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")),
    ("token", re.compile(r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}\b")),
    ("token", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("access key", re.compile(r"AccountKey=[A-Za-z0-9+/=]{20,}")),
    # crypt(3) password hashes, as in /etc/shadow: $1$ MD5, $2b$ bcrypt, $5$/$6$ SHA, $y$ yescrypt, $7$ scrypt.
    ("password hash", re.compile(r"\$(?:1|2[abxy]?|5|6|7|y|gy|sha1|md5)\$[./A-Za-z0-9$=,]{8,}")),
)

#: A private key body line: 48+ base64 characters, varied, mixing cases and digits (hex digests are lowercase).
_BLOB = re.compile(r"[A-Za-z0-9+/]{48,}={0,2}")


def _is_blob(run: str) -> bool:
    # Random base64 of 48+ characters uses ~35 distinct ones; "9999...PiB" or a word repeated uses few.
    return (
        len(set(run)) >= 20
        and any(c.isupper() for c in run)
        and any(c.islower() for c in run)
        and any(c.isdigit() for c in run)
    )


def _spans(text: str, blobs: bool) -> Iterator[tuple[int, int, str]]:
    for kind, pattern in _MARKERS:
        for m in pattern.finditer(text):
            if m.end() > m.start():
                yield m.start(), m.end(), kind
    if blobs:
        for m in _BLOB.finditer(text):
            if _is_blob(m.group()):
                yield m.start(), m.end(), "key material"
        from provision.spec.detector import detected  # detect-secrets, imported on first use

        yield from detected(text)


def secret_kind(text: str, blobs: bool = False) -> str | None:
    """What kind of secret ``text`` holds (``"private key"``, ``"token"``, ...), or ``None``."""
    if not isinstance(text, str) or not text:
        return None
    return next((kind for _, _, kind in _spans(text, blobs)), None)


def scrub(text: str, blobs: bool = False) -> str:
    """``text`` with every secret replaced by ``<redacted: kind>``."""
    if not isinstance(text, str) or not text:
        return text
    spans = sorted(_spans(text, blobs))
    if not spans:
        return text
    out, pos = [], 0
    for start, end, kind in spans:
        if end <= pos:
            continue
        start = max(start, pos)
        out.append(text[pos:start])
        out.append(REDACTED_TEMPLATE.format(kind=kind))
        pos = end
    out.append(text[pos:])
    return "".join(out)


def scrub_data(value: Any, blobs: bool = False, _depth: int = 0) -> Any:
    """A copy of a JSON-like ``value`` with :func:`scrub` applied to every string (keys included)."""
    if isinstance(value, str):
        return scrub(value, blobs)
    if _depth > 200:  # deeper than any document this library writes; never recurse without bound
        return value
    if isinstance(value, dict):
        return {
            scrub(k, blobs) if isinstance(k, str) else k: scrub_data(v, blobs, _depth + 1) for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return type(value)(scrub_data(v, blobs, _depth + 1) for v in value)
    return value


#: The most a decoded value may expand to (user data is at most 16 KiB on AWS, 256 KiB on GCP).
_MAX_DECODED = 16 * 1024 * 1024


def decoded(value: str) -> str:
    """``value`` base64-decoded (and gunzipped) when it is base64 text, as node user data often is; else ``value``."""
    if len(value) < 16 or len(value) % 4 or not re.fullmatch(r"[A-Za-z0-9+/]+={0,2}", value):
        return value
    try:
        raw = base64.b64decode(value, validate=True)
        if raw[:2] == b"\x1f\x8b":  # gzip (cloud-init takes gzipped user data)
            import zlib

            inflater = zlib.decompressobj(wbits=31)
            raw = inflater.decompress(raw, _MAX_DECODED)  # bounded: a gzip bomb stops here
        return raw.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError, OSError):
        return value


def find_in_data(value: Any, path: str = "", _depth: int = 0) -> Iterator[tuple[str, str]]:
    """``(path, kind)`` of every string in a JSON-like ``value`` (base64 decoded too) holding a secret."""
    if isinstance(value, str):
        kind = secret_kind(value) or secret_kind(decoded(value))
        if kind:
            yield path or "(value)", kind
        return
    if _depth > 200:
        return
    if isinstance(value, dict):
        for k, v in value.items():
            yield from find_in_data(v, f"{path}.{k}" if path else str(k), _depth + 1)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from find_in_data(v, f"{path}[{i}]", _depth + 1)
