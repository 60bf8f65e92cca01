"""Time dilation: the launcher's patch table matches the pinned Flower, and patched modules run on the
emulated clock (in a fresh interpreter started the way emulate starts Flower's processes)."""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import inspect
import json
import subprocess
import sys
import time
import types

import pytest

from fedbw.timewarp import DilatedTime, Dilation
from fedbw.timewarp.hook import FLOWER_VERSION, OWN_PREFIX, TARGETS, Target, install, patch, scale_defaults
from fedbw.timewarp.launcher import SITE_DIR, env_additions


def test_flower_is_the_version_the_table_was_read_from() -> None:
    assert importlib.metadata.version("flwr") == FLOWER_VERSION


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: t.module)
def test_every_target_is_where_the_pinned_release_keeps_it(target: Target) -> None:
    """Fails when an upgrade moves an interval: the source no longer has what the patch relies on."""
    spec = importlib.util.find_spec(target.module)
    assert spec is not None and spec.origin, f"{target.module} is gone"
    source = open(spec.origin, encoding="utf-8").read()
    for fragment in target.evidence:
        assert fragment in source, f"{target.module} no longer contains {fragment!r} ({target.why})"
    module = importlib.import_module(target.module)
    if target.replace == "time":
        assert module.time is time
    elif target.replace == "sleep":
        assert module.sleep is time.sleep
    for fn_path, names in target.defaults:
        fn = module
        for part in fn_path.split("."):
            fn = getattr(fn, part)
        params = inspect.signature(fn).parameters
        for name in names:
            assert isinstance(params[name].default, (int, float)), f"{fn_path}({name}=…) has no numeric default"
    for constant in target.constants:
        assert isinstance(getattr(module, constant), (int, float)), f"{target.module}.{constant} is not a number"


def test_dilation_maps_stamps_and_durations() -> None:
    d = Dilation(4.0, t0_s=100.0, t0_wall_s=1000.0)
    assert d.emulated(108.0) == 102.0 and d.emulated_wall(1004.0) == 1001.0 and d.real_s(2.5) == 10.0
    assert Dilation.from_env(d.env()) == d
    assert Dilation.from_env({}) is None
    for bad in (0.5, float("inf"), True, "2"):
        with pytest.raises(ValueError, match="dilation factor"):
            Dilation(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="bad time dilation environment"):
        Dilation.from_env({"FEDBW_DILATION": "4"})
    assert env_additions(Dilation(1.0)) == {}


def _ten_s_in(factor: float) -> Dilation:
    """A dilation whose emulated clock started 10 real seconds ago: it reads 10 − 10 / factor s behind."""
    return Dilation(factor, time.perf_counter() - 10.0, time.time() - 10.0)


def test_dilated_time_sleeps_longer_and_reads_the_emulated_clock() -> None:
    d = _ten_s_in(5.0)
    t = DilatedTime(d)
    # each emulated reading is the mapping of a real instant between the real readings around it: exact,
    # however long the host takes between the calls
    for real, emulated, mapped in ((time.perf_counter, t.perf_counter, d.emulated),
                                   (time.monotonic, t.monotonic, d.emulated),
                                   (time.time, t.time, d.emulated_wall)):
        before = real()
        reading = emulated()
        after = real()
        assert mapped(before) <= reading <= mapped(after)
        assert reading < before - 7.0  # the emulated clock (8 s behind), not the real one
    before = time.perf_counter()
    t.sleep(0.02)
    assert time.perf_counter() - before >= 0.1  # 0.02 emulated seconds last five times as long
    assert t.gmtime is time.gmtime  # everything else is the real module's


def test_scale_defaults_scales_keyword_and_positional_defaults() -> None:
    def f(a, b=2.0, *, c=3, d="x"):  # noqa: ANN001, ANN202
        return b, c

    scale_defaults(f, ["b", "c"], 4)
    assert f(0) == (8.0, 12)
    with pytest.raises(KeyError, match="no numeric default 'd'"):
        scale_defaults(f, ["d"], 2)
    with pytest.raises(KeyError, match="no numeric default 'a'"):
        scale_defaults(f, ["a"], 2)


def test_a_target_that_moved_fails_loudly() -> None:
    moved = types.ModuleType("flwr.fake")
    with pytest.raises(RuntimeError, match="cannot patch flwr.fake .*has no module-level `time`"):
        patch(moved, Target("flwr.fake", why="a test"), Dilation(2.0))


def test_own_app_modules_are_dilated_whole() -> None:
    assert OWN_PREFIX == "fedbw.fl."
    for name in ("fedbw.fl.client_app", "fedbw.fl.measure", "fedbw.fl.strategy", "fedbw.fl.server_app"):
        assert importlib.import_module(name).time is time, f"{name} no longer uses `import time`"


PROBE = r"""
import json, time
import flwr.supernode.start_client_internal as sci
import flwr.superlink.grid.http_grid as grid
import flwr.supercore.inflatable.inflatable_utils as iu
import flwr.serverapp.strategy.strategy_utils as su
import flwr.supercore.corestate.in_memory_corestate as imc
import flwr.supercore.corestate.sql_corestate as sqc
import httpx, inspect, uvicorn.config as uc
import flwr.supernode.fleet_http_client as fhc
import fedbw.fl.measure as fm
a0 = time.perf_counter(); e = sci.time.perf_counter(); a1 = time.perf_counter()
sci.time.sleep(0.02)
print(json.dumps({
    "sci": type(sci.time).__name__, "grid": type(grid.time).__name__, "fl": type(fm.time).__name__,
    "real_before": a0, "emulated": e, "real_after": a1, "sleep_real": time.perf_counter() - a1,
    "backoff": iu.pull_objects.__kwdefaults__["initial_backoff"], "cap": iu.pull_objects.__kwdefaults__["backoff_cap"],
    "inflate_backoff": iu.pull_and_inflate_object_from_tree.__kwdefaults__["initial_backoff"],
    "su_sleep": su.sleep is time.sleep, "keepalive": httpx._config.DEFAULT_LIMITS.keepalive_expiry,
    "push_ttl": [imc.OBJECT_PUSH_SESSION_TTL_SECONDS, sqc.OBJECT_PUSH_SESSION_TTL_SECONDS],
    "uvicorn": inspect.signature(uc.Config.__init__).parameters["timeout_keep_alive"].default,
    "http_timeout": fhc.FleetHttpClient.from_server_address("127.0.0.1:9", True, None, ())._client.timeout.read}))
"""


def _probe(env_extra: dict[str, str], tmp_path) -> dict:  # noqa: ANN001
    import os

    env = {**os.environ, **env_extra}
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_dilated_process_runs_flower_on_the_emulated_clock(tmp_path) -> None:
    d = _ten_s_in(4.0)
    got = _probe(env_additions(d), tmp_path)
    assert got["sci"] == got["grid"] == got["fl"] == "DilatedTime"
    # Flower's clock in the child is this dilation's (perf_counter is CLOCK_MONOTONIC, one for all processes)
    assert d.emulated(got["real_before"]) <= got["emulated"] <= d.emulated(got["real_after"])
    assert got["sleep_real"] >= 0.08  # and its sleeps last four times as long
    assert (got["backoff"], got["cap"], got["inflate_backoff"]) == (4, 40, 4)
    assert got["su_sleep"] is False and got["keepalive"] == 20.0 and got["uvicorn"] == 20
    assert got["push_ttl"] == [720, 720]  # the SuperLink's push session lasts 180 emulated seconds
    # a SuperNode's HTTP call (an object push) gives up after 30 emulated seconds, as Flower's does undilated
    assert got["http_timeout"] == 120.0


def test_an_undilated_process_is_untouched(tmp_path) -> None:
    got = _probe({"PYTHONPATH": str(SITE_DIR)}, tmp_path)  # the launcher's site folder, but no dilation
    assert got["sci"] == "module" and got["backoff"] == 1 and got["keepalive"] == 5.0 and got["su_sleep"] is True
    assert got["push_ttl"] == [180, 180] and got["http_timeout"] == 30.0


def test_install_is_idempotent() -> None:
    import sys as _sys

    before = len(_sys.meta_path)
    try:
        install(Dilation(2.0), targets=(), own_prefix=None)  # nothing of this test process is patched
        install(Dilation(2.0), targets=(), own_prefix=None)
        assert len(_sys.meta_path) == before + 1
    finally:
        _sys.meta_path[:] = [f for f in _sys.meta_path if type(f).__name__ != "_Finder"]
