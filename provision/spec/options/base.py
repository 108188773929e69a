"""The base of every cloud's option model (``spec.<cloud>``)."""

from pydantic import BaseModel, ConfigDict


class CloudOptions(BaseModel):
    """Options that only one cloud understands. Frozen; unknown keys are errors."""

    model_config = ConfigDict(frozen=True, extra="forbid")
