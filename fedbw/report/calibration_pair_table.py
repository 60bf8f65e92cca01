"""docs/fidelity.md's tables that set two calibration files side by side, constant by constant: the shipped
one beside validation 4's (what dilating every device 7× does to the constants), beside the AMD host's (what
the host change does), and validation 4's beside validation 5's (both at dilation 7, on two CPUs). They read
calibration files, not a benchmark's result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fedbw.report.doc_blocks import md_table, table
from fedbw.report.stability_table import dilation_label

#: The calibration validation 4 freezes: measured at the grid's one dilation, not shipped (benchmarks/validate.py)
VALIDATION_CALIBRATION = "benchmarks/results/calibration-dilation7.toml"


#: A calibration of the AMD EPYC host the VM came back on (2026-12-07), at the shipped one's dilation: not shipped
OTHER_HOST_CALIBRATION = "benchmarks/results/calibration-amd-epyc.toml"


#: The calibration validation 5 freezes: the AMD EPYC host's at the grid's one dilation, not shipped
VALIDATION_5_CALIBRATION = "benchmarks/results/calibration-dilation7-amd-epyc.toml"


def calibration_pair_markdown(root: Path, path: str, whose: str, column: str | None = None,
                              base: str | None = None, base_column: str = "shipped") -> str:
    """A calibration (``base``, a file under ``root``; None: the shipped one) beside another of ``path``,
    constant by constant: each value with its 90 % interval, their ratio and whether the intervals are apart.
    ``column`` heads the other file's columns (None: its dilation), ``base_column`` the base's, ``whose``
    names the other file under the table."""
    from fedbw.calibration.file import default_calibration, read_calibration
    from fedbw.report.calibration import fmt_constant, fmt_interval

    missing = [p for p in (path, base) if p is not None and not (root / p).is_file()]
    if missing:
        return f"(no data yet: `fedbw calibrate … --out {missing[0]}` writes it)\n"
    first = default_calibration() if base is None else read_calibration(root / base)
    other = read_calibration(root / path)
    rows = []
    for name in sorted(set(first.constants) | set(other.constants)):
        a, b = first.constants.get(name), other.constants.get(name)
        ratio = "-" if a is None or b is None or a.value == 0 else f"{b.value / a.value:.2f}"
        apart = ("-" if a is None or b is None or a.interval is None or b.interval is None else
                 "no" if a.interval[1] >= b.interval[0] and b.interval[1] >= a.interval[0] else "yes")
        cells = [("-", "-") if c is None else (fmt_constant(name, c.value), fmt_interval(name, c)) for c in (a, b)]
        rows.append([name, *cells[0], *cells[1], ratio, apart])
    if first.secagg is not None and other.secagg is not None and first.secagg.ecdh_s:
        rows.append(["secagg ecdh_s", fmt_constant("ecdh_s", first.secagg.ecdh_s), "-",
                     fmt_constant("ecdh_s", other.secagg.ecdh_s), "-",
                     f"{other.secagg.ecdh_s / first.secagg.ecdh_s:.2f}", "-"])

    def said(cal: Any, where: str) -> str:
        p = cal.provenance
        cpu = cal.cpu or "CPU not recorded"
        ref = p.get("host_reference_s")
        return (f"{cal.fingerprint} (`{where}`; {cpu}; dilation {dilation_label(p.get('dilation'))}, measured by "
                f"`{p.get('measured_by') or p.get('command', '?')}`, fitted {p.get('created_utc', '?')}"
                + (f"; host reference {ref:.2f} s" if isinstance(ref, (int, float)) else "") + ")")

    column = column or f"dilation {dilation_label(other.provenance.get('dilation'))}"
    base_name = "Shipped" if base is None else base_column[:1].upper() + base_column[1:]
    return (md_table(["constant", base_column, "90 % interval", column, "90 % interval", "ratio", "intervals apart"],
                     rows, right={1, 2, 3, 4, 5})
            + f"\n{base_name}: {said(first, base or first.source)}. {whose}: {said(other, path)}.\n")


@table("fidelity.calibration-dilations")
def calibration_dilations_markdown(root: Path) -> str:
    """The shipped calibration beside the one validation 4 freezes, constant by constant: what calibrating
    where every device is capped to a seventh of a core, as the grid's emulation is, does to the constants."""
    return calibration_pair_markdown(root, VALIDATION_CALIBRATION, "Validation 4's")


@table("fidelity.calibration-hosts")
def calibration_hosts_markdown(root: Path) -> str:
    """The shipped (Intel Xeon) calibration beside one of the AMD EPYC host at the same dilation: how far apart
    two hosts of one VM's name put Flower's costs (docs/fidelity.md, "The host changed")."""
    return calibration_pair_markdown(root, OTHER_HOST_CALIBRATION, "The AMD host's", "AMD EPYC")


@table("fidelity.calibration-validation-5")
def calibration_validation_5_markdown(root: Path) -> str:
    """Validation 4's calibration (Intel Xeon) beside validation 5's (AMD EPYC), both measured at the grid's
    one dilation: what the host change does to the constants where the grids are emulated."""
    return calibration_pair_markdown(root, VALIDATION_5_CALIBRATION, "Validation 5's", "AMD EPYC",
                                     base=VALIDATION_CALIBRATION, base_column="validation 4's (Xeon)")
