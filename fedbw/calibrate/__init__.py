"""``fedbw calibrate``: Flower's costs measured on this machine and fitted, above the runner.

It runs emulations (through :func:`fedbw.runner.run_experiment` and the emulate engine) and times Flower's
primitives, so it sits at the command level; what it produces, the calibration file, lives below the
plan in :mod:`fedbw.calibration` (the file and its types only), where the plan reads it.
"""
