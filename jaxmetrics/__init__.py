"""jaxmetrics: exact, batched classification metrics in JAX.

`import jaxmetrics` is cheap: JAX and the library load on the first use of a public name
(`jaxmetrics._api` holds them all), so the command line can check its options and read its
input, and fail on bad input, in a fraction of a second, before JAX starts.
"""

import typing

__version__ = "0.1.0"

if typing.TYPE_CHECKING:  # what type checkers and IDEs see: every public name
    from jaxmetrics._api import *  # noqa: F403
    from jaxmetrics._api import __all__ as __all__
del typing  # (`dir(jaxmetrics)` lists the public names, not this module's imports)


def _load():
    """Import every public name into the package (once): later uses are plain attributes.

    The first use may come inside a caller's `jax.jit` trace: the modules are imported as
    eager code, so that what they keep at import (the kernels' notion of "not tracing") is
    never the caller's trace (it was: every later eager call was then taken as traced)."""
    import importlib

    import jax

    with jax.core.eval_context():
        _api = importlib.import_module("jaxmetrics._api")
    namespace = globals()
    namespace.update({name: getattr(_api, name) for name in _api.__all__})
    namespace["__all__"] = list(_api.__all__)
    return _api


def __getattr__(name: str):
    if name.startswith("_") and name != "__all__":  # submodules, probes such as __wrapped__
        raise AttributeError(f"module 'jaxmetrics' has no attribute {name!r}")
    api = _load()
    if name == "__all__" or name in api.__all__:
        return globals()[name]
    raise AttributeError(f"module 'jaxmetrics' has no attribute {name!r}")


def __dir__() -> list[str]:
    public = {name for name in globals() if not name.startswith("_")}
    return sorted({*public, "__version__", *_load().__all__})
