"""One subpackage per paper; each registers its experiments in ``experiments.py``."""
