"""The emulate engine: Flower's Deployment Engine on real sockets, every SuperNode behind its own shaped link.

Split by job:

* :mod:`.federation` — any Flower app on a loopback federation with shaped links, measured
  (:func:`emulate_app`); :mod:`.flower` starts SuperLink and SuperNodes, :mod:`.ports` finds ports,
  :mod:`.shaper_process` runs the shaper as its own process and reads its link series, :mod:`.supernode_log` reads the SuperNodes' logs;
* :mod:`.clients` — plan (or one profile) → emulated clients: shaped links and faults;
* :mod:`.run` — fedbw's apps from a plan (``fedbw run --engine emulate``), with :mod:`.fedbw_app` (the
  app directory), :mod:`.recorder` (records per round) and :mod:`.attribution` (link, compute and
  framework time per message);
* :mod:`.foreign` — records for any Flower app (``fedbw emulate --app``: prepared here, run through
  :func:`fedbw.runner.run_app` like every run).
"""

from fedbw.engines.emulate.federation import DropFault, EmulatedClient, EmulationResult, emulate_app
from fedbw.engines.emulate.foreign import AppRun, PreparedApp, execute_app, prepare_app
from fedbw.engines.emulate.run import run_emulate

__all__ = ["AppRun", "DropFault", "EmulatedClient", "EmulationResult", "PreparedApp", "emulate_app", "execute_app",
           "prepare_app", "run_emulate"]
