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


def fmt_signed_pct(v: float | None) -> str:
    """A relative difference (0.031 → '+3.1 %'); '-' when unknown."""
    return "-" if v is None else f"{100 * v:+.1f} %"


def fmt_pct(v: float | None) -> str:
    """A share (0.27 → '27 %'); '-' when unknown."""
    return "-" if v is None else f"{100 * v:.0f} %"
