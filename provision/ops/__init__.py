"""The operations layer: what users do with clusters.

``cluster`` is the Python API (:class:`Cluster`), ``ephemeral`` bounded CI clusters that are always
destroyed, ``reaper`` finds and removes expired clusters.
"""
