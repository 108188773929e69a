"""Secrets of every common format, found with Yelp's ``detect-secrets`` plugins.

:mod:`provision.spec.secrets` knows private keys and tokens with a documented prefix. Many
secrets have no prefix (an AWS secret access key is 40 base64 characters, a W&B key 40 hex
digits), so where a value is echoed (errors, plans, ``--json``) this module also asks the
maintained detector, used as a library (https://github.com/Yelp/detect-secrets, plugins in
``detect_secrets/plugins``):

* its **regex plugins** (AWS, Stripe, GitHub, GitLab, Slack, npm, PyPI, OpenAI, SendGrid,
  Twilio, Discord, Telegram, Mailchimp, Square, Artifactory, JWT, Azure storage, private keys,
  basic-auth URLs) through ``analyze_string``, which never verifies a secret online (only
  ``analyze_line`` may call a vendor's API);
* its **high-entropy plugins** with their default limits (base64 4.5 bits, hex 3.0 bits per
  character) on every run of their character sets, minus what its own heuristics call a UUID
  or a sequential string. Hex runs count from 32 digits (the shortest common hex key; AMI ids
  have 17), so a full 40-digit git commit hash is refused like a W&B key: the two cannot be told
  apart, and a short hash (``git rev-parse --short=12``) names a commit as well.

Plugins that judge by a nearby keyword (``KeywordDetector``, the IBM and Cloudant ones) or
flag public IP addresses (``IPPublicDetector``) are left out: a spec holds CIDRs and prose.
Two documented shapes the plugins lack are added by hand, each with its source.

``detect-secrets`` (and ``requests``, which its base plugin imports) is imported on the first
scan only, so ``import provision`` stays fast.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

#: Regex plugins of detect-secrets used (class names in ``detect_secrets.plugins``).
_REGEX_PLUGINS = (
    ("aws", "AWSKeyDetector", "access key"),
    ("artifactory", "ArtifactoryDetector", "token"),
    ("azure_storage_key", "AzureStorageKeyDetector", "access key"),
    ("basic_auth", "BasicAuthDetector", "password"),
    ("discord", "DiscordBotTokenDetector", "token"),
    ("github_token", "GitHubTokenDetector", "token"),
    ("gitlab_token", "GitLabTokenDetector", "token"),
    ("jwt", "JwtTokenDetector", "token"),
    ("mailchimp", "MailchimpDetector", "access key"),
    ("npm", "NpmDetector", "token"),
    ("openai", "OpenAIDetector", "access key"),
    ("private_key", "PrivateKeyDetector", "private key"),
    ("pypi_token", "PypiTokenDetector", "token"),
    ("sendgrid", "SendGridDetector", "access key"),
    ("slack", "SlackDetector", "token"),
    ("square_oauth", "SquareOAuthDetector", "token"),
    ("stripe", "StripeDetector", "access key"),
    ("telegram_token", "TelegramBotTokenDetector", "token"),
    ("twilio", "TwilioKeyDetector", "access key"),
)

#: Shapes detect-secrets has no plugin for.
_EXTRA = (
    # Microsoft Entra client secrets: 3 characters, a digit, "Q~", then 31-34 more (gitleaks'
    # azure-ad-client-secret rule, https://github.com/gitleaks/gitleaks/blob/master/config/gitleaks.toml).
    (
        "client secret",
        re.compile(r"(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])"),
    ),
    # HashiCorp Vault service/batch/recovery tokens: https://developer.hashicorp.com/vault/docs/concepts/tokens#token-prefixes
    ("token", re.compile(r"\bhv[sbr]\.[A-Za-z0-9_-]{24,}")),
)

#: The shortest hex run judged by entropy (an MD5-sized key; a 40-digit W&B key or SHA-1 is longer).
_MIN_HEX = 32


@lru_cache(maxsize=1)
def _plugins() -> tuple[list[tuple[Any, str]], Any, Any]:
    import importlib

    from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString, HexHighEntropyString

    regex = []
    for module, name, kind in _REGEX_PLUGINS:
        regex.append((getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), name)(), kind))
    return regex, Base64HighEntropyString(), HexHighEntropyString()


#: A hex run right after one of these is a labelled digest (``image@sha256:...``), not a key.
_DIGEST_LABEL = re.compile(r"(?:sha1|sha224|sha256|sha384|sha512|md5):$", re.I)


def _entropy_runs(plugin: Any, text: str) -> Iterator[str]:
    # The plugin's own character set, unquoted (its regex wants quotes, as in source code).
    for m in re.finditer(f"[{re.escape(plugin.charset)}]+", text):
        if not _DIGEST_LABEL.search(text, max(0, m.start() - 8), m.start()):
            yield m.group()


def _high_entropy(text: str, b64: Any, hexa: Any) -> Iterator[str]:
    from detect_secrets.filters.heuristic import is_potential_uuid, is_sequential_string

    def plain(run: str) -> bool:
        return not is_potential_uuid(run) and not is_sequential_string(run)

    for run in _entropy_runs(hexa, text):
        if len(run) >= _MIN_HEX and hexa.calculate_shannon_entropy(run) > hexa.entropy_limit and plain(run):
            yield run
    for run in _entropy_runs(b64, text):
        # Random key material mixes cases and digits; paths and names ("projects/x/global/images/...") do not.
        mixed = any(c.isupper() for c in run) and any(c.islower() for c in run) and any(c.isdigit() for c in run)
        if mixed and b64.calculate_shannon_entropy(run) > b64.entropy_limit and plain(run):
            yield run


def detected(text: str) -> Iterator[tuple[int, int, str]]:
    """``(start, end, kind)`` of every secret the detector finds in ``text``."""
    if not text or len(text) < 16:  # no format it knows is shorter
        return
    regex, b64, hexa = _plugins()
    found: list[tuple[str, str]] = []
    for plugin, kind in regex:
        found.extend((match, kind) for match in plugin.analyze_string(text) if match)
    for kind, pattern in _EXTRA:
        found.extend((m.group(), kind) for m in pattern.finditer(text))
    found.extend((run, "key material") for run in _high_entropy(text, b64, hexa))
    for match, kind in found:
        start = text.find(match)
        while start >= 0:
            yield start, start + len(match), kind
            start = text.find(match, start + 1)
