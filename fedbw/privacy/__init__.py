"""Privacy maths as pure code: ε accounting for every DP mode and sampling (:mod:`.accounting`), the
sampler it accounts for (:mod:`.sampling`), each round's privacy record (:mod:`.record`, filled by
:mod:`.rounds`), SecAgg+'s
wrap bounds (:mod:`.secagg_bounds`) and where randomness comes from (:mod:`.randomness`).

No Flower, no torch and no config here (tests read the imports): the estimate engine, the plan and the config
checks use it without starting anything. The Flower-facing wiring (mods, workflows, strategy wrappers)
lives in :mod:`fedbw.fl.privacy`.
"""
