"""Command-line tools installed with the package (``fusilli-opt``, ``fusilli-benchmark``)."""
