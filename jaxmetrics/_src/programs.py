"""Compiled programs kept on disk and found again without tracing (the command line's warm start).

JAX's persistent compilation cache saves the compile, but finding an entry needs the program's
text, so every run still traces and lowers every program: 1.3 s of a warm `jaxmetrics report
--demo` that computes for under one. Here a jitted jaxmetrics function is looked up by a key made
without tracing: its name, its static arguments, the shapes and types of its arrays, the choices
read when tracing (host or XLA kernels, JAX's tracing configuration), and a fingerprint of
everything the program could depend on (the source of jaxmetrics, the versions of JAX and
jaxlib, the backend, the XLA flags, the CPU). A hit loads the serialized executable and runs it;
a miss traces and compiles as usual, then saves it.

Only functions of jaxmetrics are kept, and only when every static argument has a stable
description (numbers, strings, tuples, jaxmetrics functions whose closures hold such values, and
partials of those), so the key always says everything the trace reads: a user's function or a
lambda is never saved. Off unless `use` names a directory (the command line does, with JAX's own
persistent cache off: see `_compile_and_save`).
"""

from __future__ import annotations

import contextlib
import enum
import functools
import hashlib
import os
import pickle
import platform
import sys
import tempfile
import threading
import types
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jaxlib
import numpy as np

_directory: str | None = None
_PERSISTENT: weakref.WeakSet[Persistent] = weakref.WeakSet()


def use(directory: str | os.PathLike | None) -> None:
    """Keep compiled programs in `directory` (created when needed); None: keep none. Programs
    loaded from the previous directory are forgotten."""
    global _directory
    _directory = None if directory is None else os.fspath(directory)
    for function in _PERSISTENT:
        function.loaded.clear()


class _Unstable(Exception):
    """A value whose description would not identify the program it makes."""


_PLAIN = (type(None), bool, int, float, complex, str, bytes)


def describe(value: Any, _inside: tuple[int, ...] = ()) -> str:
    """A description of a static value that is the same in every process, or `_Unstable`."""
    if isinstance(value, _PLAIN):
        return f"{type(value).__name__}:{value!r}"
    if isinstance(value, enum.Enum):
        return f"{type(value).__module__}.{type(value).__qualname__}.{value.name}"
    if isinstance(value, np.dtype | np.generic):
        return f"np:{value!r}"
    if id(value) in _inside:  # a function whose closure holds itself, a list holding itself
        raise _Unstable("a value that contains itself")
    inside = (*_inside, id(value))
    if isinstance(value, dict):
        value = tuple(sorted(value.items()))
        return f"dict({','.join(describe(item, inside) for item in value)})"
    if isinstance(value, tuple | list | frozenset):
        items = [describe(item, inside) for item in value]
        if isinstance(value, frozenset):
            items.sort()
        return f"{type(value).__name__}({','.join(items)})"
    if isinstance(value, types.FunctionType):
        return _describe_function(value, inside)
    if isinstance(value, functools.partial):  # e.g. a metric with a fixed option
        parts = (value.func, value.args, value.keywords)
        return f"partial({','.join(describe(part, inside) for part in parts)})"
    if isinstance(value, type) and value.__module__.startswith("jaxmetrics."):
        return f"class:{value.__module__}.{value.__qualname__}"
    raise _Unstable(type(value).__name__)


def _describe_function(function: types.FunctionType, inside: tuple[int, ...]) -> str:
    module = function.__module__ or ""
    code = function.__code__
    if not module.startswith("jaxmetrics.") or "<lambda>" in code.co_qualname:
        raise _Unstable(f"{module}.{code.co_qualname}")
    # the code's own name and line, not `__qualname__` (which `functools.wraps` overwrites),
    # and whatever the closure holds (a decorator's wrapped function, its options)
    cells = [describe(cell.cell_contents, inside) for cell in function.__closure__ or ()]
    defaults = describe(function.__defaults__ or (), inside)
    keyword_defaults = describe(function.__kwdefaults__ or {}, inside)
    return (
        f"fn:{module}.{code.co_qualname}@{code.co_firstlineno}"
        f"[{','.join(cells)}]{defaults}{keyword_defaults}"
    )


@functools.cache
def _fingerprint() -> str | None:
    """What every program depends on besides its key: jaxmetrics' source, JAX, XLA, the CPU.
    None where the source cannot be read (a zipped install): then nothing is kept."""
    from jax.extend import backend as jax_backend

    import jaxmetrics

    digest = hashlib.sha256()
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sources = 0
    for root, dirs, files in os.walk(package):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(root, name)
                digest.update(os.path.relpath(path, package).encode())
                with open(path, "rb") as file:
                    digest.update(file.read())
                sources += 1
    if sources == 0:
        return None
    backend = jax_backend.get_backend()
    parts = [
        jaxmetrics.__version__,
        jax.__version__,
        jaxlib.__version__,
        np.__version__,
        sys.version,
        platform.machine(),
        os.environ.get("XLA_FLAGS", ""),
        f"{backend.platform}:{backend.platform_version}",
        _cpu_flags(),
    ]
    digest.update("\n".join(parts).encode())
    return digest.hexdigest()


def _cpu_flags() -> str:
    """The CPU's feature flags (an executable compiled for one CPU may not run on another)."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as file:
            for line in file:
                if line.startswith(("flags", "Features")):
                    return line.strip()
    except OSError:
        pass
    return platform.processor()


def _tracing_choices() -> str:
    """The configuration JAX reads when tracing (x64, promotion rules, ...) and the kernel
    choices jaxmetrics reads (`kernels.host_callbacks`, `sorting.host_cumulative`)."""
    from jax._src import config

    from jaxmetrics._src import kernels, sorting

    values = []
    for value in config.trace_context():
        try:
            values.append(describe(value))
        except _Unstable:
            values.append("?")  # an object (the axis environment): empty outside any trace
    values.append(f"{kernels.host_callbacks()}/{sorting.host_cumulative()}")
    return ";".join(values)


def _aval(leaf: Any) -> str:
    aval = jax.typeof(leaf)
    return f"{aval.str_short()}{'~' if getattr(aval, 'weak_type', False) else ''}"


class Persistent:
    """A `jax.jit`-ed jaxmetrics function whose compiled programs `use` keeps on disk."""

    def __init__(
        self,
        jitted: Callable[..., Any],
        name: str,
        static_argnums: Sequence[int] = (),
        static_argnames: Sequence[str] = (),
    ):
        self.jitted = jitted
        self.name = name
        self.static_argnums = frozenset(static_argnums)
        self.static_argnames = frozenset(static_argnames)
        self.loaded: dict[str, Any] = {}  # key -> compiled program, in this process
        functools.update_wrapper(self, jitted)
        _PERSISTENT.add(self)

    def __getattr__(self, name: str) -> Any:  # lower, eval_shape, _cache_size, ...
        return getattr(self.jitted, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if (
            _directory is None
            or not trace_state_clean()
            or jax.config.jax_disable_jit
            or jax.device_count() != 1
            or _fingerprint() is None
        ):
            return self.jitted(*args, **kwargs)
        try:
            key, dynamic_args, dynamic_kwargs = self._key(args, kwargs)
        except (_Unstable, TypeError, ValueError):  # (jit itself raises the clear error)
            return self.jitted(*args, **kwargs)
        compiled = self.loaded.get(key)
        if compiled is not None:
            return compiled(*dynamic_args, **dynamic_kwargs)
        compiled = _load(key)
        if compiled is not None:
            try:  # a program that loads but cannot run (seen: a kernel missing) is compiled again
                # (its first run is waited for: the error may come when it runs, not when called)
                result = jax.block_until_ready(compiled(*dynamic_args, **dynamic_kwargs))
                self.loaded[key] = compiled
                return result
            except jax.errors.JaxRuntimeError:
                with contextlib.suppress(OSError):
                    os.remove(_path(key))
        compiled = _compile_and_save(self.jitted, key, args, kwargs)
        self.loaded[key] = compiled
        return compiled(*dynamic_args, **dynamic_kwargs)

    def _key(self, args: tuple, kwargs: dict) -> tuple[str, list, dict]:
        static, dynamic_args, dynamic_kwargs = [self.name], [], {}
        for i, arg in enumerate(args):
            if i in self.static_argnums:
                static.append(f"{i}={describe(arg)}")
            else:
                dynamic_args.append(arg)
        for name in sorted(kwargs):
            if name in self.static_argnames:
                static.append(f"{name}={describe(kwargs[name])}")
            else:
                dynamic_kwargs[name] = kwargs[name]
        leaves, tree = jax.tree_util.tree_flatten((dynamic_args, dynamic_kwargs))
        if any(isinstance(leaf, jax.Array) and not leaf.is_fully_addressable for leaf in leaves):
            raise _Unstable("an array spread over processes")
        text = "\n".join(
            [*static, str(tree), *map(_aval, leaves), _tracing_choices(), _fingerprint()]
        )
        return hashlib.sha256(text.encode()).hexdigest(), dynamic_args, dynamic_kwargs


def jit(fun: Callable[..., Any], **jit_options: Any) -> Callable[..., Any]:
    """`jax.jit(fun, **jit_options)`, its programs kept on disk while `use` names a directory.

    A function without a stable description (see `describe`) is returned jitted, never kept.
    """
    jitted = jax.jit(fun, **jit_options)
    try:
        name = f"{describe(fun)}|{describe(jit_options)}"
    except (_Unstable, TypeError):  # (TypeError: keys of a dict that do not sort)
        return jitted
    static_argnums = jit_options.get("static_argnums", ())
    static_argnames = jit_options.get("static_argnames", ())
    return Persistent(
        jitted,
        name,
        (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums),
        (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames),
    )


try:  # whether no trace is under way (JAX has no public test; without it, never kept)
    from jax._src.core import trace_state_clean
except ImportError:  # pragma: no cover

    def trace_state_clean() -> bool:
        return False


def _path(key: str) -> str:
    assert _directory is not None
    return os.path.join(_directory, f"{key}.program")


def _load(key: str) -> Any | None:
    """The compiled program saved under `key`, or None (missing, unreadable, from elsewhere)."""
    from jax.experimental import serialize_executable

    try:
        with open(_path(key), "rb") as file:
            serialized, in_tree, out_tree = pickle.load(file)
        compiled = serialize_executable.deserialize_and_load(serialized, in_tree, out_tree)
    except Exception:  # noqa: BLE001 (any damage: compile again and overwrite)
        return None
    with contextlib.suppress(OSError):
        os.utime(_path(key))  # recently used: the last to be removed (`_trim`)
    return compiled


# The directory is kept under this many bytes: past it, the programs used longest ago are removed
# down to three quarters of it. (`report --demo` keeps 18 programs, 1.5 MB.)
MAX_BYTES = 512 * 2**20


def _trim() -> None:
    assert _directory is not None
    entries = []
    with os.scandir(_directory) as scan:
        for entry in scan:
            if entry.name.endswith(".program"):
                with contextlib.suppress(OSError):
                    info = entry.stat()
                    entries.append((info.st_mtime, info.st_size, entry.path))
    total = sum(size for _, size, _ in entries)
    if total <= MAX_BYTES:
        return
    for _, size, path in sorted(entries):
        with contextlib.suppress(OSError):  # (another process may have removed it)
            os.remove(path)
        total -= size
        if total <= MAX_BYTES * 3 // 4:
            return


_jax_cache_hits = threading.local()


def _count_jax_cache_hit(event: str, **kwargs: Any) -> None:
    if event == "/jax/compilation_cache/cache_hits":  # recorded on the compiling thread
        _jax_cache_hits.count = getattr(_jax_cache_hits, "count", 0) + 1


@functools.cache
def _listen_for_jax_cache_hits() -> None:
    jax.monitoring.register_event_listener(_count_jax_cache_hit)


def _compile_and_save(jitted: Callable[..., Any], key: str, args: tuple, kwargs: dict) -> Any:
    """Compile and save, unless the executable came from JAX's own persistent cache: one that
    jaxlib loaded and serialized again lacked some of its kernels on the next load (seen with
    JAX 0.10.2 on the CPU), so only freshly compiled ones are kept. (The command line turns
    JAX's cache off while this one is in use.)"""
    from jax.experimental import serialize_executable

    _listen_for_jax_cache_hits()
    hits = getattr(_jax_cache_hits, "count", 0)
    compiled = jitted.lower(*args, **kwargs).compile()
    if getattr(_jax_cache_hits, "count", 0) != hits:
        return compiled
    temporary = None
    try:
        payload = pickle.dumps(serialize_executable.serialize(compiled))
        os.makedirs(_directory, exist_ok=True)
        # written whole, then renamed: a reader never sees half a file
        handle, temporary = tempfile.mkstemp(dir=_directory, suffix=".partial")
        with os.fdopen(handle, "wb") as file:
            file.write(payload)
        os.replace(temporary, _path(key))
        _trim()
    except Exception:  # noqa: BLE001 (not serializable, a full disk: run without saving)
        if temporary is not None and os.path.exists(temporary):
            os.remove(temporary)
    return compiled
