"""The report's programs kept between runs with `jax.export`, so that a second run of the same
shapes neither traces nor lowers them again (JAX's persistent cache then finds them compiled).

A program is kept as one file in the command line's private cache directory (made 0700 and
checked to be the user's by `cli`): a first line naming the format, a JSON header, then the
serialized `jax.export.Exported`. The header holds what the program depends on: the versions of
jax, jaxlib and jaxmetrics, a digest of jaxmetrics' own source files (an edited library is a new
library, whatever its version says), the backend, x64, and the shapes and dtypes of the inputs;
and a SHA-256 of the program. A file that is damaged, from another version or for other inputs is
ignored and replaced, never deserialized on trust; a directory that cannot be written only costs
the time saved. Serializing needs the `flatbuffers` package: without it, nothing is kept.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jaxlib

import jaxmetrics

_FORMAT = b"jaxmetrics exported program 1\n"
# XLA without LLVM's optimisation and with its older fusion emitters: the order numbers' program
# compiles in 1.0 s instead of 3.1-3.9 s and runs in 15 ms instead of 6 ms (4,000 rows)
FAST_COMPILE = {"xla_backend_optimization_level": 0, "xla_cpu_use_fusion_emitters": False}


def available() -> bool:
    """Whether programs can be serialized here (`jax.export` needs `flatbuffers` for that)."""
    try:
        import flatbuffers  # noqa: F401
    except ImportError:
        return False
    return True


@functools.cache
def _sources_digest() -> str:
    """SHA-256 of every Python source file of the jaxmetrics package (its code, this app's too)."""
    root = Path(jaxmetrics.__file__).parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _version() -> dict[str, Any]:
    """What a kept program depends on besides its inputs."""
    return {
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "jaxmetrics": jaxmetrics.__version__,
        "sources": _sources_digest(),
        "backend": jax.default_backend(),
        "x64": bool(jax.config.jax_enable_x64),
    }


def _inputs(args: tuple[Any, ...]) -> list[list[Any]]:
    return [[list(arg.shape), str(arg.dtype)] for arg in args]


class ProgramStore:
    """Exported programs by name and input shapes, kept in `directory` (a private one).

    `on_miss` is called whenever a program has to be traced and exported in this run (it was
    not in memory nor in a good file): the caller learns that the run is a first one.
    """

    def __init__(self, directory: Path, on_miss: Callable[[], object] | None = None):
        self.directory = directory
        self.on_miss = on_miss
        self._programs: dict[str, jax.export.Exported | None] = {}  # by header

    def path(self, name: str, args: tuple[Any, ...]) -> Path:
        """The file of program `name` for inputs like `args` (one file, whatever the version)."""
        inputs = json.dumps(_inputs(args)).encode()
        return self.directory / f"{name}-{hashlib.sha256(inputs).hexdigest()[:24]}.program"

    def call(self, name: str, function: Callable[..., Any], *args: Any, once: bool = False) -> Any:
        """``function(*args)`` (arrays or tracers), through its kept program where it has one.

        A program that runs `once` per report (not a loop of many evaluations) is compiled on
        the CPU for a fast compile, as the library compiles its small eager programs."""
        exported = self.program(name, function, *args)
        if exported is None:
            return function(*args)
        if once and jax.default_backend() == "cpu":
            try:
                return jax.jit(exported.call, compiler_options=FAST_COMPILE)(*args)
            except jax.errors.JaxRuntimeError:  # a jaxlib without these options
                pass
        return exported.call(*args)

    def program(
        self, name: str, function: Callable[..., Any], *args: Any
    ) -> jax.export.Exported | None:
        """The exported `function` for inputs of the shapes and dtypes of `args`: one this store
        already holds, read from its file, or else exported now and written; None where it
        cannot be exported (a program that calls Python back)."""
        header = {"name": name, "version": _version(), "inputs": _inputs(args)}
        known = json.dumps(header, sort_keys=True)
        if known not in self._programs:
            self._programs[known] = self._read_or_export(header, function, args)
        return self._programs[known]

    def _read_or_export(self, header, function, args) -> jax.export.Exported | None:
        path = self.path(header["name"], args)
        exported = read(path, header)
        if exported is not None:
            return exported
        if self.on_miss is not None:
            self.on_miss()
        specs = [jax.ShapeDtypeStruct(arg.shape, arg.dtype) for arg in args]
        try:
            exported = jax.export.export(jax.jit(function))(*specs)
            payload = exported.serialize()
        except Exception:  # noqa: BLE001 (not exportable: it runs as traced, unkept)
            return None
        write(path, header, payload)
        return exported


def read(path: Path, header: dict[str, Any]) -> jax.export.Exported | None:
    """The program in `path` if the file is whole, ours, and made for `header`; else None."""
    try:
        if path.stat().st_uid != os.getuid():
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if not data.startswith(_FORMAT):
        return None
    line, _, payload = data[len(_FORMAT) :].partition(b"\n")
    try:
        kept = json.loads(line)
    except ValueError:
        return None
    if not isinstance(kept, dict) or {k: kept.get(k) for k in header} != header:
        return None
    if kept.get("sha256") != hashlib.sha256(payload).hexdigest():
        return None
    try:
        exported = jax.export.deserialize(bytearray(payload))
    except Exception:  # noqa: BLE001 (a file that passed its checksum but does not load: rebuilt)
        return None
    expected = [(tuple(shape), dtype) for shape, dtype in header["inputs"]]
    if [(tuple(a.shape), str(a.dtype)) for a in exported.in_avals] != expected:
        return None
    return exported


def write(path: Path, header: dict[str, Any], payload: bytes) -> None:
    """Write the program whole (under a temporary name, then renamed), or not at all."""
    kept = dict(header, sha256=hashlib.sha256(payload).hexdigest())
    text = _FORMAT + json.dumps(kept, sort_keys=True).encode() + b"\n" + payload
    try:
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
    except OSError:
        return  # a cache that cannot be written costs the time it would save, nothing else
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(text)
        os.replace(temporary, path)
    except OSError:
        Path(temporary).unlink(missing_ok=True)


def named(name: str, constants: Any = None) -> str:
    """The name of a kept program that depends on `constants` (JSON: numbers, strings, lists,
    dicts) beyond its code and its inputs' shapes: the name with a digest of them."""
    if constants is None:
        return name
    digest = hashlib.sha256(json.dumps(constants, sort_keys=True).encode()).hexdigest()
    return f"{name}-{digest[:16]}"


def kept_metric(
    store: ProgramStore, name: str, function: Callable[..., Any], constants: Any = None
):
    """`function(*arrays, weights)` as a metric for `jm.bootstrap` and `jm.by_group_bootstrap`
    (marked `jaxmetrics.estimate_in_loop`: its caller checked the inputs) whose batched forms are
    programs `store` keeps, so that a second run traces none of them.

    A kept program is found by its name and its inputs' shapes and dtypes: every value that
    `function` closes over and that changes its program (thresholds, which rows) must be in
    `constants` (JSON: numbers, strings, lists), which the name carries as a digest. Values of
    the source code are covered by the store's digest of jaxmetrics' sources.

    Those functions evaluate their metric under `jax.vmap` of the weights inside a compiled
    loop (by_group: a vmap of the group masks inside the vmap of the resamples). With
    `custom_vmap`, each level of that batching is a call of a kept program: `function` batched
    over the weights once, twice, ... (`_kept`); an eager call (an estimate) is the plain
    program's."""

    name = named(name, constants)

    @jaxmetrics.estimate_in_loop
    def metric(*arrays: Any, sample_weight: Any) -> Any:
        if sample_weight is None:  # (by_group's value over all rows)
            unweighted = functools.partial(_unweighted, function)
            return store.call(f"{name}-unweighted", unweighted, *arrays)
        return _kept(store, name, function, 0)(*arrays, sample_weight)

    return metric


def _unweighted(function: Callable[..., Any], *arrays: Any) -> Any:
    return function(*arrays, None)


def _kept(store: ProgramStore, name: str, function: Callable[..., Any], depth: int):
    """`function` as the kept program ``{name}-{depth}``; batched over its last argument alone
    (the weights), the kept program of `function` vmapped over it, one level deeper."""

    @jax.custom_batching.custom_vmap
    def kept(*args: Any) -> Any:
        return store.call(f"{name}-{depth}", function, *args)

    @kept.def_vmap
    def batched(axis_size: int, in_batched: Any, *args: Any) -> tuple[Any, bool]:
        axes = tuple(0 if mapped else None for mapped in in_batched)
        vmapped = jax.vmap(function, in_axes=axes)
        if not any(in_batched[:-1]) and in_batched[-1]:
            return _kept(store, name, vmapped, depth + 1)(*args), True
        return vmapped(*args), True  # another batching: traced, not kept

    return kept
