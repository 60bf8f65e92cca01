"""fedbw's Flower apps: a legacy-path ServerApp/ClientApp pair that trains catalog models, measures
every message it sends and receives, and writes what it measured as events.

Importable by Flower as ``fedbw.fl.server_app:app`` and ``fedbw.fl.client_app:app``; both read their
settings from a plan file (:mod:`fedbw.fl.settings`). This package never imports ``fedbw.engines``:
engines start the apps and turn their events into records.
"""
