"""Host-bound detection: time the host held per message and per round, CPU samples, the flag."""

from __future__ import annotations

import pytest

from fedbw.engines.emulate.attribution import MessageTimes, round_records
from fedbw.engines.emulate.federation import auto_dilation, resolve_dilation
from fedbw.timewarp import NO_DILATION, Dilation
from fedbw.engines.emulate.host import (SERVER, SHAPER, START_MARGIN, HostSample, HostSampler, MessageHold, StartReference,
                                       host_round, host_round_for, message_hold)
from fedbw.flower_protocol import SUPEREXEC_TASK_POLL_S
from fedbw.results.host_record import HOST_BOUND_SHARE, HostRound
from fedbw.results.records import RecordWriter, read_records


def _host_s(parts: dict, bulk: dict, worst_start_s: float | None) -> float:  # type: ignore[type-arg]
    return message_hold(parts, bulk, worst_start_s).host_s


def test_a_message_loses_its_idle_link_time_and_a_late_start() -> None:
    bulk = {"down_sender_idle_s": 0.2, "up_sender_idle_s": 0.3}
    assert _host_s({"clientapp_start_s": 1.0}, bulk, worst_start_s=3.1) == pytest.approx(0.5)
    assert _host_s({"clientapp_start_s": 4.1}, bulk, worst_start_s=3.1) == pytest.approx(1.5)
    assert _host_s({"clientapp_start_s": 9.0}, {}, worst_start_s=None) == 0.0  # no reference: idle only
    assert message_hold({}, bulk, None).device_s == 0.0  # no device samples: all idle is the host's


def test_idle_link_time_while_the_device_ran_at_its_cap_is_the_devices_own() -> None:
    bulk = {"down_sender_idle_s": 1.0, "down_device_busy": 1.0,   # a device CPU-bound between its requests
            "up_sender_idle_s": 2.0, "up_device_busy": 0.25,      # a device mostly waiting: the host's
            }
    held = message_hold({"clientapp_start_s": 5.0}, bulk, worst_start_s=4.0)
    assert held.device_s == pytest.approx(1.0 + 0.5)
    assert held.host_s == pytest.approx(1.5 + 1.0)  # the upload's other 75 % and the late start
    assert held + held == MessageHold(5.0, 3.0)
    assert message_hold({}, {"up_sender_idle_s": 1.0, "up_device_busy": 1.7}, None) == MessageHold(0.0, 1.0)
    assert message_hold({}, {"up_sender_idle_s": 1.0, "up_device_busy": None}, None) == MessageHold(1.0, 0.0)


def test_what_the_device_leaves_of_the_idle_link_the_servers_cpu_may_hold() -> None:
    bulk = {"down_sender_idle_s": 2.0, "down_device_busy": 0.5, "down_server_busy": 0.75,
            "up_sender_idle_s": 1.0, "up_server_busy": 1.0,    # no device samples; the server at its cap
            }
    held = message_hold({}, bulk, None)
    assert held.device_s == pytest.approx(1.0)  # half the download's idle 2 s
    assert held.server_s == pytest.approx(0.75 + 1.0)  # 3/4 of the download's other second; all the upload's
    assert held.host_s == pytest.approx(0.25)
    assert held + held == MessageHold(0.5, 2.0, 3.5)


def test_idle_link_time_while_the_next_request_crossed_the_other_way_is_nobodys_hold() -> None:
    bulk = {"down_sender_idle_s": 1.0, "down_request_flight_s": 0.6, "down_device_busy": 0.5,
            "up_sender_idle_s": 0.2, "up_request_flight_s": 0.3}  # flight beyond the idle time: none left
    assert message_hold({}, bulk, None) == MessageHold(0.2, 0.2)  # the download's other 0.4 s, split in half


class _Group:
    cores = 0.5  # capped at half a core of this host


def test_busy_share_is_a_groups_cpu_over_its_cap_inside_the_window_on_the_emulated_clock() -> None:
    s = HostSampler({0: _Group()}, Dilation(2.0))
    # device 0 used 1 real CPU-s between emulated 10 and 12 (4 real s): its cap allowed 0.5 × 4 = 2
    s.samples = [HostSample(9.0, 0.0, {0: 0.0}), HostSample(10.0, 0.0, {0: 0.5}), HostSample(11.0, 0.0, {0: 1.0}),
                 HostSample(12.0, 0.0, {0: 1.5}), HostSample(13.0, 0.0, {0: 3.5})]
    assert s.busy_share(0, 10.0, 12.0) == pytest.approx(0.5)
    assert s.busy_share(0, 9.5, 12.5) == pytest.approx(0.5)  # the samples inside the window
    assert s.busy_share(0, 12.0, 13.0) == pytest.approx(1.0)  # 2 CPU-s in 2 real s at half a core: clamped
    assert s.busy_share(0, 10.2, 10.9) is None  # fewer than two samples inside: unknown
    assert s.busy_share(1, 10.0, 12.0) is None  # not capped: unknown


def test_the_servers_group_is_sampled_beside_the_devices_and_the_shapers_is_not() -> None:
    s = HostSampler({0: _Group(), SERVER: _Group(), SHAPER: _Group()}, Dilation(2.0))
    assert set(s.groups) == {0, SERVER} and s.capped
    assert not HostSampler({SERVER: _Group()}).capped  # the server alone caps no device
    # the server used 2 real CPU-s in 4 real s at half a core (its cap): at its cap; throttled 3 of 4 s
    s.samples = [HostSample(10.0, 0.0, {SERVER: 0.0}, {SERVER: 1.0}), HostSample(11.0, 0.0, {SERVER: 1.0}, {SERVER: 2.5}),
                 HostSample(12.0, 0.0, {SERVER: 2.0}, {SERVER: 4.0})]
    assert s.busy_share(SERVER, 10.0, 12.0) == pytest.approx(1.0)
    assert s.throttled(SERVER, 10.0, 12.0) == pytest.approx(0.75)
    assert s.throttled(0, 10.0, 12.0) is None  # no samples of device 0
    s.samples = [HostSample(10.0, 0.0, {SERVER: 0.0}), HostSample(12.0, 0.0, {SERVER: 1.0})]
    assert s.throttled(SERVER, 10.0, 12.0) is None  # samples without throttled time: unknown


def test_worst_start_is_the_full_task_poll_plus_the_devices_fastest_start_with_margin() -> None:
    ref = StartReference()
    assert ref.worst_s(0) is None  # no start measured yet: no verdict
    for start in (2.6, 1.75, 2.0):
        ref.add(0, start)
    ref.add(1, 3.5)  # a phone starts slower: its own reference
    ref.add(1, 0.0)  # a message without a measured start moves nothing
    assert ref.worst_s(0) == pytest.approx(SUPEREXEC_TASK_POLL_S + START_MARGIN * 1.75)
    assert ref.worst_s(1) == pytest.approx(SUPEREXEC_TASK_POLL_S + START_MARGIN * 3.5)
    late = {"clientapp_start_s": SUPEREXEC_TASK_POLL_S + START_MARGIN * 1.75 + 0.5}
    assert _host_s(late, {}, ref.worst_s(0)) == pytest.approx(0.5)
    assert _host_s(late, {}, ref.worst_s(1)) == 0.0


def test_host_round_reads_cpu_busy_and_device_time_over_the_window() -> None:
    samples = [HostSample(10.0, 100.0, {0: 1.0, 1: 2.0}, {0: 0.0, 1: 0.0}),
               HostSample(20.0, 130.0, {0: 4.0, 1: 3.0}, {0: 2.0, 1: 4.0})]
    h = host_round(MessageHold(0.4, 1.5), 10.0, 10.0, 20.0, samples, cores=2, clients=[0, 1],
                   dilation=Dilation(2.0), capped=True)
    # 30 busy CPU-s over 10 emulated s = 20 real s on 2 cores
    assert h.cpu_busy == pytest.approx(0.75)
    assert h.device_cpu_s == pytest.approx(4.0) and h.device_throttled_s == pytest.approx(3.0)
    assert h.share == pytest.approx(0.04) and not h.bound  # the devices' own 1.5 s do not count
    assert h.device_bound_s == pytest.approx(1.5)
    assert h.cpu_saturated == pytest.approx(0.0)  # one interval at 75 %


def test_a_round_says_how_much_of_it_the_host_had_no_core_to_spare() -> None:
    # 2 cores, undilated: 1 s intervals at 100 %, 50 %, 96 %, 100 % busy
    samples = [HostSample(0.0, 0.0), HostSample(1.0, 2.0), HostSample(2.0, 3.0), HostSample(3.0, 4.92),
               HostSample(4.0, 6.92)]
    h = host_round(MessageHold(), 4.0, 0.0, 4.0, samples, cores=2, clients=[], dilation=NO_DILATION, capped=False)
    assert h.cpu_saturated == pytest.approx(0.75) and h.cpu_busy == pytest.approx(6.92 / 8)
    dilated = [HostSample(0.0, 0.0), HostSample(1.0, 4.0)]  # 1 emulated s = 2 real s at K = 2: 4 CPU-s is all of it
    assert host_round(MessageHold(), 1.0, 0.0, 1.0, dilated, 2, [], dilation=Dilation(2.0),
                      capped=False).cpu_saturated == pytest.approx(1.0)
    assert host_round(MessageHold(), 1.0, 0.0, 1.0, [], 2, [], dilation=NO_DILATION, capped=False).cpu_saturated is None
    bound = host_round(MessageHold(HOST_BOUND_SHARE * 10.0), 10.0, 10.0, 20.0, [], 2, [0], dilation=NO_DILATION,
                       capped=False)
    assert bound.bound and bound.cpu_busy is None and bound.device_bound_s is None


def _times(cid: int, t0: float, host: float, device: float | None = None) -> MessageTimes:
    return MessageTimes(cid, "train", 1e6, 1e6, 1e6, 1e6, t0, t0 + 10.0, 2.0, 1.0, 3.0, t_host_s=host,
                        t_device_s=device, parts={"serverapp_poll_s": 0.5})


def test_the_round_counts_the_critical_clients_host_time_and_stages_keep_theirs() -> None:
    times = [_times(0, 0.0, 0.2), _times(1, 0.5, 2.0)]  # client 1 finishes last: it holds the stage
    clients, rec = round_records("r", "emulate", 1, times, {0: "home-30", 1: "home-30"}, [0, 1], [],
                                 host=host_round_for(None, [0, 1]))
    assert rec.host is not None and rec.host.lost_s == pytest.approx(2.0)
    assert rec.host.share == pytest.approx(2.0 / rec.round_time_s) and rec.host_bound
    assert [c.stages[0].t_host_s for c in clients] == [0.2, 2.0]
    _, plain = round_records("r", "emulate", 1, times, {}, [0, 1], [])
    assert plain.host is None and plain.host_bound is None


def test_a_capped_round_keeps_the_critical_clients_own_device_time_out_of_the_hosts_share() -> None:
    times = [_times(0, 0.0, 0.1, device=0.3), _times(1, 0.5, 0.2, device=4.0)]  # client 1 holds the stage
    capped = HostSampler({0: _Group(), 1: _Group()}, Dilation(2.0))
    _, rec = round_records("r", "emulate", 1, times, {}, [0, 1], [], host=host_round_for(capped, [0, 1]))
    assert rec.host is not None and rec.host.lost_s == pytest.approx(0.2)
    assert rec.host.device_bound_s == pytest.approx(4.0) and not rec.host_bound


def test_host_records_survive_the_records_file(tmp_path) -> None:  # noqa: ANN001
    times = [_times(0, 0.0, 1.0)]
    clients, rec = round_records("r", "emulate", 1, times, {0: "home-30"}, [0], [], host=host_round_for(None, [0]))
    with RecordWriter(tmp_path / "records.jsonl", run_id="r", engine="emulate") as w:
        w.write([*clients, rec])
    back = read_records(tmp_path / "records.jsonl")
    assert back.rounds[0].host == rec.host and back.clients[0].stages[0].t_host_s == 1.0
    assert isinstance(back.rounds[0].host, HostRound)


def test_the_sampler_samples_at_most_every_half_second() -> None:
    s = HostSampler({})
    s.maybe_sample()
    s.maybe_sample()
    assert len(s.samples) == 1 and s.samples[0].busy_cpu_s > 0 and not s.capped


def test_auto_dilation_gives_every_device_a_core() -> None:
    assert auto_dilation(2, cores=2) == 3  # (2 + 2 server cores) / 1.5 usable cores
    assert auto_dilation(8, cores=2) == 7
    assert auto_dilation(1, cores=64) == 1
    assert resolve_dilation("auto", 4, cores=2) == 4.0 and resolve_dilation(2.5, 4) == 2.5


def test_a_measured_messages_upload_idle_time_is_split_by_its_devices_cpu_over_that_payload() -> None:
    """From the shaper's transfer through message_times to the hold: the payload's window (its first byte in,
    its last out) picks the device's samples, so a device at its cap during its upload keeps that upload's
    idle time as its own, while its download (no samples inside) stays the host's."""
    from fedbw.engines.emulate.attribution import message_times
    from fedbw.engines.emulate.federation import MessageMeasure
    from fedbw.engines.emulate.host import judge_messages
    from fedbw.engines.emulate.supernode_log import MessageSpan
    from fedbw.shaper.series import Transfer

    span = MessageSpan(0, "train", "1", 1.1, 1.5, 3.0, 6.0, 8.0)
    down = Transfer(1_000_000, 1.0, 1.5, 990_000, 1.05, 1.5, sender_idle_s=0.2)
    up = Transfer(4_000_000, 6.0, 8.0, 3_990_000, 6.05, 8.0, sender_idle_s=1.2)
    ev = {"client_id": 0, "stage": "fit", "t_sent": 0.0, "t_replied": 9.0, "t_recv": 3.5, "t_reply": 5.5,
          "t_app_s": 2.0, "compute_s": 1.5}
    t = message_times(ev, MessageMeasure(0, span, down, up))
    assert (t.bulk["up_first_s"], t.bulk["up_last_s"]) == (6.05, 8.0)
    sampler = HostSampler({0: _Group()}, NO_DILATION)  # half a core: 0.5 CPU-s per second at the cap
    sampler.samples = [HostSample(s, 0.0, {0: 0.5 * s}) for s in (6.5, 7.0, 7.5)]
    judge_messages([t], sampler, StartReference())
    assert t.bulk["up_device_busy"] == pytest.approx(1.0) and t.bulk["down_device_busy"] is None
    assert t.bulk["up_server_busy"] is None and t.bulk["up_device_throttled"] is None  # no such samples
    assert t.t_device_s == pytest.approx(1.2) and t.t_host_s == pytest.approx(0.2)
    plain = message_times(ev, MessageMeasure(0, span, down, up))
    judge_messages([plain], None, StartReference())  # no sampler: every idle second is the host's, as before
    assert plain.t_host_s == pytest.approx(1.4) and plain.t_device_s == 0.0
    # the server's group sampled too, at its cap through the download and idle through the upload; the
    # download's next request was in flight 0.05 of its 0.2 idle seconds (the link's own)
    served = message_times(ev, MessageMeasure(0, span, down, up))
    served.bulk["down_request_flight_s"] = 0.05
    both = HostSampler({0: _Group(), SERVER: _Group()}, NO_DILATION)
    both.samples = [HostSample(s, 0.0, {0: 0.5 * max(s, 6.5), SERVER: 0.5 * min(s, 1.5)})
                    for s in (1.1, 1.3, 1.5, 6.5, 7.0, 7.5)]  # the device idle through the download
    judge_messages([served], both, StartReference())
    assert served.bulk["down_server_busy"] == pytest.approx(1.0) and served.bulk["up_server_busy"] == 0.0
    assert served.bulk["down_device_busy"] == 0.0
    assert served.t_server_s == pytest.approx(0.15) and served.t_device_s == pytest.approx(1.2)
    assert served.t_host_s == pytest.approx(0.0)


def test_a_sample_is_kept_as_a_plain_row() -> None:
    import json

    row = HostSample(1.5, 20.0, {0: 0.25}, {0: 0.5}).as_row()
    assert json.loads(json.dumps(row)) == [1.5, 20.0, {"0": 0.25}, {"0": 0.5}]
