"""The launcher's import hook: puts Flower's own intervals and fedbw's apps on the emulated clock.

Flower 1.42 keeps its intervals as constants in its modules (the SuperNode's idle ``time.sleep(3)``, the
ServerApp's 3 s reply poll, the SuperExecs' 1 s task poll, the 0.5 s reply pickup, the 1 s … 10 s object-pull
backoff, the SuperLink's 180 s object-push session, the 30 s timeout of every HTTP call). No setting reaches
them, so each module below gets, as it is imported, a ``time`` whose ``sleep`` lasts K times longer and whose
clocks read emulated time; keyword defaults of the pull backoff, the HTTP calls' timeout, the HTTP keep-alive
expiries (client and server) and the push session's lifetime (a module constant, read against the SuperLink's
wall clock) are scaled by K.
The table is written for the pinned Flower: tests/timewarp/test_hook.py reads each target's source and fails
when an upgrade moves one. Everything not listed (heartbeats, retries after errors) keeps real time:
it runs *more* often in emulated time, which only adds a few small requests.

fedbw's own app modules (``fedbw.fl.*``) are dilated the same way, so their stamps (event times,
measured compute) and their waits (synthetic compute, the MeasuringGrid's poll) are emulated too.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import inspect
import sys
import time as _time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from fedbw.timewarp import DilatedTime, Dilation, dilated_sleep

#: The Flower release the table below was read from.
FLOWER_VERSION = "1.42.0"


@dataclass(frozen=True)
class Target:
    """One module to dilate: what to replace in it, and the source text that proves it is still there."""

    module: str
    replace: str = "time"  #: "time" (the module object), "sleep" (imported by name) or "" (defaults only)
    defaults: tuple[tuple[str, tuple[str, ...]], ...] = ()  #: (function path, keyword names) scaled by K
    constants: tuple[str, ...] = ()  #: module-level numbers (seconds) scaled by K
    evidence: tuple[str, ...] = ()  #: source fragments the patch relies on
    why: str = ""


TARGETS: tuple[Target, ...] = (
    Target("flwr.supernode.start_client_internal", evidence=("time.sleep(3)", "time.sleep(0.5)"),
           why="SuperNode: idle pull every 3 s, reply pickup and object polls every 0.5 s"),
    Target("flwr.superlink.grid.http_grid", evidence=("time.sleep(3)", "end_time = time.time()"),
           why="ServerApp: reply poll every 3 s, send_and_receive timeout"),
    Target("flwr.supercore.superexec.run_superexec", evidence=("time.sleep(task_poll_interval)",),
           why="SuperExec (both sides): task poll every 1 s"),
    Target("flwr.supercore.inflatable.inflatable_utils",
           defaults=(("pull_objects", ("initial_backoff", "backoff_cap", "max_time")),
                     ("pull_and_inflate_object_from_tree", ("initial_backoff", "backoff_cap", "max_time"))),
           evidence=("early_stop.wait(sleep_time)", "delay = initial_backoff", "time.monotonic() - start"),
           why="object pulls: 1 s, 2 s, … 10 s backoff while an object is not uploaded yet"),
    Target("flwr.serverapp.strategy.strategy_utils", replace="sleep", evidence=("sleep(1)",),
           why="message-API strategies: wait 1 s while too few nodes are connected"),
    Target("flwr.serverapp.strategy.strategy", evidence=("time.time()",),
           why="message-API strategies: the run's duration in the ServerApp's log"),
    # the SuperLink's object-push session ends 180 real seconds after its last stored object: undilated, it is
    # the likely cause of every SecAgg+ upload lost by a ResNet-18 trial on home-30 at K = 7 (2026-12-06); it is
    # read against the SuperLink's wall clock (datetime), so the constant, not `time`, is scaled
    *(Target(f"flwr.supercore.corestate.{store}", replace="", constants=("OBJECT_PUSH_SESSION_TTL_SECONDS",),
             evidence=("timedelta(seconds=OBJECT_PUSH_SESSION_TTL_SECONDS)",),
             why="SuperLink: an object-push session expires 180 s after its last stored object")
      for store in ("in_memory_corestate", "sql_corestate")),
    # every HTTP call Flower makes (a SuperNode's object push and pull, the ServerApp's and the apps' calls) gives
    # up after a 30 s wait and is retried from the start: undilated, a push of 5 MiB chunks two at a time on a
    # 10 Mbps uplink at K = 7 waited longer than that for the link to drain what the sockets held, and was
    # abandoned and resent without end — every upload of resnet18-mobile-4g-4's first trial in validation 5
    # (2026-12-07, docs/emulate.md)
    Target("flwr.supercore.protobuf.client", replace="", defaults=(("ProtobufClient.__init__", ("timeout",)),),
           evidence=("timeout: float = 30.0", "timeout=timeout,"),
           why="Flower's protobuf-over-HTTP clients: a call times out after 30 s"),
    Target("httpx._config", replace="", evidence=("keepalive_expiry: float | None = 5.0",),
           why="Flower's HTTP clients: idle keep-alive connections expire after 5 s"),
    Target("uvicorn.config", replace="", defaults=(("Config.__init__", ("timeout_keep_alive",)),),
           evidence=("timeout_keep_alive: int = 5",),
           why="SuperLink and SuperNode HTTP servers: idle keep-alive connections close after 5 s"),
)
#: fedbw's app modules that use ``time`` are dilated whole.
OWN_PREFIX = "fedbw.fl."


def scale_defaults(fn: Callable[..., Any], names: Sequence[str], factor: float) -> None:
    """Multiply the default values of ``fn``'s parameters ``names`` by ``factor`` in place.

    KeyError if a name is not a parameter with a numeric default (an upgrade changed the signature).
    """
    params = inspect.signature(fn).parameters
    kw = dict(fn.__kwdefaults__ or {})
    positional = [p for p in params.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    defaults = list(fn.__defaults__ or ())
    first_default = len(positional) - len(defaults)
    for name in names:
        if name in kw and isinstance(kw[name], (int, float)):
            kw[name] = kw[name] * factor
            continue
        idx = next((i for i, p in enumerate(positional) if p.name == name), None)
        if idx is None or idx < first_default or not isinstance(defaults[idx - first_default], (int, float)):
            raise KeyError(f"{fn.__qualname__} has no numeric default {name!r}")
        defaults[idx - first_default] *= factor
    if fn.__kwdefaults__ is not None:
        fn.__kwdefaults__ = kw
    if fn.__defaults__ is not None:
        fn.__defaults__ = tuple(defaults)


def _resolve(module: ModuleType, dotted: str) -> Any:
    obj: Any = module
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def patch(module: ModuleType, target: Target, dilation: Dilation) -> None:
    """Dilate one imported module; RuntimeError naming the target if it no longer looks as expected."""
    name = module.__name__
    try:
        if target.replace == "time":
            if getattr(module, "time", None) is not _time:
                raise RuntimeError("has no module-level `time`")
            module.time = DilatedTime(dilation)  # type: ignore[attr-defined]
        elif target.replace == "sleep":
            if getattr(module, "sleep", None) is not _time.sleep:
                raise RuntimeError("has no `sleep` imported from time")
            module.sleep = dilated_sleep(dilation)  # type: ignore[attr-defined]
        for fn_path, names in target.defaults:
            scale_defaults(_resolve(module, fn_path), names, dilation.factor)
        for constant in target.constants:
            value = getattr(module, constant)
            if not isinstance(value, (int, float)):
                raise RuntimeError(f"{constant} is not a number")
            setattr(module, constant, value * dilation.factor)
        if name == "httpx._config":
            module.DEFAULT_LIMITS.keepalive_expiry *= dilation.factor  # type: ignore[attr-defined]
    except (AttributeError, KeyError, RuntimeError) as exc:
        raise RuntimeError(f"fedbw time dilation cannot patch {name} ({target.why}): {exc}. It is written for "
                           f"flwr {FLOWER_VERSION}; run without --dilation or pin that version.") from None


def _patch_own(module: ModuleType, dilation: Dilation) -> None:
    if getattr(module, "time", None) is _time:
        module.time = DilatedTime(dilation)  # type: ignore[attr-defined]


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, loader: Any, after: Callable[[ModuleType], None]) -> None:
        self._loader, self._after = loader, after

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        self._after(module)

    def __getattr__(self, name: str) -> Any:  # get_source, get_filename, … for tracebacks and inspect
        return getattr(self._loader, name)


@dataclass
class _Finder(importlib.abc.MetaPathFinder):
    dilation: Dilation
    targets: dict[str, Target] = field(default_factory=dict)
    own_prefix: str | None = OWN_PREFIX

    def _after(self, fullname: str) -> Callable[[ModuleType], None] | None:
        if fullname in self.targets:
            target = self.targets[fullname]
            return lambda m: patch(m, target, self.dilation)
        if self.own_prefix and fullname.startswith(self.own_prefix):
            return lambda m: _patch_own(m, self.dilation)
        return None

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        after = self._after(fullname)
        if after is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _PatchingLoader(spec.loader, after)
                return spec
        return None


def install(dilation: Dilation, targets: Sequence[Target] = TARGETS, own_prefix: str | None = OWN_PREFIX) -> None:
    """Dilate every target (and fedbw's app modules under ``own_prefix``) from now on, and those
    already imported. Idempotent per process."""
    if any(isinstance(f, _Finder) for f in sys.meta_path):
        return
    finder = _Finder(dilation, {t.module: t for t in targets}, own_prefix)
    sys.meta_path.insert(0, finder)
    for name, module in list(sys.modules.items()):
        if (after := finder._after(name)) is not None and module is not None:
            after(module)


def install_from_env() -> Dilation | None:
    """What the launcher's ``sitecustomize`` calls: dilate when the environment asks for it."""
    dilation = Dilation.from_env()
    if dilation is not None and dilation.active:
        install(dilation)
    return dilation
