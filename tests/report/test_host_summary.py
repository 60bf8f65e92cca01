"""The run's host line under its tables: the host verdict, and what the devices' own CPU held beside it."""

from __future__ import annotations

from fedbw.report.tables import host_summary
from fedbw.results.host_record import HostRound
from fedbw.results.records import RoundRecord


def test_the_run_line_says_what_the_devices_own_cpu_held_beside_the_host_verdict() -> None:
    def rnd(i: int, host: HostRound) -> RoundRecord:
        return RoundRecord("r", "emulate", i, 2, 10.0, 1.0, 0.0, 9.0, {}, 0.0, 0.0, host=host)

    capped = [rnd(i, HostRound(0.1, 0.01, dilation=7.0, cpu_capped=True, device_bound_s=own, server_bound_s=srv))
              for i, own, srv in ((1, 2.0, 1.0), (2, 3.0, None))]
    line = host_summary(capped)
    assert line is not None and line.startswith("host: no round host-bound (dilation 7×, devices CPU-capped)")
    assert "links idle a round on the devices' own CPU 2.50 s and the server's 500.00 ms" in line
    older = host_summary([rnd(1, HostRound(0.1, 0.01, dilation=7.0, cpu_capped=True, device_bound_s=2.0))])
    assert older is not None and "the devices' own CPU 2.00 s (" in older and "server" not in older
    bound = host_summary([rnd(1, HostRound(1.0, 0.1))])
    assert bound is not None and "host-bound" in bound and "own CPU" not in bound  # uncapped: nothing split
