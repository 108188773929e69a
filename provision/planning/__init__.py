"""The planning layer: ``ClusterSpec`` + catalog -> ``ClusterPlan``, costs, images, bootstrap text, sizing.

Pure: nothing here imports Pulumi or a cloud SDK. ``plan`` holds the plan models, ``resolve`` the
catalog checks shared by every cloud, ``cost`` prices and budgets, ``images`` the node-image pins,
``bootstrap`` renders node scripts, ``outputs`` the stack outputs computed from a plan, and
``sizing`` the training-run planner.
"""
