"""Run at interpreter start in every Flower process of a dilated emulation (this folder is put first
on PYTHONPATH by fedbw's launcher): installs the time-dilation hook before Flower is imported, then
hands over to any ``sitecustomize`` this one shadows."""

import importlib.machinery
import importlib.util
import os
import sys

try:
    from fedbw.timewarp.hook import install_from_env

    install_from_env()
finally:
    _here = os.path.dirname(os.path.abspath(__file__))
    _rest = [p for p in sys.path if os.path.abspath(p or ".") != _here]
    _spec = importlib.machinery.PathFinder.find_spec("sitecustomize", _rest)
    if _spec is not None and _spec.origin and os.path.dirname(os.path.abspath(_spec.origin)) != _here:
        _module = importlib.util.module_from_spec(_spec)
        _spec.loader.exec_module(_module)
