"""Cluster placement across CXL devices and load-imbalance metrics (numpy only)."""
