"""The planning layer: ``ClusterSpec`` + catalog -> ``ClusterPlan``, costs, images, bootstrap text, sizing.

Pure: nothing here imports Pulumi or a cloud SDK (a forbidden-imports contract in pyproject.toml
holds it). ``plan`` holds the plan models, ``resolve`` the catalog checks shared by every cloud,
``cost`` prices and budgets, ``images`` the node-image pins, ``bootstrap`` renders node scripts,
``outputs`` the stack outputs rendered from a plan (``provision.clouds.outputs`` wires them to
Pulumi values), and ``sizing`` the training-run planner.
"""
