"""tfloop's version and the name it is installed under (kept here so that reading them imports
nothing else)."""
__version__ = "0.1.0"
# The distribution on PyPI: ``tfloop`` there is an unrelated project. The package is ``tfloop``.
DISTRIBUTION = "tfloop-train"
