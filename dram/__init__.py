"""DDR5 timing model (numba), usable alone on memory traces. Knows nothing about ANNS."""
