"""The table of bad specs: every mistake is reported with its path, rule and fix, all at once.

Each case starts from a valid base spec of one cloud, applies a mutation (dotted path -> value,
or ``DELETE``) and names the stage that must refuse it and the Problem path(s) it must carry:

* ``spec``: :func:`provision.spec.models.load_spec` raises ``SpecError`` (shape and cross-field rules);
* ``catalog``: the spec loads, and :func:`provision.planning.resolve.resolve` collects problems;
* ``budget``: the plan is feasible, and :func:`provision.planning.cost.estimate` raises ``BudgetError``.

Catalog and budget cases are also run through ``get_adapter(cloud).plan`` when the cloud's adapter
exists (and skipped, naming the missing adapter module, until then).

The table is split by topic (``placement``, ``capacity_storage``, ``lifetime_access``, ``fields``);
``tests/test_spec_errors.py`` runs it.
"""

from __future__ import annotations

from spec_cases.base import (
    ALIBABA_REGION,
    BASES,
    CATALOG,
    DELETE,
    PRIVATE_KEYS,
    SECRET_MATERIAL,
    VALID_KEY,
    C,
    Case,
    mutate,
    outcome,
    public_key,
)
from spec_cases.capacity_storage import CAPACITY, STORAGE
from spec_cases.fields import CLOUD_OPTIONS, MULTI, UNKNOWN_FIELDS
from spec_cases.lifetime_access import ACCESS, BUDGET, LIFETIME, TAGS
from spec_cases.placement import CLOUDS_REGIONS_ZONES, COUNTS, FABRICS, GPUS_AND_TYPES, NAMES

CASES: list[Case] = [
    *NAMES,
    *CLOUDS_REGIONS_ZONES,
    *GPUS_AND_TYPES,
    *COUNTS,
    *FABRICS,
    *CAPACITY,
    *STORAGE,
    *TAGS,
    *LIFETIME,
    *BUDGET,
    *ACCESS,
    *UNKNOWN_FIELDS,
    *CLOUD_OPTIONS,
    *MULTI,
]
CASES_BY_ID = {c.id: c for c in CASES}

__all__ = [
    "ALIBABA_REGION",
    "BASES",
    "CASES",
    "CASES_BY_ID",
    "CATALOG",
    "DELETE",
    "PRIVATE_KEYS",
    "SECRET_MATERIAL",
    "VALID_KEY",
    "C",
    "Case",
    "mutate",
    "outcome",
    "public_key",
]
