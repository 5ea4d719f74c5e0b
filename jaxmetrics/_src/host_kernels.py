"""numpy kernels called from compiled CPU programs as XLA FFI custom calls named by a string.

`jax.pure_callback` hands XLA a reference to a Python function that is valid in one process only,
so JAX's persistent compilation cache never keeps a program that holds one: every run of the
command line compiled its sort, running sums and bincount programs again (0.6 s of a warm
`report --demo`). Here each numpy kernel is registered with XLA's FFI under a fixed name
("jaxmetrics_rank", ...), and a program calls it by that name, like any custom call of a compiled
extension. The program then names nothing particular to a process, the cache keeps it, and a
later process that registers the same names runs it.

The handler is a C function pointer made by `ctypes` that reads XLA's FFI call frame (the
stable C ABI of ``xla/ffi/api/c_api.h``: buffers with a data type, a data pointer and
dimensions), views every operand and result as a numpy array without copying, and calls the
kernel, which fills the results. An exception in a kernel becomes an XLA error, raised by the
caller as `JaxRuntimeError`, never a result left unwritten.

Where this cannot be set up (no `ctypes.pythonapi`, or a JAX without `jax.ffi`), `call` falls
back to `jax.pure_callback`: the same numbers, programs that are not cached.
"""

from __future__ import annotations

import atexit
import ctypes
import functools
import time
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np

_PREFIX = "jaxmetrics_"


# every FFI struct starts with its size and a pointer to its extensions
_HEADER = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p)]


class _Extension(ctypes.Structure):
    pass


_Extension._fields_ = [
    ("struct_size", ctypes.c_size_t),
    ("type", ctypes.c_int),
    ("next", ctypes.POINTER(_Extension)),
]
_METADATA_EXTENSION = 1  # XLA_FFI_Extension_Metadata


class _ApiVersion(ctypes.Structure):
    _fields_ = [
        *_HEADER,
        ("major", ctypes.c_int),
        ("minor", ctypes.c_int),
    ]


class _Metadata(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("api_version", _ApiVersion),
        ("traits", ctypes.c_uint32),
    ]


class _MetadataExtension(ctypes.Structure):
    _fields_ = [("base", _Extension), ("metadata", ctypes.POINTER(_Metadata))]


class _Api(ctypes.Structure):  # the leading fields of XLA_FFI_Api
    _fields_ = [
        *_HEADER,
        ("api_version", _ApiVersion),
        ("internal_api", ctypes.c_void_p),
        ("error_create", ctypes.c_void_p),
    ]


class _ErrorCreateArgs(ctypes.Structure):
    _fields_ = [
        *_HEADER,
        ("message", ctypes.c_char_p),
        ("errc", ctypes.c_int),
    ]


_ERROR_CREATE = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.POINTER(_ErrorCreateArgs))
_INTERNAL = 13  # XLA_FFI_Error_Code_INTERNAL


class _Buffer(ctypes.Structure):
    _fields_ = [
        *_HEADER,
        ("dtype", ctypes.c_int),
        ("data", ctypes.c_void_p),
        ("rank", ctypes.c_int64),
        ("dims", ctypes.POINTER(ctypes.c_int64)),
    ]


class _List(ctypes.Structure):  # XLA_FFI_Args and XLA_FFI_Rets share this layout
    _fields_ = [
        *_HEADER,
        ("size", ctypes.c_int64),
        ("types", ctypes.c_void_p),
        ("items", ctypes.POINTER(ctypes.c_void_p)),
    ]


class _CallFrame(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("extension_start", ctypes.POINTER(_Extension)),
        ("api", ctypes.POINTER(_Api)),
        ("ctx", ctypes.c_void_p),
        ("stage", ctypes.c_int),
        ("args", _List),
        ("rets", _List),
    ]


_HANDLER = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.POINTER(_CallFrame))

# XLA_FFI_DataType -> numpy
_DTYPES = {
    1: np.dtype(bool),
    2: np.dtype(np.int8),
    3: np.dtype(np.int16),
    4: np.dtype(np.int32),
    5: np.dtype(np.int64),
    6: np.dtype(np.uint8),
    7: np.dtype(np.uint16),
    8: np.dtype(np.uint32),
    9: np.dtype(np.uint64),
    10: np.dtype(np.float16),
    11: np.dtype(np.float32),
    12: np.dtype(np.float64),
    16: np.dtype(jax.numpy.bfloat16),
}


def _array(address: int, writeable: bool) -> np.ndarray:
    """A numpy view of one XLA FFI buffer (row-major, XLA's default layout on the CPU)."""
    buffer = _Buffer.from_address(address)
    shape = tuple(buffer.dims[i] for i in range(buffer.rank))
    dtype = _DTYPES[buffer.dtype]
    size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if size == 0 or not buffer.data:
        return np.empty(shape, dtype)
    raw = (ctypes.c_char * size).from_address(buffer.data)
    array = np.frombuffer(raw, dtype).reshape(shape)
    array.flags.writeable = writeable
    return array


def _error(frame: _CallFrame, message: str) -> int | None:
    api = frame.api.contents
    create = _ERROR_CREATE(api.error_create)
    args = _ErrorCreateArgs(ctypes.sizeof(_ErrorCreateArgs), None, message.encode(), _INTERNAL)
    return create(ctypes.byref(args))


_KERNELS: dict[str, Callable[[], Callable[..., None]]] = {}
_HANDLERS: dict[str, Any] = {}  # the ctypes function objects must outlive every call
_running = [0, False]  # kernels running now; whether the interpreter is exiting


def _handler(name: str):
    lookup = _KERNELS[name]

    def handle(frame_pointer):
        frame = frame_pointer.contents
        extension = frame.extension_start
        if extension and extension.contents.type == _METADATA_EXTENSION:
            # XLA asks which FFI version the handler speaks: the runtime's own (the fields read
            # here are the ABI's oldest), no traits
            metadata = ctypes.cast(extension, ctypes.POINTER(_MetadataExtension)).contents
            version = frame.api.contents.api_version if frame.api else None
            metadata.metadata.contents.api_version.major = version.major if version else 0
            metadata.metadata.contents.api_version.minor = version.minor if version else 1
            metadata.metadata.contents.traits = 0
            return None
        if _running[1]:
            return _error(frame, f"jaxmetrics host kernel {name!r}: the interpreter is exiting")
        _running[0] += 1
        try:
            inputs = [_array(frame.args.items[i], False) for i in range(frame.args.size)]
            outputs = [_array(frame.rets.items[i], True) for i in range(frame.rets.size)]
            lookup()(*inputs, out=outputs)
        except BaseException as error:  # noqa: BLE001 (KeyboardInterrupt too: never unwritten)
            message = f"jaxmetrics host kernel {name!r}: {type(error).__name__}: {error}"
            return _error(frame, message)
        finally:
            _running[0] -= 1
        return None

    return _HANDLER(handle)


def _drain() -> None:
    """Let programs still running finish before the interpreter exits (registered with atexit).

    A kernel runs on one of XLA's threads and needs the GIL. While Python finalizes, the main
    thread holds the GIL and destroys JAX's CPU client, which waits for those threads: a
    program still running then (dispatched asynchronously, say, and left behind by Ctrl-C)
    would wait forever. So kernels called from now on fail at once, and the main thread waits,
    without the GIL, for every live array, then until no kernel has run for a moment.
    """
    _running[1] = True
    if not _backends_initialized():  # nothing ever ran (and asking would start a backend)
        return
    for array in jax.live_arrays():
        try:
            array.block_until_ready()
        except Exception:  # noqa: BLE001 (a program failed: it has ended, which is all we need)
            pass
    quiet_since, deadline = time.monotonic(), time.monotonic() + 10.0
    while time.monotonic() < deadline:
        if _running[0]:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since > 0.1:
            return
        time.sleep(0.01)


def _backends_initialized() -> bool:
    try:
        from jax._src.xla_bridge import backends_are_initialized
    except ImportError:  # pragma: no cover (a JAX that moved it: drain anyway)
        return True
    return backends_are_initialized()


@functools.cache
def _capsule_new():
    new = ctypes.pythonapi.PyCapsule_New
    new.restype = ctypes.py_object
    new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    return new


def register(name: str, lookup: Callable[[], Callable[..., None]]) -> None:
    """Register the kernel ``lookup()`` as the CPU target ``jaxmetrics_<name>``.

    The kernel is called as ``kernel(*operands, out=results)`` with read-only numpy views of the
    operands and writable views of the results, which it must fill. `lookup` is called on every
    call, so a kernel replaced in its module (a test's monkeypatch) is the one that runs.
    """
    _KERNELS[name] = lookup
    if not _ffi_available():
        return
    handler = _handler(name)
    capsule = _capsule_new()(ctypes.cast(handler, ctypes.c_void_p), None, None)
    jax.ffi.register_ffi_target(_PREFIX + name, capsule, platform="cpu")
    if not _HANDLERS:
        atexit.register(_drain)  # after JAX's own exit handler: so it runs before it
    _HANDLERS[name] = handler


@functools.cache
def _ffi_available() -> bool:
    try:
        _capsule_new()
        return callable(jax.ffi.register_ffi_target) and callable(jax.ffi.ffi_call)
    except (AttributeError, TypeError):  # pragma: no cover (PyPy; a JAX without jax.ffi)
        return False


def call(name: str, results: Sequence[jax.ShapeDtypeStruct], *operands: Any) -> tuple[Any, ...]:
    """Call the registered kernel `name` from a traced CPU program; batched along new leading
    axes under `vmap` (the kernels work on the last axis)."""
    results = tuple(results)
    if name in _HANDLERS:
        return tuple(
            jax.ffi.ffi_call(_PREFIX + name, results, vmap_method="expand_dims")(*operands)
        )
    kernel = _KERNELS[name]
    ranks = [np.ndim(operand) for operand in operands]

    def on_host(*arrays):
        arrays = [np.asarray(a) for a in arrays]
        # under vmap the operands arrive with leading batch axes (size 1 where not batched)
        batch = np.broadcast_shapes(*(a.shape[: a.ndim - r] for a, r in zip(arrays, ranks)))
        out = [np.empty(batch + tuple(r.shape), r.dtype) for r in results]
        kernel()(*arrays, out=out)
        return tuple(out)

    return tuple(jax.pure_callback(on_host, results, *operands, vmap_method="expand_dims"))
