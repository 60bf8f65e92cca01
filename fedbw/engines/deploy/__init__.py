"""Helpers of the emulate engine: supervised Flower processes on loopback, and what they measure.

process.py (process groups, stamped logs, teardown), ports.py, flower.py (SuperLink, SuperNodes,
``flwr run``), sampler.py (byte series of the shaped links), supernode_log.py (message spans),
attribution.py (link vs compute vs framework time per message).
"""
