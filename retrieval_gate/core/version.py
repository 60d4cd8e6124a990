"""The tool's version, written into every result, baseline and history record."""

__version__ = "0.1.0"
