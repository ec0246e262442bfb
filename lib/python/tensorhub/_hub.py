"""tensorhub.Hub: the Python face of tensorhub::Hub (tensorhub/hub.hpp)."""

from __future__ import annotations

import atexit
import dataclasses
import os
import re
import threading
import weakref
from typing import Any, Callable, Mapping, Union

import numpy as np

from . import _arrays, _tensorhub
from ._async import PublishHandle, PublishResult, PullHandle, _seconds

VersionArg = Union[int, str]

_UNITS = {"": 1, "b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
          "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12}


def parse_bytes(value: int | str | None, what: str) -> int:
    """``1048576``, ``"1MiB"``, ``"4 GiB"`` -> bytes; None -> 0 (the C++ default)."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise _tensorhub.UserError(f"{what}: expected bytes as int or str like '256MiB', got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise _tensorhub.UserError(f"{what}: {value} is negative")
        return value
    m = re.fullmatch(r"\s*(\d+)\s*([A-Za-z]*)\s*", value)
    if not m or m.group(2).lower() not in _UNITS:
        raise _tensorhub.UserError(f"{what}: cannot read '{value}' as bytes (e.g. 4096, 64MiB, 2GiB)")
    return int(m.group(1)) * _UNITS[m.group(2).lower()]


@dataclasses.dataclass(frozen=True)
class Group:
    """A model-parallel group a publish or pull is made for (every rank makes the same calls).

    ``Group("trainer", comm)`` takes size and rank from an mpi4py communicator;
    ``Group("rollout", size=2, rank=r)`` states them (plain processes).
    """

    name: str
    size: int = 1
    rank: int = 0

    def __init__(self, name: str, comm: Any = None, *, size: int | None = None, rank: int | None = None):
        if comm is not None:
            size, rank = comm.Get_size(), comm.Get_rank()
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "size", 1 if size is None else int(size))
        object.__setattr__(self, "rank", 0 if rank is None else int(rank))

    def as_tuple(self) -> tuple[str, int, int]:
        return (self.name, self.size, self.rank)


@dataclasses.dataclass
class PullResult:
    """What a pull read: the version, bytes by source, and the filled arrays by name."""

    version: int
    bytes: int
    seconds: float
    origin_bytes: int
    relay_bytes: int
    failed_reads: int
    file_bytes: int
    local_bytes: int
    staged_bytes: int  # box destinations: read into a staging slot, verified, copied out
    scattered_bytes: int  # box destinations: read straight into strided rows of the destination
    digested_bytes: int  # checked by the digest the data path computed while copying (cma)
    tensors: dict[str, Any]

    @property
    def gib_per_s(self) -> float:
        return self.bytes / (1 << 30) / self.seconds if self.seconds > 0 else 0.0


@dataclasses.dataclass(frozen=True)
class TensorInfo:
    name: str
    dtype: str  # the C++ name: f32 f16 bf16 f64 i8 u8 i16 i32 i64 bool
    shape: tuple[int, ...]
    bytes: int
    shard: int
    num_chunks: int
    global_name: str = ""  # a box of a global tensor (tensorhub.Slice); "" for a plain tensor
    global_shape: tuple[int, ...] = ()
    box_offset: tuple[int, ...] = ()

    @property
    def numpy_dtype(self) -> np.dtype:
        """The NumPy dtype pulls allocate (uint16 words for bf16)."""
        return np.dtype(_arrays.NUMPY_DTYPES[self.dtype])


@dataclasses.dataclass(frozen=True)
class Manifest:
    model: str
    version: int
    chunk_bytes: int
    num_shards: int
    total_bytes: int
    tensors: tuple[TensorInfo, ...]

    def __getitem__(self, name: str) -> TensorInfo:
        for t in self.tensors:
            if t.name == name:
                return t
        raise KeyError(name)


def _version(v: VersionArg) -> int | None:
    if v == "latest":
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise _tensorhub.UserError(f"version must be 'latest' or an int >= 0, got {v!r}")
    return v


def _group(g: Group | None) -> tuple[str, int, int] | None:
    if g is None:
        return None
    if not isinstance(g, Group):
        raise _tensorhub.UserError(f"group must be a tensorhub.Group, got {type(g).__name__}")
    return g.as_tuple()


def _boxes(vs: list[Any]) -> list[Any]:
    """The boxes of Slice tensors for the C++ side (empty when there are none)."""
    return [x.box for x in vs] if any(x.box is not None for x in vs) else []


def default_transport(comm: Any, address: str, pool: int | str | None) -> str:
    """``mpi_rma`` with a pool (registered memory from :meth:`Hub.allocate`); else ``ucx`` (any
    memory) for MPI ranks and for plain processes joining a coordinator; ``local`` for a process
    alone. Without UCX in the build, ``mpi_rma`` for ranks (any memory through its dynamic
    window, unreliable with several publishers on Open MPI 4.1: README "Window kinds")."""
    if comm is None and not address:
        return "local"
    if pool or (comm is not None and not _tensorhub.HAVE_UCX):
        return "mpi_rma"
    return "ucx"


class _ClosedImpl:
    """Stands in for the C++ hub once the process is exiting (its MPI is being finalised)."""

    def close(self) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        raise _tensorhub.HubClosed(f"{name}: the hub was closed at interpreter exit")


class _MpiState:
    """MPI for plain processes: initialised once (Open MPI singleton). At exit (before mpi4py's own
    MPI_Finalize) every hub still alive is closed and its C++ object destroyed, then MPI is
    finalised if it was initialised here."""

    lock = threading.Lock()
    initialised_here = False
    registered = False
    hubs: "weakref.WeakSet[Hub]" = weakref.WeakSet()

    @classmethod
    def track(cls, hub: "Hub", plain: bool) -> None:
        with cls.lock:
            if plain and _tensorhub.ensure_mpi():
                cls.initialised_here = True
            if not cls.registered:
                cls.registered = True
                atexit.register(cls.at_exit)

    @classmethod
    def at_exit(cls) -> None:
        for hub in list(cls.hubs):
            hub._destroy()
        if cls.initialised_here:
            _tensorhub.finalize_mpi()


class Hub:
    """A TensorHub hub: publish references to arrays, pull versions into arrays.

    Three ways to join::

        hub = tensorhub.Hub(MPI.COMM_WORLD)                # MPI ranks (collective)
        hub = tensorhub.Hub(address="node0:7070")          # plain process, `tensorhub serve`
        hub = tensorhub.Hub()                              # one process on its own

    ``address`` defaults to ``TENSORHUB_HUB``; ``transport`` to ``TENSORHUB_TRANSPORT``, else
    :func:`default_transport`: ``ucx`` (any NumPy/torch memory) for MPI ranks and for plain
    processes, ``mpi_rma`` when ``pool`` (bytes, ``"2GiB"``) is given (publish and pull into
    arrays from :meth:`allocate`), ``local`` for a process alone. ``chunk`` is the chunk size of
    what this hub publishes.

    Use it as a context manager (or call :meth:`close`, collective over ``comm``)::

        with tensorhub.Hub(address=addr) as hub:
            hub.publish("policy", 1, {"w": w})
            r = hub.pull("policy")              # NumPy arrays in r.tensors
    """

    def __init__(self, comm: Any = None, address: str | None = None, transport: str | None = None,
                 pool: int | str | None = None, chunk: int | str | None = None, *,
                 max_readers: int | None = None, inflight: int | None = None,
                 rpc_deadline: float | None = None, pull_deadline: float | None = None,
                 snapshot_dir: str | None = None) -> None:
        self._published: dict[tuple[str, int], list[Any]] = {}
        self._relaying: dict[int, _arrays.View] = {}  # address -> memory a pull filled (relayed)
        self._allocated: dict[str, list[int]] = {}  # model -> addresses of into=None arrays
        self._impl: Any = None
        address = address or os.environ.get("TENSORHUB_HUB", "")
        if transport is None:
            transport = os.environ.get("TENSORHUB_TRANSPORT") or default_transport(comm, address, pool)
        handle = None
        if comm is not None:
            from mpi4py import MPI  # only when a communicator is given

            if not isinstance(comm, MPI.Comm):
                raise _tensorhub.UserError(f"comm must be an mpi4py communicator, got {type(comm).__name__}")
            handle = MPI._handleof(comm)
        _MpiState.track(self, plain=comm is None)
        self._impl = _tensorhub.Hub(
            handle, address, transport, parse_bytes(pool, "pool"), parse_bytes(chunk, "chunk"),
            max_readers or 0, inflight or 0, float(rpc_deadline or 0), float(pull_deadline or 0),
            snapshot_dir or "")
        self.transport = transport
        _MpiState.hubs.add(self)

    # ---- lifecycle -------------------------------------------------------------------------
    def close(self) -> None:
        """Withdraws every reference (waiting for their readers) and leaves; collective over the
        joining communicator. Published and relayed arrays are released afterwards. A second
        close() does nothing; any other call after it raises HubClosed."""
        if self._impl is None or isinstance(self._impl, _ClosedImpl):
            return
        try:
            self._impl.close()
        finally:
            self._published.clear()
            self._relaying.clear()
            self._allocated.clear()

    def _destroy(self) -> None:
        """close() if open, then drop the C++ object (its communicator) while MPI still runs."""
        try:
            self.close()
        except Exception:  # noqa: BLE001 - the process is exiting; nothing to report to
            pass
        self._impl = _ClosedImpl()

    def __enter__(self) -> "Hub":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def rank(self) -> int:
        return self._impl.rank

    @property
    def runs_coordinator(self) -> bool:
        return self._impl.runs_coordinator

    @property
    def address(self) -> str:
        """The coordinator's address (give it to plain processes as ``address=``)."""
        return self._impl.address

    # ---- publishing ------------------------------------------------------------------------
    def publish(self, model: str, version: int, tensors: Mapping[str, Any],
                group: Group | None = None) -> PublishResult:
        """Registers references to ``tensors`` (name -> array) as this rank's shard of
        ``version``. Copies nothing: the arrays must not change until :meth:`unpublish`
        returns, and the hub keeps them alive until then. Returns once the coordinator has the
        shard (the per-chunk checksums are computed in place on worker threads).

        Example: ``hub.publish("policy", step, {"w1": w1, "b1": b1})``
        """
        v, vs = self._publish_args(version, tensors)
        r = self._impl.publish(model, v, [x.as_tuple() for x in vs], _group(group), _boxes(vs))
        self._published.setdefault((model, v), []).extend(x.owner for x in vs)
        return PublishResult(**r)

    def publish_async(self, model: str, version: int, tensors: Mapping[str, Any],
                      group: Group | None = None) -> PublishHandle:
        """:meth:`publish` that returns as soon as the shard is validated and exposed (no byte of
        the arrays is read on this thread: the trainer's stall is O(metadata)); the checksums and
        the coordinator call run on a hub worker thread, and the version becomes visible when
        they are done (:meth:`PublishHandle.result`). The arrays are published from the call on:
        unchanged until :meth:`unpublish` returns; ``unpublish`` of a version still hashing
        cancels its publish. Dropping the handle does not stop the publish (a failure is then only
        logged, and the arrays stay referenced until :meth:`close`; ``result()`` releases them). Over ``mpi_rma`` MPI must provide MPI_THREAD_MULTIPLE.

        Example::

            h = hub.publish_async("policy", step, weights)   # returns in well under a millisecond
            optimizer.step_on_other_buffers()
            h.result()                                       # raises the publish's error, if any
        """
        v, vs = self._publish_args(version, tensors)
        impl = self._impl.publish_async(model, v, [x.as_tuple() for x in vs], _group(group), _boxes(vs))
        self._published.setdefault((model, v), []).extend(x.owner for x in vs)
        return PublishHandle(impl, lambda: self._published.pop((model, v), None))

    def _publish_args(self, version: int, tensors: Mapping[str, Any]) -> tuple[int, list[Any]]:
        v = _version(version)
        if v is None:
            raise _tensorhub.UserError("publish needs an int version")
        return v, _arrays.views(tensors, writable=False)

    def unpublish(self, model: str, version: int, timeout: float | None = None) -> None:
        """Withdraws this rank's reference; returns once no read of it is in flight, then
        releases the arrays (they may be written again). With ``timeout`` (seconds): TimeoutError
        if reads are still in flight then; the reference is withdrawn (no new reads) but the
        arrays are still read and stay referenced: call unpublish again to wait for the rest."""
        try:
            self._impl.unpublish(model, version, _seconds(timeout, "timeout"))
        except _tensorhub.NotFoundError:
            self._published.pop((model, version), None)  # not referenced by the hub (e.g. a failed publish_async)
            raise
        self._published.pop((model, version), None)

    def retain(self, model: str, version: int) -> None:
        self._impl.retain(model, version)

    def release(self, model: str, version: int) -> None:
        self._impl.release(model, version)

    def attach_snapshot(self, path: str) -> None:
        self._impl.attach_snapshot(os.fspath(path))

    # ---- reading ---------------------------------------------------------------------------
    def pull(self, model: str, version: VersionArg = "latest", into: Mapping[str, Any] | None = None,
             group: Group | None = None, verify: bool = True, relay: bool = True,
             progress: Callable[[int, int], Any] | None = None, deadline: float | None = None) -> PullResult:
        """Reads a version. With ``into`` (name -> array, C-contiguous, writable, dtype and shape
        as in the manifest) fills those arrays in place (a subset of the tensors is fine);
        without, allocates NumPy arrays for every tensor (bf16 as uint16 words).
        ``progress(done, total)`` is called as bytes arrive. ``deadline`` (seconds) bounds the
        transfer (TimeoutError; None: the hub's ``pull_deadline``).

        With ``relay`` the filled memory serves later readers until the next pull into it,
        :meth:`stop_relaying` or :meth:`close` (the hub keeps it alive until then); arrays
        allocated here stop relaying at the next ``into=None`` pull of the model.

        Example: ``r = hub.pull("policy", into=params); print(r.version, r.seconds)``
        """
        v = _version(version)
        if into is None:
            old = self._allocated.pop(model, [])
            if old:
                self._stop_addresses(old)
            m = self.manifest(model, version)
            into = {t.name: _arrays.empty(t.dtype, list(t.shape)) for t in m.tensors}
            raw = {t.name for t in m.tensors if t.dtype in _arrays.RAW_DTYPES}
            vs = [_arrays.view(n, _arrays.Tensor(a, m[n].dtype) if n in raw else a, writable=True)
                  for n, a in into.items()]
            if relay:
                self._allocated[model] = [x.address for x in vs]
        else:
            vs = _arrays.views(into, writable=True)
        r = self._impl.pull(model, v, [x.as_tuple() for x in vs], _group(group), bool(verify), bool(relay),
                            progress, _seconds(deadline, "deadline"), _boxes(vs))
        if relay:
            for x in vs:
                self._relaying[x.address] = x
        return PullResult(tensors=dict(into), **r)

    def pull_async(self, model: str, version: VersionArg = "latest", into: Mapping[str, Any] | None = None,
                   group: Group | None = None, verify: bool = True, relay: bool = True,
                   progress: Callable[[int, int], Any] | None = None,
                   deadline: float | None = None) -> PullHandle:
        """:meth:`pull`, started on a hub worker thread: returns a :class:`PullHandle` at once
        (errors of the call itself, such as a wrong shape, are raised here). Several pulls may be
        in flight (other models, or one model into other arrays: arrays overlapping a pull in
        flight are a UserError), and every other call may be made meanwhile. The arrays belong to
        the pull until the handle is ready or ``cancel()`` returns. ``into`` is required:
        prefetching needs buffers you own (allocate them once, e.g. from :meth:`manifest`).

        ``progress(done, total)`` runs on the hub worker thread, holding the GIL: keep it short and
        never call this Hub from it (it may run while the hub's API mutex is held: deadlock).
        Over ``mpi_rma`` MPI must provide MPI_THREAD_MULTIPLE.

        Prefetch and swap::

            nxt = hub.pull_async("policy", "latest", into=spare)
            generate(cur)                              # the pull runs meanwhile
            if nxt.ready():
                held = nxt.result().version            # raises the pull's error
                cur, spare = spare, cur                # cur keeps relaying until pulled into again
        """
        if into is None:
            raise _tensorhub.UserError(
                "pull_async needs into= (name -> array): allocate the buffer sets once (e.g. from "
                "hub.manifest(model)) and reuse them; use pull(into=None) for fresh arrays")
        v = _version(version)
        vs = _arrays.views(into, writable=True)
        impl = self._impl.pull_async(model, v, [x.as_tuple() for x in vs], _group(group), bool(verify),
                                     bool(relay), progress, _seconds(deadline, "deadline"), _boxes(vs))
        if relay:
            # A finished pull relays from these arrays: the hub keeps them alive until the relay
            # ends (next pull into them, stop_relaying, close), whether or not the handle is kept.
            for x in vs:
                self._relaying[x.address] = x
        return PullHandle(impl, into)

    def stop_relaying(self, tensors: Mapping[str, Any]) -> None:
        """Stops relaying from these arrays (waiting for reads in flight) and releases them."""
        vs = _arrays.views(tensors, writable=False)
        self._impl.stop_relaying([x.as_tuple() for x in vs])
        for x in vs:
            self._relaying.pop(x.address, None)

    def _stop_addresses(self, addresses: list[int]) -> None:
        vs = [self._relaying[a] for a in addresses if a in self._relaying]
        if vs:
            self._impl.stop_relaying([x.as_tuple() for x in vs])
        for a in addresses:
            self._relaying.pop(a, None)

    def latest(self, model: str) -> int | None:
        """The newest readable version, or None."""
        return self._impl.latest(model)

    def wait_for(self, model: str, newer_than: int | None = None, timeout: float | None = None) -> int | None:
        """Waits until a version newer than ``newer_than`` (any, if None) is readable and returns
        it; None when ``timeout`` seconds pass first (None: wait forever). Ctrl-C interrupts it
        (KeyboardInterrupt) within a fraction of a second."""
        import time

        end = None if timeout is None else time.monotonic() + max(0.0, timeout)
        while True:
            slice_s = 0.25 if end is None else max(0.0, min(0.25, end - time.monotonic()))
            got = self._impl.wait_for(model, newer_than, slice_s)
            if got is not None:
                return got
            if end is not None and time.monotonic() >= end:
                return None

    def manifest(self, model: str, version: VersionArg = "latest") -> Manifest:
        """Names, C++ dtype names, shapes and sizes of a readable version."""
        d = self._impl.manifest(model, _version(version))
        tensors = tuple(TensorInfo(t["name"], t["dtype"], tuple(t["shape"]), t["bytes"], t["shard"], t["num_chunks"],
                                   t["global_name"], tuple(t["global_shape"]), tuple(t["box_offset"]))
                        for t in d.pop("tensors"))
        return Manifest(tensors=tensors, **d)

    def status(self) -> list[dict[str, Any]]:
        """Every model's versions and holders (dicts mirroring ModelInfo/VersionInfo/HolderInfo)."""
        return self._impl.status()

    # ---- registered memory -----------------------------------------------------------------
    def allocate(self, shape: int | tuple[int, ...] | list[int], dtype: str = "f32") -> np.ndarray:
        """A NumPy array in this hub's registered pool (``pool=``; needed by mpi_rma with a pool).
        Valid until :meth:`deallocate` or :meth:`close`: do not use it after close()."""
        import ctypes

        name = _tensorhub.dtype_name(dtype)
        shape_t = (shape,) if isinstance(shape, int) else tuple(shape)
        n = int(np.prod(shape_t, dtype=np.int64)) * _tensorhub.dtype_size(name)
        p = self._impl.allocate(n)
        buf = (ctypes.c_char * n).from_address(p)
        return np.frombuffer(buf, dtype=_arrays.NUMPY_DTYPES[name]).reshape(shape_t)

    def deallocate(self, array: np.ndarray) -> None:
        address = array.__array_interface__["data"][0]
        self._impl.deallocate(address)
        self._relaying.pop(address, None)
