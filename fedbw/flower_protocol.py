"""What fedbw knows of Flower 1.42's Deployment Engine as names and intervals: facts read from Flower's
source at the pinned version, not fitted and not modelled.

Why a module of its own at the bottom of the house: the model (:mod:`fedbw.netmodel`) predicts Flower's
stages and the parts of its framework time, and the emulate engine measures the same ones; each needs
the same names without depending on the other (emulate must not import the model it is checked
against). tests/netmodel/test_flower_constants.py reads the intervals from the installed flwr.
"""

from __future__ import annotations

#: Where a message's time goes besides the link and training, in order (the model predicts these parts,
#: emulate measures them, records carry them).
FRAMEWORK_PARTS = ("supernode_poll_s", "clientapp_start_s", "app_other_s", "reply_pickup_s", "serverapp_poll_s")
#: The stages of one SecAgg+ round, in order (Flower 1.42's SecAggPlusWorkflow).
SECAGG_STAGES = ("setup", "share_keys", "collect_masked_vectors", "unmask")
#: The SuperExec's task poll (``flwr.supercore.superexec.run_superexec`` sleeps this long between polls,
#: FLWR_SUPEREXEC_TASK_POLL_INTERVAL's default): a ClientApp's launch may wait this long on any host.
SUPEREXEC_TASK_POLL_S = 1.0
#: A SuperNode's heartbeat (``flwr.common.constant``: HEARTBEAT_DEFAULT_INTERVAL, HEARTBEAT_PATIENCE): the
#: SuperLink counts a node on line until its last heartbeat + interval × patience, then the messages it
#: still owes come back to the ServerApp as errors. A node that dies at a random moment is noticed
#: interval × (patience − 1) to interval × patience later (30–60 s): what a dropout costs a stage that has
#: no timeout of its own.
HEARTBEAT_INTERVAL_S = 30.0
HEARTBEAT_PATIENCE = 2
