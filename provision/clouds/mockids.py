"""Deterministic ids of the mocked clouds, derived from logical names (pure: no Pulumi).

:class:`provision.clouds.mocking.MockContext` answers with these, and so can code that renders what a mocked node
sees without running the Pulumi mocks (``userdata.mock_user_data``), so both agree on every id.
"""

from __future__ import annotations

import hashlib


def hex_id(name: str, length: int = 17) -> str:
    """A stable hex id derived from the logical name (golden files stay stable)."""
    return hashlib.sha256(name.encode()).hexdigest()[:length]


def num_id(name: str, digits: int = 19) -> str:
    """A stable decimal id derived from the logical name."""
    return str(int(hashlib.sha256(name.encode()).hexdigest(), 16))[:digits]
