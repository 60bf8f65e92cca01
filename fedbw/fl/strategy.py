"""FedAvg (legacy ``flwr.server.strategy``, the path SecAgg+ needs) that samples the plan's clients.

fedbw, not Flower, decides who trains each round — ``plan.sampled_clients(r)`` — so estimate,
simulate and emulate run the same federation. Evaluation is centralized on the server's held-out
split each round (no network cost); the round's end is logged after it, with the ε the server
accounted for what really happened (:class:`RoundPrivacy`).

Privacy duties that only the server can do live here too:

* **accounting what happened**: the plan's ε schedule assumes every sampled client reports. At each
  round's end the server composes the round actually run — the cohort it aggregated (fixed-size
  sampling: fewer reports mean a larger mean's sensitivity, so more ε), the clients that released
  (local DP) — and stops before a round whose planned ε would exceed ``max_epsilon`` given what was
  spent (:class:`BudgetExhausted`);
* **the fixed-denominator release under Poisson sampling**: with central DP and ``clients.sampling =
  "poisson"`` the aggregate is Σ updates / per_round (McMahan et al. 2018), not their mean, so one
  client's influence is C / per_round whatever the cohort's size — the mechanism Poisson accounting covers;
* **reproducibility**: Flower's DP wrappers draw from NumPy's global generator; it is seeded from the
  run's seed at the start of every round and right before aggregation; and updates are summed in
  client order, not arrival order (float addition is not associative).
"""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import numpy as np
from flwr.common import FitIns, Parameters, Scalar, ndarrays_to_parameters, parameters_to_ndarrays
from flwr.server.client_manager import ClientManager
from flwr.server.client_proxy import ClientProxy
from flwr.server.strategy import FedAvg

from fedbw.errors import RunError
from fedbw.shaper.anchor import anchor_traces_now
from fedbw.fl.events import EVAL, ROUND_END, ROUND_END_PRIVACY, ROUND_START, EventLog
from fedbw.fl.settings import AppSettings
from fedbw.privacy.accounting import PrivacyAccountant, accountant_for
from fedbw.privacy.randomness import seed_numpy_global
from fedbw.privacy.rounds import account_round, privacy_round, released_cohort

#: How long to wait for the SuperNodes a round samples to register.
NODE_WAIT_S = 600.0
#: failures Flower 1.42's SecAggPlusWorkflow hands aggregate_fit for one client lost before its masked vector
#: (secaggplus_workflow.py, collect_masked_vectors_stage: both loops over the replies append its error)
SECAGG_FAILURES_PER_DROPOUT = 2


class RoundState:
    """Which round the workflow is in; 0 outside training rounds (read by the MeasuringGrid)."""

    def __init__(self) -> None:
        self.round = 0
        self.t_start = 0.0
        self.lock = threading.Lock()


class BudgetExhausted(Exception):
    """The next round would exceed ``max_epsilon`` given the ε actually spent; the run ends cleanly."""


@dataclass
class RoundPrivacy:
    """What the server saw of one round's privacy (filled as the round goes)."""

    cohort: int = 0  #: updates aggregated (0: nothing released)
    participants: list[int] = field(default_factory=list)  #: fedbw client ids whose updates were released
    secagg_clipped: int | None = None
    secagg_wrapped: int | None = None


class PlanFedAvg(FedAvg):
    """FedAvg whose ``configure_fit`` returns exactly the plan's sampled clients."""

    def __init__(self, settings: AppSettings, log: EventLog, state: RoundState, node_of: dict[int, int],
                 evaluate_fn: Callable[[Parameters], tuple[float, float]] | None,
                 come_back: Callable[[list[int], dict[int, int]], dict[int, int]] | None = None,
                 client_of: dict[int, int] | None = None, **kwargs: Any) -> None:
        super().__init__(fraction_fit=1.0, fraction_evaluate=0.0, min_fit_clients=1, min_evaluate_clients=0,
                         min_available_clients=1, accept_failures=False, **kwargs)
        self.settings, self.log, self.state, self.node_of = settings, log, state, node_of
        #: node id → client id; shared with the measuring grid (``client_of``) so that a client that came
        #: back is counted under its new node there too
        self.client_of = client_of if client_of is not None else {n: c for c, n in node_of.items()}
        #: finds the new node of a sampled client that came back (clients.availability under emulate)
        self._come_back = come_back
        #: the round in which each client's node was last found (0: at the start); under emulate a planned
        #: dropout's node is stopped, so after its drop that node is stale even while Flower still lists it
        self._found_in: dict[int, int] = dict.fromkeys(node_of, 0)
        self._evaluate_fn = evaluate_fn
        self.accountant: PrivacyAccountant | None = accountant_for(settings.config.privacy.dp, settings.plan.sampler)
        self.rounds: dict[int, RoundPrivacy] = {}
        self._global: list[np.ndarray] | None = None

    # ------------------------------------------------------------------------------ randomness

    def seed_round(self, server_round: int, purpose: str) -> None:
        """Seed NumPy's global generator for the server's draws at one labelled point of a round."""
        cfg = self.settings.config
        seed_numpy_global(cfg.privacy.randomness, cfg.seed, "server", server_round, purpose)

    # ------------------------------------------------------------------------------ the round

    def configure_fit(self, server_round: int, parameters: Parameters,
                      client_manager: ClientManager) -> list[tuple[ClientProxy, FitIns]]:
        plan = self.settings.plan
        if self.accountant is not None and self.accountant.next_round_exceeds():
            raise BudgetExhausted(f"stopped after round {server_round - 1}: the next round would exceed "
                                  f"max_epsilon = {self.accountant.max_epsilon:g} (ε would be "
                                  f"{self.accountant.next_round_epsilon():.4g}, given the rounds actually run)")
        self.seed_round(server_round, "configure")
        ids = plan.sampled_clients(server_round)
        proxies = self._wait_for_nodes(client_manager, ids, server_round)
        chosen = []
        for cid in ids:
            proxy = proxies.get(str(self.node_of[cid]))
            if proxy is None:
                raise RunError(f"client {cid} (node {self.node_of[cid]}) is not connected")
            chosen.append(proxy)
        self.rounds[server_round] = RoundPrivacy()
        self._global = parameters_to_ndarrays(parameters)
        if server_round == 1:  # under emulate: traced links start their traces now, the model's t = 0
            anchor_traces_now()
        with self.state.lock:
            self.state.round, self.state.t_start = server_round, time.perf_counter()
        self.log.emit(ROUND_START, round=server_round, clients=ids, t=self.state.t_start)
        fit_ins = FitIns(parameters, {"round": server_round})
        return [(p, fit_ins) for p in chosen]  # empty (a Poisson round that drew nobody): Flower skips the fit

    def aggregate_fit(self, server_round: int, results: list, failures: list) -> tuple[Parameters | None,
                                                                                      dict[str, Scalar]]:
        if len(failures) > self._planned_dropouts(server_round):  # a planned dropout's reply comes back an error
            reasons = "; ".join(str(f if isinstance(f, BaseException) else f[1].status.message) for f in failures[:3])
            raise RunError(f"round {server_round}: {len(failures)} client(s) failed: {reasons}")
        self.seed_round(server_round, "aggregate")  # the DP wrapper draws its noise right after this returns
        # Replies arrive in any order; a float sum depends on its order: sum in client order, reproducibly.
        results = sorted(results, key=lambda r: self.client_of.get(int(r[0].node_id), -1))
        info = self.rounds.setdefault(server_round, RoundPrivacy())
        info.participants = [self.client_of.get(int(p.node_id), -1) for p, _ in results]
        info.cohort = released_cohort(self.settings.plan, info.participants)
        if info.cohort == 0:  # abandoned (fewer than round.min_replies): the previous model stays
            return None, {}
        params, metrics = super().aggregate_fit(server_round, results, failures)
        if params is not None and self._fixed_denominator():
            params = self._rescale_to_fixed_denominator(params, len(results))
        return params, metrics

    def _wait_for_nodes(self, client_manager: ClientManager, ids: list[int], server_round: int = 1,
                        ) -> dict[str, ClientProxy]:
        """The client manager's proxies once every client this round samples is registered (not every client
        of the federation: a client an earlier round dropped is not there until it comes back, under a new
        node id); RunError after NODE_WAIT_S."""
        end = time.monotonic() + NODE_WAIT_S
        while True:
            proxies = client_manager.all()
            missing = [cid for cid in ids if str(self.node_of[cid]) not in proxies or self._stale(cid, server_round)]
            if missing and self._come_back is not None and (back := self._come_back(missing, self.node_of)):
                self.client_of.update({node: cid for cid, node in back.items()})  # node_of: updated by come_back
                self._found_in.update(dict.fromkeys(back, server_round))
                continue  # look again under the new node ids
            if not missing:
                return proxies
            if time.monotonic() >= end:
                raise RunError(f"client(s) {', '.join(map(str, missing[:5]))} sampled in this round did not register "
                               f"within {NODE_WAIT_S:.0f} s ({client_manager.num_available()} of "
                               f"{self.settings.config.clients.total} clients registered)")
            time.sleep(0.2)

    def _stale(self, cid: int, server_round: int) -> bool:
        """Whether client ``cid``'s known node was stopped as it dropped out (emulate: a planned dropout in a
        round since its node was found), so that a fresh node must be found for it."""
        if self._come_back is None or self.settings.config.engine != "emulate":
            return False  # the Simulation Engine keeps every node; without dropouts nothing goes stale
        offline, found = self.settings.plan.offline or [], self._found_in.get(cid, 0)
        return any(cid in offline[r - 1] for r in range(max(found, 1), min(server_round, len(offline) + 1)))

    def _planned_dropouts(self, server_round: int) -> int:
        """Failures the plan's dropouts of this round's training make (clients.availability, ``[faults] drops``
        at "fit", or at "collect_masked_vectors" under SecAgg+): under emulate their messages come back as
        errors once Flower reports them gone, and the round goes on without them; any failure beyond them is
        an error. Flower 1.42's SecAgg+ counts a masked vector's error twice (its collect_masked_vectors stage
        appends it in the sum's loop and again in the results' loop)."""
        cfg, plan = self.settings.config, self.settings.plan
        faults = sum(1 for d in cfg.faults.drops if d.round == server_round and d.stage == plan.dropout_stage)
        per_dropout = SECAGG_FAILURES_PER_DROPOUT if cfg.privacy.secagg.enabled else 1
        return per_dropout * (len(plan.dropped(server_round)) + faults)

    def _fixed_denominator(self) -> bool:
        dp = self.settings.config.privacy.dp
        return self.settings.plan.sampler.cohort_varies and dp.enabled and dp.mode != "local"

    def _rescale_to_fixed_denominator(self, params: Parameters, cohort: int) -> Parameters:
        """global + (mean − global) · n / per_round = global + Σ updates / per_round (equal weights)."""
        assert self._global is not None
        scale = cohort / self.settings.config.clients.per_round
        mean = parameters_to_ndarrays(params)
        return ndarrays_to_parameters([(g + (m - g) * scale).astype(m.dtype, copy=False)
                                       for g, m in zip(self._global, mean)])

    def note_secagg(self, rnd: Any) -> None:
        """Observer of :class:`~fedbw.fl.privacy.bounds.GuardedSecAggPlusWorkflow`: clipped and wrapped counts."""
        info = self.rounds.setdefault(rnd.round, RoundPrivacy())
        info.secagg_clipped, info.secagg_wrapped = rnd.clipped, rnd.wrapped

    def released_nothing(self, server_round: int) -> bool:
        """True when round ``server_round`` aggregated no update (empty Poisson round, halted SecAgg+)."""
        return self.rounds.get(server_round, RoundPrivacy()).cohort == 0

    # ------------------------------------------------------------------------------ round end

    def _account(self, server_round: int) -> tuple[float | None, dict[str, Any] | None]:
        """ε after this round as it happened, and the round's privacy record (as a dict for the event)."""
        cfg = self.settings.config
        info = self.rounds.get(server_round, RoundPrivacy())
        epsilon = None
        if self.accountant is not None:
            epsilon = account_round(self.accountant, self.settings.plan, server_round, info.participants)
        record = privacy_round(cfg.privacy, self.settings.plan.sampler, info.cohort, info.secagg_clipped,
                               info.secagg_wrapped)
        return epsilon, None if record is None else asdict(record)

    def evaluate(self, server_round: int, parameters: Parameters) -> tuple[float, dict[str, Scalar]] | None:
        """Centralized evaluation, then the round's end (it is the last step of a round)."""
        loss = accuracy = None
        if self._evaluate_fn is not None:
            loss, accuracy = self._evaluate_fn(parameters)
        if server_round == 0:
            if loss is not None:
                self.log.emit(EVAL, round=0, loss=loss, accuracy=accuracy)
        else:
            with self.state.lock:
                wall = time.perf_counter() - self.state.t_start
                self.state.round = 0
            epsilon, privacy = self._account(server_round)
            self.log.emit(ROUND_END, round=server_round, loss=loss, accuracy=accuracy, epsilon=epsilon,
                          wall_time_s=wall, **({ROUND_END_PRIVACY: privacy} if privacy else {}))
        return None if loss is None else (loss, {"accuracy": accuracy})


def centralized_evaluator(settings: AppSettings) -> Callable[[Parameters], tuple[float, float]] | None:
    """Loss/accuracy of the global model on the held-out split; ``None`` in synthetic-compute mode
    (its updates are not trained, so there is nothing to evaluate)."""
    if settings.synthetic:
        return None
    from fedbw.fl.data import is_token_model, holdout_dataset
    from fedbw.fl.train import evaluate, seeded_model, set_parameters

    plan = settings.plan
    model = seeded_model(plan.model.name, settings.config.seed, settings.device)
    data = holdout_dataset(plan)
    tokens = is_token_model(plan)

    def run(parameters: Parameters) -> tuple[float, float]:
        set_parameters(model, parameters_to_ndarrays(parameters))
        return evaluate(model, data, device=settings.device, tokens=tokens)

    return run
