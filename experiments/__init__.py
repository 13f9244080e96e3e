"""Experiment scripts: one per figure, each runnable on its own and as ``cosmos run NAME``."""
