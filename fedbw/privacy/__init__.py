"""Privacy maths as pure code: ε accounting for every DP mode, and (later) SecAgg+ bounds.

No Flower and no torch here (a test reads the imports): the estimate engine, the plan and the config
checks use it without starting anything. The Flower-facing wiring (mods, workflows, strategy wrappers)
lives in :mod:`fedbw.fl.privacy`.
"""
