"""Numbers as people read them: bytes with SI units, seconds scaled to µs … min. Plain text (no markup),
shared by terminal tables, Markdown and plots."""

from __future__ import annotations


def fmt_bytes(n: float | None) -> str:
    if n is None:
        return "-"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n:.0f} B"


def fmt_s(t: float | None) -> str:
    if t is None:
        return "-"
    if t == float("inf"):
        return "∞"
    if t >= 120:
        return f"{t / 60:.1f} min"
    if t >= 1:
        return f"{t:.2f} s"
    if t >= 1e-3:
        return f"{t * 1e3:.2f} ms"
    return f"{t * 1e6:.1f} µs"


def fmt_s_interval(t: float | None, interval: tuple[float, float] | list[float] | None) -> str:
    """A time with its central 80 % interval when it has one ('24.20 s [21.90–27.10]': the ends in the
    time's unit when they share it), else the time alone."""
    text = fmt_s(t)
    if t is None or interval is None:
        return text
    lo, hi = fmt_s(interval[0]), fmt_s(interval[1])
    unit = text.rsplit(" ", 1)[-1]
    if lo.endswith(" " + unit) and hi.endswith(" " + unit):
        lo, hi = lo.rsplit(" ", 1)[0], hi.rsplit(" ", 1)[0]
    return f"{text} [{lo}–{hi}]"


def fmt_signed_pct(v: float | None) -> str:
    """A relative difference (0.031 → '+3.1 %'); '-' when unknown."""
    return "-" if v is None else f"{100 * v:+.1f} %"


def fmt_pct(v: float | None) -> str:
    """A share (0.27 → '27 %'); '-' when unknown."""
    return "-" if v is None else f"{100 * v:.0f} %"
