"""The provision policy pack folder (``PulumiPolicy.yaml`` + ``__main__.py``) for ``--policy-pack``.

Importing this package starts nothing; Pulumi runs ``__main__.py``, which serves the pack.
"""
