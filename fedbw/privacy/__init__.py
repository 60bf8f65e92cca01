"""Privacy maths as pure code: ε accounting for every DP mode and sampling (:mod:`.accounting`), the
sampler it accounts for (:mod:`.sampling`), each round's privacy record (:mod:`.rounds`), SecAgg+'s
wrap bounds (:mod:`.secagg_bounds`) and where randomness comes from (:mod:`.randomness`).

No Flower and no torch here (a test reads the imports): the estimate engine, the plan and the config
checks use it without starting anything. The Flower-facing wiring (mods, workflows, strategy wrappers)
lives in :mod:`fedbw.fl.privacy`.
"""
