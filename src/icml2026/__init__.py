"""icml2026: reference implementations of nineteen ICML 2026 papers, with one CLI and one report."""

__version__ = "0.1.0"
