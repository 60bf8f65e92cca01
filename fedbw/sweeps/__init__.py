"""Grid sweeps: the cartesian product of any config keys, one run directory per point, resumable.

``grid.py`` reads ``--grid`` items, :mod:`fedbw.results.sweep_index` is sweep.json (the grid, each
point's overrides, run directory and status), ``run.py`` runs the points through the runner. Nothing here prints: the CLI
shows progress through a :class:`~fedbw.sweeps.run.SweepObserver`.
"""

from fedbw.results.sweep_index import GridAxis, point_label
from fedbw.sweeps.grid import grid_points, parse_grid
from fedbw.results.sweep_index import GridPoint, SweepIndex, is_sweep_dir, read_index
from fedbw.sweeps.run import PreparedSweep, SweepObserver, prepare_sweep, run_prepared, sweep

__all__ = ["GridAxis", "GridPoint", "PreparedSweep", "SweepIndex", "SweepObserver", "grid_points", "is_sweep_dir",
           "parse_grid", "point_label", "prepare_sweep", "read_index", "run_prepared", "sweep"]
