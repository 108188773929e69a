"""Package discovery for setuptools; everything else is in pyproject.toml.

The wheel carries two top-level folders of this repository inside the package, as package data:
``images/`` as ``provision/_images`` (node images, bootstrap steps, version rules) and ``stacks/``
as ``provision/_stacks`` (the shipped stack files). pyproject.toml's ``packages.find`` cannot add a
package whose folder lies outside ``provision/``, so the package list is built here: every package
under ``provision/`` plus the two mapped ones. ``provision.spec.shipped`` finds them at run time
(in the installed package, else in the checkout).
"""

from setuptools import find_packages, setup

SHIPPED = {"provision._images": "images", "provision._stacks": "stacks"}

setup(
    packages=[*find_packages(include=["provision", "provision.*"]), *SHIPPED],
    package_dir=SHIPPED,
)
