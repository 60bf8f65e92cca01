"""The data-center side on the terminal and in Markdown: AllReduce tables (model alone, or measured
beside the model with the fit) and the DDP step with its remedies.

Columns follow nccl-tests' ``all_reduce_perf``: size, count, type, redop, then time, algbw, busbw and
#wrong out-of-place and in-place; GB/s are 10^9 bytes per second, as nccl-tests prints them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from rich.console import Console
from rich.markup import escape

from fedbw.report import tables
from fedbw.report.format import fmt_bytes, fmt_s

if TYPE_CHECKING:
    from fedbw.collectives.fit import AlphaBetaFit
    from fedbw.collectives.model import AllReduceRow
    from fedbw.collectives.rows import AllReduceMeasurement, AllReduceTable
    from fedbw.collectives.step import StepMeasurement


#: Where a column the data-center tables leave out at a narrow width can be read: the model's (--json), the
#: measured tables' (the JSON file the command writes).
MODEL_LEFT_OUT = "--json has every figure; a wider terminal shows them"
MEASURED_LEFT_OUT = "the JSON file has every figure; a wider terminal shows them"


def render_allreduce(console: Console, rows: Sequence["AllReduceRow"]) -> None:
    """The α-β model alone (``fedbw allreduce`` without ``--backend``). Key columns, never cut: size (B),
    ranks, fabric, time (us) and busbw (GB/s) (nccl-tests' headline figure); where the terminal is too narrow
    the others leave in this order: algbw (GB/s), algorithm."""
    Col = tables.Col
    t = tables.FitTable("AllReduce, α-β model (nccl-tests columns; GB = 10^9 B)",
                        [Col("size (B)", key=True), Col("ranks", key=True), Col("fabric", key=True, left=True),
                         Col("algorithm", left=True), Col("time (us)", key=True), Col("algbw (GB/s)"),
                         Col("busbw (GB/s)", key=True)],
                        drop=("algbw (GB/s)", "algorithm"), left_out=MODEL_LEFT_OUT)
    for r in rows:
        t.add_row(f"{r.size_bytes:,.0f}", str(r.ranks), r.fabric, r.algorithm, f"{r.time_s * 1e6:,.1f}",
                  f"{r.algbw_gbps:.2f}", f"{r.busbw_gbps:.2f}")
    console.print(t)


def _us(t: float) -> str:
    """Microseconds as nccl-tests prints them: one decimal below a millisecond, whole µs above."""
    return f"{t * 1e6:,.1f}" if t < 1e-3 else f"{t * 1e6:,.0f}"


def _bw(g: float) -> str:
    return f"{g:.3f}" if g < 10 else f"{g:.2f}"


def fit_line(fit: "AlphaBetaFit", label: str) -> str:
    """One line: the fitted α, β, the bus bandwidth 1/β and how well the ring model fits."""
    return (f"{label}: α = {fit.alpha_s * 1e6:,.1f} µs per step, β = {fit.beta_s_per_byte * 1e9:.3f} ns/B "
            f"(busbw {fit.busbw_gbps:.3f} GB/s) over {fit.points} sizes; residuals rms {100 * fit.rms_residual:.1f} %, "
            f"max {100 * fit.max_residual:.1f} %")


def allreduce_table(t: "AllReduceTable", m: "AllReduceMeasurement") -> tables.FitTable:
    """nccl-tests' columns (out-of-place, then in-place), then the model, the fit and the cores used. Key
    columns, never cut: size (B), the in-place time (us) and busbw (what the fit is made of) and the model
    (us) beside them. Where the terminal is too narrow the others leave in this order: redop, type, count,
    the out-of-place columns together (time, algbw, busbw, #wrong: one block under one label), the in-place
    #wrong (the summary line below counts every wrong value), the in-place algbw, fit (us), cores busy (the
    verdict line below says what bound the run), fit resid (the fit line gives its rms). At 160 columns only
    redop ("sum", always) is left out."""
    Col = tables.Col
    cols = [Col("size\n(B)", key=True), Col("count\n(elements)", name="count"), Col("\ntype", left=True, name="type"),
            Col("\nredop", left=True, name="redop"), Col("out-of-place\ntime (us)", name="out-of-place time"),
            Col("\nalgbw", name="out-of-place algbw"), Col("\nbusbw", name="out-of-place busbw"),
            Col("\n#wrong", name="out-of-place #wrong"), Col("in-place\ntime (us)", key=True),
            Col("\nalgbw ", name="in-place algbw"), Col("\nbusbw ", key=True), Col("\n#wrong ", name="in-place #wrong"),
            Col("model\n(us)", key=True), Col("fit\n(us)"), Col("fit\nresid"), Col("cores\nbusy")]
    title = (f"AllReduce measured · {m.backend} · {t.ranks} ranks · {m.placement} · {m.iters} iterations after "
             f"{m.warmup} warm-up · model: α-β on {m.fabric} ({m.algorithm}) · GB/s = 10^9 B/s")
    out_of_place = ("out-of-place\ntime (us)", "\nalgbw", "\nbusbw", "\n#wrong")  # one block under one label
    table = tables.FitTable(title, cols, drop=("\nredop", "\ntype", "count\n(elements)", out_of_place, "\n#wrong ",
                                               "\nalgbw ", "fit\n(us)", "cores\nbusy", "fit\nresid"),
                            caption=("out-of-place = copy into the receive buffer, then torch's in-place AllReduce; "
                                     "fit = the ring model with α, β fitted to the in-place times; cores busy = CPU "
                                     "seconds the ranks used per second"),
                            left_out=MEASURED_LEFT_OUT)
    for r in t.rows:
        table.add_row(f"{r.size_bytes:,}", f"{r.count:,}", r.dtype, "sum", _us(r.oop_time_s), _bw(r.oop_algbw_gbps),
                      _bw(r.oop_busbw_gbps), str(r.oop_wrong), _us(r.ip_time_s), _bw(r.ip_algbw_gbps),
                      _bw(r.ip_busbw_gbps), str(r.ip_wrong), _us(r.model_time_s), _us(r.fit_time_s),
                      f"{100 * r.fit_residual:+.0f} %", f"{r.cores_busy:.1f}")
    return table


def render_allreduce_measured(console: Console, m: "AllReduceMeasurement") -> None:
    """Each rank count's nccl-tests table with the model and the fit beside it, then what bound it."""
    wrong = 0
    for t in m.tables:
        console.print(allreduce_table(t, m))
        console.print(fit_line(t.fit, f"fit at {t.ranks} ranks (ring model, in-place times)"))
        console.print(f"[yellow]{escape(t.verdict.note)}[/]" if t.verdict.bound == "cpu" else escape(t.verdict.note))
        wrong += sum(r.oop_wrong + r.ip_wrong for r in t.rows)
    if m.joint_fit is not None:
        console.print(fit_line(m.joint_fit, "one fit over every rank count"))
    rows = [r for t in m.tables for r in t.rows]
    avg = sum(r.oop_busbw_gbps + r.ip_busbw_gbps for r in rows) / (2 * len(rows))
    console.print(f"# Out of bounds values : {wrong} {'OK' if wrong == 0 else 'FAILED'}")
    console.print(f"# Avg bus bandwidth    : {avg:.4f} GB/s")


VARIANT_LABELS = {"no-comm": "no-comm (compute alone)", "overlap": "overlap (DDP as shipped)",
                  "no-overlap": "no-overlap (AllReduce after backward)", "accumulate": "accumulate ×{k}",
                  "fp16": "fp16 comm hook", "powersgd": "PowerSGD rank {r} comm hook"}


def variant_label(name: str, accumulate: int, powersgd_rank: int) -> str:
    return VARIANT_LABELS.get(name, name).format(k=accumulate, r=powersgd_rank)


def step_verdict(m: "StepMeasurement", line: float) -> str:
    """The communication share of DDP as shipped against the article's line, and what the remedies did."""
    base = m.variant("overlap")
    if base is None:
        return "no 'overlap' variant measured: no communication share to judge"
    share = base.exposed_share
    side = ("above" if share > line else "below")
    text = (f"communication share (exposed, DDP as shipped): {100 * share:.0f} % of the step, {side} the "
            f"{100 * line:.0f} % line")
    gains = [(m.speedup(v), v) for v in m.variants if v.variant not in ("overlap", "no-comm")]
    gains = [(g, v) for g, v in gains if g is not None]
    if gains:
        g, v = max(gains, key=lambda x: x[0])
        what = variant_label(v.variant, m.accumulate, m.powersgd_rank)
        text += (f"; best remedy here: {what} at {g:.2f}× DDP's time per sample" if g > 1.0 else
                 "; no remedy beat DDP as shipped here")
    if share <= line:
        text += " — compute dominates, so shrinking communication cannot pay much"
    return text


def step_table(m: "StepMeasurement") -> tables.FitTable:
    """The measured variants. Key columns, never cut: variant, step (its time), share (the exposed
    communication share, ▲ above the 30 % line) and vs DDP (the remedy's gain); where the terminal is too
    narrow the others leave in this order: calls, ring wire/rank, compute, per sample, bytes/rank,
    AllReduce, exposed."""
    grad = fmt_bytes(4 * m.params)
    title = (f"DDP step measured · {m.model} ({m.params:,} params, {grad} float32 gradient) · {m.backend} · "
             f"{m.ranks} ranks on {m.device} · batch {m.batch_size} per rank · {m.steps} steps after "
             f"{m.warmup} warm-up")
    Col = tables.Col
    t = tables.FitTable(title, [Col("variant", key=True), Col("step", key=True), Col("compute"), Col("AllReduce"),
                                Col("exposed"), Col("share", key=True), Col("bytes/rank"), Col("ring wire/rank"),
                                Col("calls"), Col("per sample"), Col("vs DDP", key=True)],
                        drop=("calls", "ring wire/rank", "compute", "per sample", "bytes/rank", "AllReduce", "exposed"),
                        caption=("torch.profiler: compute = time some operator ran, AllReduce = time one was in "
                                 "flight, exposed = AllReduce with no compute beside it; share = exposed / step; "
                                 "bytes = tensors handed to AllReduce per optimizer step; vs DDP = time per sample "
                                 "of DDP as shipped / this (> 1 helps)"),
                        left_out=MEASURED_LEFT_OUT)
    for v in m.variants:
        speed = m.speedup(v)
        t.add_row(variant_label(v.variant, m.accumulate, m.powersgd_rank), fmt_s(v.step_s), fmt_s(v.compute_s),
                  fmt_s(v.comm_s), fmt_s(v.exposed_s), tables.fmt_frac(v.exposed_share, v.exposed_share > 0.3),
                  fmt_bytes(v.bytes_per_step), fmt_bytes(v.wire_bytes_per_step), f"{v.allreduce_calls_per_step:g}",
                  fmt_s(v.time_per_sample_s), "-" if speed is None else f"{speed:.2f}×")
    return t


def modelled_step_table(m: "StepMeasurement") -> tables.FitTable:
    """The step modelled on other networks, as communication shares. Key columns, never cut: network, no
    overlap and overlap (the share without and with DDP's overlap); where the terminal is too narrow the
    others leave in this order: compute, AllReduce (the times the shares come from), accumulate, PowerSGD,
    fp16."""
    from fedbw.catalog import get_device_profile

    dev = get_device_profile(m.device_profile)
    Col = tables.Col
    acc = f"accumulate ×{m.accumulate}"
    t = tables.FitTable(f"The same step modelled · {m.model} · batch {m.model_batch_size} per rank on "
                        f"{dev.name} ({dev.effective_tflops:g} TFLOP/s) · {m.model_ranks} ranks · communication "
                        "share of the step",
                        [Col("network", key=True), Col("compute"), Col("AllReduce"), Col("no overlap", key=True),
                         Col("overlap", key=True), Col("fp16"), Col("PowerSGD"), Col(acc)],
                        drop=("compute", "AllReduce", acc, "PowerSGD", "fp16"),
                        caption=("α-β model (best algorithm); overlap = DDP hiding the AllReduce behind backward at "
                                 "best; fp16 and PowerSGD use the byte ratios measured above; ▲ above the 30 % line"),
                        left_out=MEASURED_LEFT_OUT)
    for r in m.modelled:
        def share(x: float | None) -> str:
            return "-" if x is None else tables.fmt_frac(x, x > 0.3)

        t.add_row(r.network, fmt_s(r.compute_s), fmt_s(r.allreduce_s), share(r.share_no_overlap),
                  share(r.share_overlap), share(r.share_fp16), share(r.share_powersgd), share(r.share_accumulate))
    return t


def render_step(console: Console, m: "StepMeasurement", line: float) -> None:
    """The measured variants, the verdict against the 30 % line, then the step modelled on other networks."""
    console.print(step_table(m))
    console.print(escape(step_verdict(m, line)))
    if m.backend == "gloo" and m.device == "cpu":
        console.print("[yellow]gloo on loopback: the AllReduce columns measure this machine's cores, not a "
                      "network; the modelled table below carries the networks.[/]")
    console.print(modelled_step_table(m))


def netns_markdown(data: dict[str, Any]) -> str:
    """The namespace check's table for docs/datacenter.md, rendered from benchmarks/allreduce_netns.py's JSON
    (so the page holds no figure the JSON cannot regenerate)."""
    m = data["machine"]
    lines = [f"Measured {data['started'][:10]} on {m['cpu']}, {m['usable_cores']} cores, torch "
             f"{m['packages'].get('torch')}; gloo, float32, {data['iters']} iterations after {data['warmup']} "
             f"warm-up; model: ring with B = rate × {data['eth_efficiency']:.4f} (the catalog's Ethernet TCP "
             "efficiency) and α from the 1 KiB row.", "",
             "| link | ranks | size | measured | model | error | busbw GB/s | link payload GB/s | within "
             f"±{100 * data['tolerance']:.0f} % |", "|---|---|---|---|---|---|---|---|---|"]
    for res in data["results"]:
        for r in res["rows"]:
            verdict = "-" if r["agrees"] is None else ("yes" if r["agrees"] else "**no**")
            lines.append(f"| {r['rate_mbps']:g} Mbit/s | {r['ranks']} | {fmt_bytes(r['size_bytes'])} | "
                         f"{fmt_s(r['measured_s'])} | {fmt_s(r['model_s'])} | {100 * r['error']:+.1f} % | "
                         f"{r['busbw_gbps']:.4f} | {r['link_busbw_gbps']:.4f} | {verdict} |")
    checked = [r for res in data["results"] for r in res["rows"] if r["checked"]]
    agree = sum(1 for r in checked if r["agrees"])
    lines += ["", f"{agree} of {len(checked)} bandwidth-dominated rows agree within ±{100 * data['tolerance']:.0f} %"
                  " (rows marked - are latency-dominated and only give α).", ""]
    for res in data["results"]:
        lines.append(f"- {res['rate_mbps']:g} Mbit/s × {res['ranks']} ranks: fitted α "
                     f"{res['fit']['alpha_us']:,.0f} µs, busbw {res['fit']['busbw_gbps']:.4f} GB/s; "
                     f"{res['bound_note']}.")
    return "\n".join(lines)


def _part_failed(part: dict[str, Any]) -> str | None:
    if "skipped" in part:
        return f"skipped: {part['skipped']}"
    if "error" in part:
        return f"failed: {part['error'].splitlines()[0]}"
    return None


def gpu_markdown(data: dict[str, Any]) -> str:
    """docs/gpu.md's figures, rendered from benchmarks/gpu.py's JSON (measured on a GPU, dated, with the device)."""
    m = data["machine"]
    gpus = m.get("gpus") or ["?"]
    lines = [f"Measured {data['started'][:10]} on {len(gpus)} × {gpus[0]} (CPU {m['cpu']}), torch "
             f"{m['packages'].get('torch')}, CUDA {data.get('cuda')}, NCCL {data.get('nccl')}.", ""]
    t = data["timing"]
    lines.append(f"**CUDA timing** — {_part_failed(t)}" if _part_failed(t) else
                 f"**CUDA timing** — 50 bf16 4096² matmuls: CUDA events {fmt_s(t['events_s'])}, synchronize + "
                 f"perf_counter {fmt_s(t['sync_s'])} ({'agree' if t['agree'] else 'DISAGREE'} within 10 %; "
                 f"{t['tflops_events']:.0f} TFLOP/s).")
    lines.append("")
    ar = data["allreduce"]
    if _part_failed(ar):
        lines.append(f"**NCCL AllReduce** — {_part_failed(ar)}")
    else:
        for tab in ar["tables"]:
            lines += [f"**NCCL AllReduce**, {tab['ranks']} ranks, {ar['dtype']}, {ar['iters']} iterations after "
                      f"{ar['warmup']} warm-up (nccl-tests columns, in-place; model: α-β on {ar['model_fabric']})",
                      "", "| size | time | algbw GB/s | busbw GB/s | #wrong | model | fit |",
                      "|---|---|---|---|---|---|---|"]
            for r in tab["rows"]:
                lines.append(f"| {fmt_bytes(r['size_bytes'])} | {fmt_s(r['ip_time_s'])} | {r['ip_algbw_gbps']:.2f} | "
                             f"{r['ip_busbw_gbps']:.2f} | {r['ip_wrong'] + r['oop_wrong']} | "
                             f"{fmt_s(r['model_time_s'])} | {fmt_s(r['fit_time_s'])} |")
            f = tab["fit"]
            lines += ["", f"Fit: α = {f['alpha_us']:.1f} µs, busbw {f['busbw_gbps']:.1f} GB/s, residuals rms "
                          f"{100 * f['rms_residual']:.1f} %, max {100 * f['max_residual']:.1f} %."]
    lines.append("")
    st = data["step"]
    if _part_failed(st):
        lines.append(f"**DDP step** — {_part_failed(st)}")
    else:
        lines += [f"**DDP step**, {st['model']}, {st['ranks']} ranks, {st['backend']} on {st['device']}, batch "
                  f"{st['batch_size']} per rank, {st['steps']} steps after {st['warmup']} warm-up", "",
                  "| variant | step | compute | AllReduce | exposed | share | bytes/rank | vs DDP |",
                  "|---|---|---|---|---|---|---|---|"]
        for v in st["variants"]:
            speed = v.get("speedup_vs_ddp")
            lines.append(f"| {variant_label(v['variant'], st['accumulate'], st['powersgd_rank'])} | "
                         f"{fmt_s(v['step_s'])} | {fmt_s(v['compute_s'])} | {fmt_s(v['comm_s'])} | "
                         f"{fmt_s(v['exposed_s'])} | {100 * v['exposed_share']:.0f} % | "
                         f"{fmt_bytes(v['bytes_per_step'])} | {'-' if speed is None else f'{speed:.2f}×'} |")
    lines.append("")
    q = data["quickstart"]
    if _part_failed(q):
        lines.append(f"**Quickstart on CUDA** — {_part_failed(q)}")
    else:
        acc = "-" if q["final_accuracy"] is None else f"{100 * q['final_accuracy']:.1f} %"
        lines.append(f"**Quickstart on CUDA** — device {q['device']}, {q['rounds']} rounds, mean round "
                     f"{fmt_s(q['mean_round_time_s'])}, mean client compute {fmt_s(q['mean_client_compute_s'])}, "
                     f"final accuracy {acc}.")
    return "\n".join(lines)
