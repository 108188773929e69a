"""Per-cloud sections of the spec (``aws:``, ``gcp:``, ``azure:``, ``alibaba:``).

They are part of the spec, not of the adapters: the adapters in ``provision.clouds`` read them,
so they live in the spec layer and the spec never imports a cloud folder.
"""
