"""Moved to experiments/figures/fig5a_lir.py; this path forwards there for one release."""
if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from experiments.moved import forward  # noqa: E402

forward(__name__, __file__)
