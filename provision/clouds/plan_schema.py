"""The JSON Schema of ``provision plan --json`` (``provision schema --plan``).

:class:`~provision.planning.plan.PlanJson` declares the document; its ``extra`` is the cloud's own
:class:`~provision.planning.plan.CloudPlan`. Here each registered adapter names its plan model (the
type argument of ``Adapter[...]``), and the schema ties ``extra`` to it by ``cloud``: an AWS plan's
``extra`` must be an ``AwsPlan``, and so on.
"""

from __future__ import annotations

import typing
from typing import Any, Union

from pydantic import Field, create_model

from provision.catalog import CLOUDS
from provision.clouds.base import Adapter, adapter_class
from provision.planning.plan import CloudPlan, PlanJson


def plan_models() -> dict[str, type[CloudPlan]]:
    """cloud -> the model of its ``plan.extra``, read from each adapter's ``Adapter[...]`` base."""
    out: dict[str, type[CloudPlan]] = {}
    for cloud in CLOUDS:
        cls = adapter_class(cloud)
        for base in getattr(cls, "__orig_bases__", ()):
            if typing.get_origin(base) is Adapter:
                (model,) = typing.get_args(base)
                out[cloud] = model
    return out


def plan_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) every ``provision plan --json`` document satisfies."""
    models = plan_models()
    union: Any = Union[tuple(dict.fromkeys(models.values()))]  # type: ignore[valid-type]  # noqa: UP007
    doc_model = create_model(
        "PlanJson",
        __base__=PlanJson,
        __doc__=PlanJson.__doc__,
        extra=(union, Field(description="The cloud's own decisions: the model named for the plan's cloud.")),
    )
    schema = doc_model.model_json_schema(mode="serialization")
    schema["allOf"] = [
        {
            "if": {"properties": {"cloud": {"const": cloud}}, "required": ["cloud"]},
            "then": {"properties": {"extra": {"$ref": f"#/$defs/{model.__name__}"}}},
        }
        for cloud, model in models.items()
    ]
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema
