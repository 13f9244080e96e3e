"""Sizes against what the engine represents (issue 55, bug 3).

A declared message of 2**31 bytes or more (or ``vectors=10**9``) passed validation, then the
run stopped with "no progress for 1000 chunks (deadlock)": a transfer longer than 2e9 cycles
completed nothing for 1000 chunks, and a cycle past 2**39 overflowed the event keys
(``cycle << 24 | kind << 22 | id``). Now every Send field and every message's payload is
checked against cosmos.systems.MAX_MESSAGE_BYTES (one error naming the field), the event heap
keeps a word per cycle (any cycle up to cosmos.program.MAX_CYCLES), waiting for a scheduled
event is progress, and a run asking for a later cycle stops with one line saying why.
"""

import dataclasses

import numpy as np
import pytest

from cosmos.presets import get_preset
from cosmos.simulate import simulate
from cosmos.systems import MAX_MESSAGE_BYTES, Send, _gpc_search, register_system
from cosmos_common import UserError
from tests.cosmos_helpers import make_trace
from tests.test_cosmos_engine import link_hops, worked_trace


def _model(name, **send):
    """The cosmos model (searches on the GPCs, distances on the GPC) whose dispatch message
    is ``Send("down", **send)``."""
    return dataclasses.replace(_gpc_search(name, "test: one large dispatch message", "gpc"),
                               dispatch=(Send("down", **send),))


def _config(name, **send):
    register_system(_model(name, **send), replace=True)
    base = get_preset("cosmos")
    return dataclasses.replace(base, name=name, kind=name, layout_spread=False,
                               rank_pu=dataclasses.replace(base.rank_pu, enabled=False),
                               device=dataclasses.replace(base.device, count=1)).validate()


@pytest.mark.parametrize("field, value", [("bytes", MAX_MESSAGE_BYTES + 1),
                                          ("per_item_bytes", 2**41),
                                          ("vectors", 2**63)])
def test_a_send_field_beyond_one_message_is_refused_naming_it(field, value):
    with pytest.raises(UserError, match=rf"'big': dispatch\[0\]\.{field}: .* more than one "
                                        rf"message carries: at most 1,099,511,627,776 bytes"):
        _model("big", **{field: value}).validate()
    _model("big", **{field: MAX_MESSAGE_BYTES}).validate()      # the limit itself is fine


@pytest.mark.parametrize("send, field", [(dict(vectors=2**35), "vectors"),
                                         (dict(per_item_bytes=2**38, count="k"),
                                          "per_item_bytes")])
def test_a_payload_beyond_one_message_is_refused_before_simulating(send, field):
    # each field is within the limit; with the trace's 64-byte vectors, or k = 10 results,
    # the message is not
    cfg = _config("big-payload", **send)
    with pytest.raises(UserError, match=rf"'big-payload': dispatch\[0\]\.{field}: a message "
                                        rf"of 2(,\d{{3}}){{4}} bytes \("):
        simulate(cfg, worked_trace(), progress=False, cluster_device=np.zeros(4, np.int64))


def test_a_billion_vector_message_simulates_to_its_link_time():
    # the case: 64 GB down the link, about 5.2e9 cycles (the old driver gave up after
    # 2e9 cycles without a completed query)
    cfg = _config("billion", vectors=10**9)
    res = simulate(cfg, worked_trace(), progress=False, cluster_device=np.zeros(4, np.int64))
    L = cfg.link
    wire = (1 + (10**9 * 64 + L.slot_bytes - 1) // L.slot_bytes) * L.wire_bytes(1)
    down, _ = link_hops(cfg)
    assert res.program.task_pool[0] == cfg.device.count + 1     # the dispatch on the I/O agent
    assert res.state.task_end[0] == down(0, wire) > 5e9           # its message's arrival
    assert res.state.q_done[0] > res.state.task_end[0]


def test_event_cycles_past_2_39_keep_their_order():
    from cosmos.engine import SC_CLOCK, SC_HEAP, _event, _hpop
    from cosmos.program import MAX_CYCLES

    st = simulate(get_preset("cosmos"), worked_trace(), progress=False,
                  cluster_device=np.zeros(4, np.int64)).state
    st.heap[:] = 0
    st.scal[SC_HEAP] = 0
    events = [(2**39 + 7, 2, 3), (5, 2, 1), (2**45, 1, 9), (2**39 - 3, 2, 2), (2**39 + 7, 1, 4),
              (MAX_CYCLES, 2, 5)]
    for t, kind, ident in events:
        _event(st, t, kind, ident)
    popped = []
    while st.scal[SC_HEAP] > 0:
        t = int(st.heap[0])
        tag = int(_hpop(st.heap, st.scal))
        popped.append((t, tag >> 22, tag & ((1 << 22) - 1)))
    assert popped == sorted(events)
    assert st.scal[SC_CLOCK] == 0
    _event(st, MAX_CYCLES + 10, 2, 7)       # beyond the clock: recorded, kept at the clock
    assert st.scal[SC_CLOCK] == MAX_CYCLES + 10 and st.heap[0] == MAX_CYCLES


def test_a_run_past_the_engine_clock_stops_with_one_clear_error():
    # three messages of 2**40 bytes at once over a link of 1 MB/s (every value within its
    # range): the third arrives at 1.1e16 cycles, beyond 2**53 (the old engine's event keys
    # held cycles below 2**39 only; it reported a deadlock)
    base = _config("slow-link", bytes=MAX_MESSAGE_BYTES)
    cfg = dataclasses.replace(
        base, link=dataclasses.replace(base.link, bandwidth_GBps=0.001),
        switch=dataclasses.replace(base.switch, upstream_bandwidth_GBps=0.001)).validate()
    with pytest.raises(ValueError) as err:
        simulate(cfg, make_trace(num_queries=3, hops=2, reads_per_hop=2), progress=False,
                 trace_name="t.npz")
    msg = str(err.value)
    assert msg.startswith("t.npz: system 'slow-link' schedules a step's end at cycle 1.12e+16, "
                          "beyond the engine's clock of 2**53 = 9,007,199,254,740,992 cycles")
    assert "link.bandwidth_GBps" in msg and "\n" not in msg
