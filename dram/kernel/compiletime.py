"""The kernels' compile-time interface: what a specialized build compiles in as constants.

Part of the cycle: none; it declares which inputs of the cycle's code are fixed for a whole
simulation. :mod:`cosmos.specialize` compiles a copy of this package for one DRAM
configuration and one controller-state shape, in which every read of a parameter of
:data:`CONSTANT_PARAMS` and of a header slot of :data:`CONSTANT_SLOTS` in a jitted function is
that value (about 13 % less time per simulated request: the loads go, and the address
arithmetic around them folds). It sees exactly two spellings, so the kernels read these only
as

* ``params.<field>`` (``params`` being the function's parameter; passing ``params`` whole to
  another kernel function is fine), and
* ``H[_u(H_<SLOT>)]`` (``H`` being the state's heap array).

tests/test_specialize.py walks the syntax tree of every module of the package and fails on
any other read (an alias, ``getattr``, an undeclared field, a header slot read otherwise).
A third kind of constant needs no rewriting: ``features(params)`` (:data:`TYPE_CONSTANTS`),
the controller features a configuration uses, which numba reads from the type of ``params``
and so folds in every build.
"""

from __future__ import annotations

import inspect

from numba.extending import overload

import dram.config as _config

#: Scalar fields of ``params`` (``dram.config.Params``) that are constants in a specialized
#: build: geometry, queue depths and watermarks, policies, latencies, table offsets.
CONSTANT_PARAMS = (
    "n_channels", "n_ranks", "n_bg", "n_banks", "n_cmds",
    "read_q", "write_q", "active_q", "wr_high_n", "wr_low_n",
    "scheduler", "row_policy", "refresh", "read_latency", "nBL",
    "o_map_fields", "o_map_radix", "o_cons_ptr", "o_follow", "o_lat", "o_win", "o_win_end",
    "o_hist_len", "o_has_sib", "o_dlat", "o_cmeta", "o_fb_bg", "pd_idle", "sr_idle", "nRFC",
    "nRP",
)

#: Fields of ``params`` the kernels read that stay loads: ``tab`` (an array), and ``nREFI``,
#: whose constant lets LLVM compute the refresh loop's trip count with a 128-bit division that
#: numba's JIT cannot link.
RUNTIME_PARAMS = ("tab", "nREFI")

#: Header slots of the state (:mod:`.layout`, ``H_*``) that are constants in a specialized
#: build: the sizes and region offsets of a state of one shape.
CONSTANT_SLOTS = (
    "H_G", "H_S", "H_NN", "H_NC", "H_HM", "H_PQ", "H_PD", "H_CAP", "H_LOGCAP", "H_NB", "H_R",
    "H_DIRECT", "H_O_SLOT", "H_O_Q", "H_O_CH", "H_O_PRIO", "H_O_PEND", "H_O_BANK",
    "H_O_READY", "H_O_HIST", "H_O_COMP", "H_O_GLOB", "H_O_STATS", "H_O_RBUSY", "H_O_LOG",
    "H_O_BKL", "H_O_RACT",
)


# ---- features: constants of every build, the generic one too

#: Functions of ``params`` that are compile-time constants in every build, generic or
#: specialized, because they read ``params``' numba type, not its values: the kernels call
#: them as ``name(params)`` (tests/test_specialize.py accepts that spelling for these).
TYPE_CONSTANTS = ("features",)

def features(params) -> int:
    """The feature bits (``dram.config.FEATURE_*``) of ``params``: in jitted code a
    compile-time constant, read from the record's numba type (``dram.config.params_dtype``
    gives each feature set a type of its own), so a branch ``if features(params) &
    FEATURE_X:`` is folded away where the feature is off -- in the generic build as in a
    specialized one, at the price of one compilation per feature set used. Off by default:
    the configurations of the Ramulator 2.1 reference runs have no feature and run the code
    they ran before the features existed."""
    return _config.record_features(params.dtype.names)


@overload(features, inline="always")
def _features_jit(params):
    bits = _config.record_features(params.fields.keys())
    return lambda params: bits


def only_with(feature: int, otherwise):
    """Decorator for a jitted kernel function ``fn(params, ...)`` that only a configuration
    with ``feature`` (a bit ``dram.config.FEATURE_*``) uses: calls from jitted code compile to
    ``fn`` where ``params``' type has the feature, and to the constant ``otherwise`` where it
    has not, so that there ``fn``'s body is never typed or compiled. (A call in a branch that
    ``features(params)`` folds away would still be typed, and ``fn`` compiled with everything
    it inlines; a feature's code would cost every build compile time.) The call sites test the
    feature themselves, so ``otherwise`` only gives such a call its type. Calls from Python go
    to ``fn``."""
    def wrap(fn):
        py = getattr(fn, "py_func", fn)               # (a plain function under NUMBA_DISABLE_JIT)
        names = list(inspect.signature(py).parameters)
        if not names or names[0] != "params":
            raise TypeError(f"only_with: {py.__name__} must take params first")
        args = ", ".join(names)
        scope = {"fn": fn, "otherwise": otherwise}
        # the three share fn's parameter names, as numba's overload requires
        exec(f"def gate({args}):\n    return fn({args})\n"
             f"def off({args}):\n    return otherwise\n"
             f"def select({args}):\n    return pick(params)\n", scope)
        scope["pick"] = lambda params: (
            py if _config.record_features(params.fields.keys()) & feature else scope["off"])
        gate = scope["gate"]
        gate.__name__ = gate.__qualname__ = py.__name__
        gate.__doc__ = py.__doc__
        overload(gate)(scope["select"])
        return gate
    return wrap
