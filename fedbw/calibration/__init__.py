"""Flower's costs on a given machine: measured by ``fedbw calibrate``, kept in a TOML calibration file,
read into :class:`fedbw.netmodel.FlowerCosts` for the deployment model (:mod:`.file`)."""
