"""Engines turn a plan into RoundRecords: estimate (analytic), simulate (Flower Simulation
Engine, virtual clock), emulate (Flower Deployment Engine on shaped sockets)."""
