"""Reading trace files: plain CSV (with and without a header) and mahimahi packet-delivery files."""

from __future__ import annotations

from pathlib import Path

import pytest

from fedbw.traces import MTU_BYTES, load_trace, read_csv, read_mahimahi


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("header", ["", "t_s,up_mbps,down_mbps\n", " T_S , Up_Mbps , DOWN_MBPS \n"])
def test_a_csv_trace_reads_with_or_without_a_header(tmp_path: Path, header: str) -> None:
    path = write(tmp_path / "evening.csv", f"# cable, one evening\n{header}0,10,50\n\n2, 20 ,50  # peak\n3,5,0\n")
    trace = read_csv(path)
    assert trace.name == "evening" and trace.format == "csv" and str(path) in trace.source
    assert trace.steps("up") == ((0.0, 10.0), (2.0, 20.0), (3.0, 5.0))
    assert trace.steps("down") == ((0.0, 50.0), (2.0, 50.0), (3.0, 0.0))
    # the last row lasts as long as the one before it
    assert trace.duration("up") == trace.duration("down") == trace.duration_s == 4.0


def test_a_mahimahi_opportunity_every_millisecond_is_12_mbps(tmp_path: Path) -> None:
    assert MTU_BYTES * 8 / 1e-3 / 1e6 == 12.0
    path = write(tmp_path / "12mbps", "".join(f"{ms}\n" for ms in range(1, 3001)))
    trace = read_mahimahi(path)
    assert trace.format == "mahimahi" and trace.name == "12mbps"
    assert trace.steps("up") == trace.steps("down") == ((0.0, 12.0),)
    assert trace.duration_s == 3.0 and trace.mean("up") == pytest.approx(12.0)
    one_line = read_mahimahi(write(tmp_path / "one", "1\n"))  # mm-link's own 12 Mbps example: it loops
    assert one_line.steps("up") == ((0.0, 12.0),) and one_line.duration_s == 0.001


def test_mahimahi_bins_count_repeated_times_and_keep_a_short_last_bin(tmp_path: Path) -> None:
    # 0-1 s: 2 packets a ms (24 Mbps); 1-2 s: 1 a ms (12 Mbps); 2-2.5 s: 1 every 2 ms (6 Mbps). The file runs
    # 1 … 2500 ms as mahimahi's do: its last time, 2500, is also the next loop's 0 (bin 0).
    def packets(ms: int) -> int:
        ms %= 2500
        return 2 if ms < 1000 else 1 if ms < 2000 else int(ms % 2 == 0)

    times = [ms for ms in range(1, 2501) for _ in range(packets(ms))]
    path = write(tmp_path / "steps.up", "\n".join(map(str, times)) + "\n")
    series = read_mahimahi(path).up
    assert series.duration_s == 2.5
    assert series.steps == ((0.0, 24.0), (1.0, 12.0), (2.0, pytest.approx(6.0)))
    fine = read_mahimahi(path, bin_ms=500).up  # equal neighbouring bins merge into one step
    assert fine.steps == ((0.0, 24.0), (1.0, 12.0), (2.0, pytest.approx(6.0)))


def test_the_last_time_is_the_next_loops_first_millisecond(tmp_path: Path) -> None:
    # times 0..999: mm-link delivers 0 and 999 together at each loop's seam: 1000 packets per 999 ms
    trace = read_mahimahi(write(tmp_path / "seam", "\n".join(map(str, range(1000))) + "\n"))
    assert trace.duration_s == 0.999 and trace.mean("up") == pytest.approx(1000 * 12 / 999)


def test_mahimahi_up_and_down_files_are_their_own_directions(tmp_path: Path) -> None:
    up = write(tmp_path / "lte.up", "# uplink\n" + "\n".join(str(ms) for ms in range(2, 2001, 2)) + "\n")
    down = write(tmp_path / "lte.down", "\n".join(str(ms) for ms in range(1, 4001)) + "\n")
    trace = read_mahimahi(up, down)
    assert trace.steps("up") == ((0.0, 6.0),) and trace.steps("down") == ((0.0, 12.0),)
    assert trace.duration("up") == 2.0 and trace.duration("down") == 4.0 and trace.duration_s == 4.0
    assert str(up) in trace.source and str(down) in trace.source and trace.name == "lte"


def test_load_trace_chooses_the_format_by_extension_and_content(tmp_path: Path) -> None:
    csv_no_extension = write(tmp_path / "evening", "0,10,50\n1,20,40\n")
    mahimahi = write(tmp_path / "link.up", "1\n2\n")
    csv_by_name = write(tmp_path / "header-only-numbers.csv", "0,10,50\n1,20,40\n")
    assert load_trace(csv_no_extension).format == "csv"
    assert load_trace(csv_by_name).format == "csv"
    assert load_trace(mahimahi).format == "mahimahi"
    assert load_trace(mahimahi, mahimahi, bin_ms=1).steps("down") == ((0.0, 12.0),)
