"""The package list, which joins two trees: ``fusilli/`` installs as ``fusilli`` and
``tools/`` (the command-line tools' sources) as ``fusilli.tools`` through
``package_dir``. pyproject's static ``packages.find`` cannot express that mapping
with discovery; everything else is in pyproject.toml."""

from setuptools import find_packages, setup

tools = ["fusilli.tools"] + [f"fusilli.tools.{name}" for name in find_packages("tools")]
setup(
    packages=find_packages(include=["fusilli", "fusilli.*"]) + tools,
    package_dir={"fusilli.tools": "tools"},
)
