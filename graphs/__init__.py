"""Datasets, clustered graph ANNS indexes and the traced beam search. Knows nothing about DRAM or CXL."""
