"""The old paths of the experiment scripts, ``experiments/NAME.py``, kept for one release.

Each experiment moved to ``experiments/figures/NAME.py``. The file left at the old path
calls :func:`forward`: run as a script (``python experiments/fig4a_qps.py --scale tiny``), it
says on stderr where the script is now and runs it with the same arguments; imported
(``import experiments.fig4a_qps``), it is the moved module itself.
"""

from __future__ import annotations

import importlib
import runpy
import sys
from pathlib import Path


def forward(name: str, old_file: str) -> None:
    """Forward the module ``name`` (``__name__`` of the old file ``old_file``) to
    ``experiments.figures.<its stem>``."""
    stem = Path(old_file).stem
    target = f"experiments.figures.{stem}"
    if name == "__main__":
        print(f"note: experiments/{stem}.py moved to experiments/figures/{stem}.py (or: cosmos "
              f"run {stem}); this path forwards there for one release", file=sys.stderr)
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    else:
        sys.modules[name] = importlib.import_module(target)
