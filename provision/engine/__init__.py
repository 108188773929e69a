"""The engine layer: runs plans as Pulumi programs.

``program`` is the Pulumi program (``stacks/__main__.py`` calls it), ``automation`` drives the
Pulumi Automation API, ``mockrun`` runs the program under the mocked cloud, ``mockstate`` keeps the
mocked cloud's state between runs, ``preflight`` asks the cloud what the catalog cannot know, and
``progress`` shows what happens.
"""
