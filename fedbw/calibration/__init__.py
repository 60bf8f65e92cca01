"""Flower's costs on a given machine, as a file: the TOML calibration file and its types (:mod:`.file`),
read into :class:`fedbw.netmodel.FlowerCosts` for the deployment model. Below the plan, which reads it;
the measuring that writes it is ``fedbw calibrate`` (:mod:`fedbw.calibrate`, above the runner)."""
