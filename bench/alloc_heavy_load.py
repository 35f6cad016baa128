"""alloc-heavy.py as a module, for the benchmark scripts that reuse its
records and rounds (alloc-hold.py, reach-python.py): its name has a
hyphen, so a plain import cannot reach it."""

import importlib.util
import os


def load_alloc_heavy():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "alloc-heavy.py")
    spec = importlib.util.spec_from_file_location("alloc_heavy", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
