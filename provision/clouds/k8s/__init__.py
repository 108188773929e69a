"""Kubernetes pieces every cloud's ``scheduler: kubernetes`` path shares; imports no cloud.

``addons`` and ``jobs`` are pure; ``objects`` creates Pulumi Kubernetes objects; ``mocks`` is the
mocked API server for ``kubernetes:*`` resource types.
"""
