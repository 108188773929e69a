"""The clouds layer: one adapter per cloud, each in a folder of the same shape.

``base`` holds the adapter contract, the registry (cloud SDKs and Pulumi providers are imported
only when that cloud is built) and the tags every resource carries; ``validate`` plans a spec
with every problem at once; ``mocking`` is the mocked cloud that each folder's ``mocks.py``
extends. The four folders never import each other.
"""
