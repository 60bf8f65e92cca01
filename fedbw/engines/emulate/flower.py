"""A throw-away Flower Deployment Engine on loopback: one SuperLink, N SuperNodes, one run.

Everything lives under one temporary work directory (FLWR_HOME, uv cache, logs) that the caller
removes. Flower itself is unmodified: it is started through its own console scripts and a run is
submitted with ``flwr run``; only the federation entry in ``$FLWR_HOME/config.toml`` is written by
hand because ``flwr new``/``flwr federation`` would reach for the network.

With ``tls`` the SuperLink serves TLS with a certificate from a CA made for the run and every client
(SuperNodes, the ``flwr`` CLI, fedbw's Control-API client) checks it; with ``supernode_auth`` as well,
the SuperLink starts with ``--enable-supernode-auth``, each SuperNode gets a key pair of its own whose
public half is registered through the Control API (what ``flwr supernode register`` sends) before
the SuperNode starts with the private half (:mod:`.security`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedbw.engines.emulate.ports import LOOPBACK, check_port_free, free_ports, wait_connectable
from fedbw.engines.emulate.security import KEYS_DIR, SuperNodeKey, TlsFiles, make_supernode_key, supernode_auth_error
from fedbw.errors import ConfigError, RunError
from fedbw.processes import Child, LogLine, Supervisor, strip_ansi
from fedbw.tomlvalue import format_value

CONNECTION = "fedbw-emulate"
STARTUP_TIMEOUT_S = 60.0
CLI_TIMEOUT_S = 120.0
#: How long the SuperLink may leave run-status requests unanswered (timeouts, refused connections)
#: before the run is given up on; a busy host delays answers by seconds, not minutes.
STATUS_SILENCE_S = 120.0
#: Flower's processes run this much nicer than fedbw's own, so the shaper (in fedbw's process) is not
#: starved when every emulated client starts a ClientApp at once: real clients have their own CPUs,
#: and a starved shaper would delay bytes that a real link would have carried.
FLOWER_NICE = 5


def flower_env(workdir: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment for every Flower process: private FLWR_HOME, no telemetry, venv scripts first."""
    bin_dir = str(Path(sys.executable).parent)
    env = dict(os.environ)
    env.update({
        "PATH": bin_dir + os.pathsep + env.get("PATH", ""),
        "FLWR_HOME": str(workdir / "flwr-home"),
        "FLWR_TELEMETRY_ENABLED": "0",
        "FLWR_DISABLE_UPDATE_CHECK": "1",
        "UV_CACHE_DIR": str(workdir / "uv-cache"),
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_TMPDIR": str(workdir / "ray"),
        "TMPDIR": str(workdir / "tmp"),
        "PYTHONUNBUFFERED": "1",
        "NO_COLOR": "1",
        "TERM": "dumb",
    })
    env.update(extra or {})
    for key in ("FLWR_HOME", "UV_CACHE_DIR", "TMPDIR"):
        Path(env[key]).mkdir(parents=True, exist_ok=True)
    return env


def _place(child: Child, cpu_group: Any) -> None:
    """Put a just-started child in its CPU group: Python takes far longer to start than this takes, so
    every process it starts later inherits the group."""
    if cpu_group is None:
        return
    try:
        cpu_group.add(child.pid)
    except OSError as exc:
        raise RunError(f"could not put {child.name} under its CPU cap ({cpu_group.path}): {exc}") from None


def _script(name: str) -> str:
    path = Path(sys.executable).parent / name
    if not path.exists():
        raise RunError(f"{name} not found next to {sys.executable}; install flwr in this environment")
    return str(path)


@dataclass
class RunStatus:
    run_id: int
    status: str  #: pending | starting | running | finished
    sub_status: str  #: completed | failed | stopped | "" while not finished
    details: str

    @property
    def finished(self) -> bool:
        return self.status == "finished"


class FlowerDeployment:
    """SuperLink and SuperNodes on loopback under a :class:`Supervisor`; ``tls`` (None: ``--insecure``)
    and ``supernode_auth`` as in the module docstring."""

    def __init__(self, supervisor: Supervisor, workdir: Path, env_extra: Mapping[str, str] | None = None,
                 nice: int = FLOWER_NICE, *, tls: TlsFiles | None = None, supernode_auth: bool = False) -> None:
        if supernode_auth and (why := supernode_auth_error(tls is not None)) is not None:
            raise ConfigError(why)
        self.sup = supervisor
        self.nice = nice
        self.workdir = workdir
        self.env = flower_env(workdir, env_extra)
        self.logs = workdir / "logs"
        self.tls, self.supernode_auth = tls, supernode_auth
        self.superlink: Child | None = None
        self.superlink_port: int | None = None
        self.supernodes: dict[str, Child] = {}
        self.keys: dict[str, SuperNodeKey] = {}  #: SuperNode name → its key pair (under supernode_auth)
        self._control: Any = None

    # -- security -----------------------------------------------------------------------------
    def superlink_security_args(self) -> list[str]:
        """``flower-superlink``'s TLS and authentication flags."""
        if self.tls is None:
            return ["--insecure"]
        args = ["--ssl-ca-certfile", str(self.tls.ca), "--ssl-certfile", str(self.tls.cert),
                "--ssl-keyfile", str(self.tls.key)]
        return [*args, "--enable-supernode-auth"] if self.supernode_auth else args

    def supernode_security_args(self, name: str) -> list[str]:
        """``flower-supernode``'s TLS flags and, under authentication, a key pair made for ``name`` and
        registered with the SuperLink (which must be running)."""
        if self.tls is None:
            return ["--insecure"]
        args = ["--root-certificates", str(self.tls.ca)]
        if not self.supernode_auth:
            return args
        key = make_supernode_key(self.workdir / KEYS_DIR, name)
        self.register_supernode(key)
        self.keys[name] = key
        return [*args, "--auth-supernode-private-key", str(key.private)]

    def register_supernode(self, key: SuperNodeKey) -> int:
        """Register ``key``'s public half with the SuperLink through the Control API, as ``flwr supernode
        register KEY.pub`` does (same loader, same request); returns the node id it was given."""
        from flwr.cli.supernode.register import try_load_public_key
        from flwr.proto.control_pb2 import RegisterNodeRequest  # pylint: disable=E0611

        public = try_load_public_key(key.public)
        try:
            res = self._control_call(lambda c: c.RegisterNode(RegisterNodeRequest(public_key=public, name=key.name)))
        except Exception as exc:  # noqa: BLE001 - httpx or Flower errors: one line, never a traceback
            raise RunError(f"the SuperLink refused to register SuperNode {key.name}'s public key: "
                           f"{type(exc).__name__}: {exc}; see {self.logs / 'superlink.log'}") from None
        if not res.node_id:
            raise RunError(f"the SuperLink did not register SuperNode {key.name}; see {self.logs / 'superlink.log'}")
        return int(res.node_id)

    def _control_client(self) -> Any:
        """fedbw's own Control-API client of the SuperLink (TLS checked against the run's CA)."""
        from flwr.supercore.control import ControlHttpClient
        from flwr.supercore.interceptors.http.runtime_version import RuntimeVersionHttpInterceptor

        if self._control is None:
            self._control = ControlHttpClient.from_server_address(
                server_address=f"{LOOPBACK}:{self.superlink_port}", insecure=self.tls is None,
                root_certificates=None if self.tls is None else self.tls.ca.read_bytes(),
                interceptors=[RuntimeVersionHttpInterceptor(component_name="flwr CLI")])
        return self._control

    def _control_call(self, fn: Callable[[Any], Any]) -> Any:
        """``fn(control client)`` where the SuperLink can be reached (here: this thread)."""
        return fn(self._control_client())

    # -- processes ----------------------------------------------------------------------------
    def start_superlink(self, port: int = 0, cpu_group: Any = None) -> int:
        """Start the SuperLink (Fleet, Control and Runtime on one HTTP port); returns the port.

        With ``cpu_group`` (a :class:`fedbw.processes.cpu_cap.CpuGroup`) the SuperLink, and so its
        SuperExec and the ServerApp it starts, run under that group's CPU cap."""
        if port:
            check_port_free(port, "the SuperLink")
        else:
            port = free_ports(1)[0]
        argv = [_script("flower-superlink"), *self.superlink_security_args(), "--host", LOOPBACK, "--port", str(port),
                "--disable-runtime-dependency-installation"]
        child = self.sup.start("superlink", argv, self.env, self.logs / "superlink.log", nice=self.nice,
                               wave=0)  # stops after the SuperNodes: they would retry a server that is gone
        _place(child, cpu_group)
        self.superlink, self.superlink_port = child, port
        child.wait_for_line("Fleet HTTP API", STARTUP_TIMEOUT_S)
        if not wait_connectable(port, STARTUP_TIMEOUT_S):
            raise RunError(child.describe_failure(f"did not accept connections on {LOOPBACK}:{port}"))
        time.sleep(0.3)
        self.sup.check()  # startup failures (e.g. a missing SuperExec) surface a moment after binding
        self._write_connection(port)
        return port

    def start_supernode(self, name: str, superlink_port: int, node_config: Mapping[str, Any],
                        on_line: Callable[[Child, LogLine], None] | None = None, cpu_group: Any = None) -> Child:
        """Start one SuperNode that reaches the SuperLink at ``superlink_port`` (its shaped port); with
        ``cpu_group`` it, its SuperExec and its ClientApps run under that group's CPU cap."""
        own_port = free_ports(1)[0]
        cfg = " ".join(f"{k}={format_value(v)}" for k, v in node_config.items())
        argv = [_script("flower-supernode"), *self.supernode_security_args(name), "--superlink",
                f"{LOOPBACK}:{superlink_port}", "--port", str(own_port), "--node-config", cfg]
        child = self.sup.start(name, argv, self.env, self.logs / f"{name}.log", on_line=on_line, nice=self.nice,
                               label=f"SuperNode {name}")
        _place(child, cpu_group)
        self.supernodes[name] = child
        return child

    def wait_supernodes_ready(self, timeout_s: float = STARTUP_TIMEOUT_S) -> None:
        """Every SuperNode has registered (logged its node id) with the SuperLink."""
        for child in self.supernodes.values():
            child.wait_for_line("SuperNode ID", timeout_s)

    def _write_connection(self, port: int) -> None:
        """The ``flwr`` CLI's connection to this SuperLink (TLS: the run's CA)."""
        security = "insecure = true\n" if self.tls is None else f"root-certificates = {format_value(str(self.tls.ca))}\n"
        (Path(self.env["FLWR_HOME"]) / "config.toml").write_text(
            f'[superlink]\ndefault = "{CONNECTION}"\n\n[superlink.{CONNECTION}]\n'
            f'address = "{LOOPBACK}:{port}"\n{security}', encoding="utf-8")

    # -- runs ---------------------------------------------------------------------------------
    def _flwr(self, *args: str, timeout_s: float = CLI_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run([_script("flwr"), *args], env=self.env, capture_output=True, text=True,
                                  timeout=timeout_s, cwd=self.workdir, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise RunError(f"`flwr {' '.join(args)}` did not return within {timeout_s:.0f} s") from None

    def submit(self, app_dir: Path, run_config: Mapping[str, Any] | None = None) -> int:
        """``flwr run APP`` on this federation; returns the run id."""
        args = ["run", str(app_dir), CONNECTION, "--format", "json"]
        if run_config:
            args += ["--run-config", " ".join(f"{k}={format_value(v)}" for k, v in run_config.items())]
        proc = self._flwr(*args)
        try:
            reply = json.loads(proc.stdout[proc.stdout.find("{"):])
        except (ValueError, json.JSONDecodeError):
            reply = {"success": False, "error-message": (proc.stdout + proc.stderr).strip()[-2000:]}
        if not reply.get("success"):
            msg = str(reply.get("error-message", "")).strip()
            raise RunError(f"Flower refused the app {app_dir}:\n    {msg}\n"
                           f"Check that it is a Flower app directory (pyproject.toml with [tool.flwr.app]) and "
                           f"that --run-config keys exist in its [tool.flwr.app.config].")
        self.sup.check()
        return int(reply["run-id"])

    def status(self, run_id: int) -> RunStatus:
        """The run's status through the Control API (in-process client; a `flwr ls` costs ~1 CPU-s)."""
        from flwr.common.serde import run_from_proto
        from flwr.proto.control_pb2 import ListRunsRequest  # pylint: disable=E0611

        res = self._control_call(lambda c: c.ListRuns(ListRunsRequest(run_id=run_id)))
        run = run_from_proto(res.run_dict[run_id])
        st = run.status
        return RunStatus(run_id, st.status, st.sub_status, st.details)

    def wait(self, run_id: int, timeout_s: float | None, tick: Callable[[], None] | None = None,
             poll_s: float = 1.0) -> RunStatus:
        """Until the run finishes; every ``poll_s`` checks the children and calls ``tick``."""
        import httpx

        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        next_status = 0.0
        unanswered_since: float | None = None
        while True:
            self.sup.check()
            if tick is not None:
                tick()
            now = time.monotonic()
            if now >= next_status:
                try:
                    st = self.status(run_id)
                    unanswered_since = None
                except (httpx.HTTPError, OSError) as exc:
                    # a SuperLink too busy to answer in time (a loaded host) is asked again; one that stays
                    # silent ends the run with a message, never a traceback (a dead one: sup.check above)
                    unanswered_since = unanswered_since or now
                    if now - unanswered_since > STATUS_SILENCE_S:
                        raise RunError(f"the SuperLink has not answered a run-status request for "
                                       f"{now - unanswered_since:.0f} s ({type(exc).__name__}: {exc}); see "
                                       f"{self.logs / 'superlink.log'}") from None
                    st = None
                if st is not None and st.finished:
                    return st
                next_status = now + poll_s
            if deadline is not None and now > deadline:
                self.stop_run(run_id)
                raise RunError(f"the Flower run did not finish within {timeout_s:.0f} s; raise the timeout or "
                               f"check the logs in {self.logs}")
            time.sleep(0.1)

    def stop_run(self, run_id: int) -> None:
        try:
            self._flwr("stop", str(run_id), CONNECTION, timeout_s=30.0)
        except RunError:
            pass

    def server_log(self, run_id: int) -> str:
        """The ServerApp's log, as Flower keeps it for the run."""
        proc = self._flwr("log", str(run_id), CONNECTION, "--show", timeout_s=60.0)
        return strip_ansi(proc.stdout)

    def close(self) -> None:
        if self._control is not None:
            try:
                self._control.close()
            except Exception:  # noqa: BLE001
                pass
            self._control = None
