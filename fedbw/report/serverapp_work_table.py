"""docs/fidelity.md's table of the ServerApp's own work (benchmarks/serverapp_work.py): its push of each message
and its pull of each reply as the ServerApp timed them, beside what the clock lays for them."""

from __future__ import annotations

from typing import Any

from fedbw.report.doc_blocks import md_table, result_table
from fedbw.report.format import fmt_s

COMMAND = ".venv/bin/python benchmarks/serverapp_work.py --again"


def _ratio(v: float | None) -> str:
    return "-" if v is None else f"×{v:.2f}"


def _objects(w: dict[str, Any]) -> str:
    return "/".join(str(k) for k in w.get("objects", [])) or "-"


def _per(fitted: dict[str, Any] | None) -> str:
    """A fit's per-object and per-MiB constants (where the messages had more than one object count)."""
    if not fitted or fitted.get("hop_object_s") is None:
        return "-"
    return f"{fitted['hop_object_s'] * 1e3:.2f} ms/object + {fitted['hop_s_per_mib'] * 1e3:.2f} ms/MiB"


@result_table("fidelity.serverapp-work", "serverapp-work.json", COMMAND, needs="measurements", model=True)
def serverapp_work_markdown(data: dict[str, Any]) -> str:
    """Per measurement and model: its objects a message, the push's and the pull's measured median beside the
    clock's, their median ratio; then every measurement together, each fitted per object and per MiB as its own
    term would be."""
    head = ["measurement", "model", "objects a message (down/up)", "pushes", "push, measured", "push, clock",
            "measured ÷ clock", "pulls after the upload (of all)", "pull, measured", "pull, clock", "measured ÷ clock"]
    rows, when = [], []
    for n, measurement in enumerate(data["measurements"], 1):
        when.append(f"{n}: {measurement['rounds']} rounds a model, {measurement['started_utc']} – "
                    f"{measurement['ended_utc']} on {measurement['cpu']} ({measurement['machine']}), commit "
                    f"{measurement['commit']}")
        for run in measurement["runs"]:
            if run.get("error"):
                rows.append([str(n), run["model"], f"failed: {run['error']}"] + [""] * (len(head) - 3))
                continue
            push, pull = run["work"]["push"], run["work"]["pull"]
            every = pull["messages"] + pull.get("pulled_behind_the_upload", 0)
            rows.append([str(n), run["model"], f"{_objects(push)}/{_objects(pull)}", str(push["messages"]),
                         fmt_s(push.get("median_measured_s")), fmt_s(push.get("median_predicted_s")),
                         _ratio(push.get("median_measured_over_predicted")), f"{pull['messages']} ({every})",
                         fmt_s(pull.get("median_measured_s")), fmt_s(pull.get("median_predicted_s")),
                         _ratio(pull.get("median_measured_over_predicted"))])
    cal, every = data["calibration"], data["all"]
    return (md_table(head, rows)
            + f"\nOne client on unshaped loopback, synthetic compute, dilation {data['dilation']:g} (devices capped to "
              f"a core, the server to two, as calibration runs them); times on the emulated clock, timed by fedbw's "
              f"ServerApp (its push: the stage's messages onto the SuperLink; its pull: a PullMessages request, each "
              f"object's PullObject, the confirm), pulls only where they started after the reply's last byte reached "
              f"the SuperLink. The clock lays the push per MiB (local copy: {cal['local_s_per_mib'] * 1e3:.2f} "
              f"ms/MiB) and the pull as a hop ({cal['hop_object_s'] * 1e3:.2f} ms/object + "
              f"{cal['hop_s_per_mib'] * 1e3:.2f} ms/MiB), calibration {cal['fingerprint']} (`{cal['path']}`, "
              f"{cal['cpu']}). Every measurement together, fitted on objects and MiB (least squares ≥ 0): push "
              f"{_per(every['push'].get('fitted'))} ({every['push']['messages']} pushes), pull "
              f"{_per(every['pull'].get('fitted'))} ({every['pull']['messages']} pulls). Measurements: "
              f"{'; '.join(when)}.\n")
