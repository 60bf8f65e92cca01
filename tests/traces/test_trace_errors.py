"""Every bad trace file is one ConfigError (exit 2) that names the file and, where there is one, the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from fedbw.errors import ConfigError
from fedbw.traces import load_trace, read_csv, read_mahimahi

GOOD_CSV = "t_s,up_mbps,down_mbps\n0,10,50\n1,20,40\n"

#: (name, file text, reader, the line the error names or None, words the message holds)
CASES = [
    ("empty.csv", "", read_csv, None, "empty"),
    ("comments.csv", "# nothing\n\n  # here\n", read_csv, None, "empty"),
    ("header-only.csv", "t_s,up_mbps,down_mbps\n", read_csv, None, "0 row(s)"),
    ("one-row.csv", "0,10,50\n", read_csv, None, "1 row(s)"),
    ("swapped.csv", "t_s,down_mbps,up_mbps\n0,1,2\n1,2,3\n", read_csv, 1, "header must be"),
    ("columns.csv", GOOD_CSV + "2,30\n", read_csv, 4, "2 column(s)"),
    ("more-columns.csv", GOOD_CSV + "2,30,40,50\n", read_csv, 4, "4 column(s)"),
    ("text.csv", GOOD_CSV + "2,fast,40\n", read_csv, 4, "up_mbps 'fast' is not a number"),
    ("nan.csv", GOOD_CSV + "2,10,nan\n", read_csv, 4, "finite"),
    ("late-start.csv", "1,10,50\n2,20,40\n", read_csv, 1, "starts at t_s = 0"),
    ("repeated.csv", GOOD_CSV + "1,30,40\n", read_csv, 4, "repeats the row before (line 3)"),
    ("unsorted.csv", GOOD_CSV + "0.5,30,40\n", read_csv, 4, "time order"),
    ("negative.csv", GOOD_CSV + "2,-1,40\n", read_csv, 4, "up_mbps is -1"),
    ("negative-down.csv", GOOD_CSV + "2,1,-0.5\n", read_csv, 4, "down_mbps is -0.5"),
    ("all-zero.csv", "# up never moves\n0,0,50\n1,0,40\n", read_csv, None, "every up_mbps is 0 (lines 2-3)"),
    ("empty.up", "\n", read_mahimahi, None, "empty"),
    ("text.up", "1\n2\nthree\n", read_mahimahi, 3, "'three' is not a whole number of milliseconds"),
    ("fraction.up", "1\n2.5\n", read_mahimahi, 2, "not a whole number"),
    ("negative.up", "1\n-2\n", read_mahimahi, 2, "not a whole number"),
    ("unsorted.up", "1\n5\n5\n4\n", read_mahimahi, 4, "4 ms comes after 5 ms"),
    ("zero-length.up", "0\n0\n", read_mahimahi, 2, "longer than 0 ms"),
]


@pytest.mark.parametrize(("name", "text", "reader", "line", "words"), CASES, ids=[c[0] for c in CASES])
def test_a_bad_file_is_one_line_naming_file_and_line(tmp_path: Path, name, text, reader, line, words) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        reader(path)
    message = str(caught.value)
    assert caught.value.exit_code == 2 and "\n" not in message
    assert words in message
    assert f"{path}:{line}:" in message if line is not None else f"{path}:" in message
    with pytest.raises(ConfigError, match="^trace "):  # and load_trace says the same
        load_trace(path)


def test_an_unreadable_or_binary_file_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "missing.csv"
    with pytest.raises(ConfigError, match=f"trace {missing}: cannot read it: No such file"):
        load_trace(missing)
    with pytest.raises(ConfigError, match="cannot read it"):
        load_trace(tmp_path)  # a directory
    binary = tmp_path / "trace.bin"
    binary.write_bytes(b"1\n2\n\xff\xfe\n")
    with pytest.raises(ConfigError, match=f"trace {binary}:3: not a text file"):
        load_trace(binary)


def test_a_csv_is_not_paired_with_a_down_file_and_bins_are_whole_ms(tmp_path: Path) -> None:
    csv = tmp_path / "both.csv"
    csv.write_text(GOOD_CSV)
    up = tmp_path / "link.up"
    up.write_text("1\n")
    with pytest.raises(ConfigError, match=f"trace {csv}: a CSV trace holds both directions"):
        load_trace(csv, up)
    with pytest.raises(ConfigError, match=f"trace {csv}: the down file must be a mahimahi trace"):
        load_trace(up, csv)
    for bad in (0, -5, 2.5, True):
        with pytest.raises(ConfigError, match="bin_ms is a whole number of milliseconds >= 1"):
            load_trace(up, bin_ms=bad)
