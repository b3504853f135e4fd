"""Packages: the ``app`` tree, plus the repository's ``resources/`` shipped as ``app.resources``.

(pyproject.toml holds everything else; this file exists only because that mapping cannot
be combined with automatic package discovery there.)
"""

from setuptools import find_namespace_packages, find_packages, setup

setup(
    packages=[
        *find_packages(include=["app", "app.*"]),
        "app.resources",
        # data folders listed too, so setuptools ships them without warnings
        *(f"app.resources.{p}" for p in find_namespace_packages(where="resources")),
    ],
    package_dir={"app.resources": "resources"},
)
