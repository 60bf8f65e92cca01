"""fedbw: a federated-learning bandwidth lab.

Runs federated rounds over shaped home-broadband links and tells where the time and the bytes went,
beside what the same model would cost on a data-center fabric.
"""

__version__ = "0.2.0"
