"""TensorHub for Python: publish NumPy/torch weights by reference, pull them anywhere.

Reference-Oriented Storage: :meth:`Hub.publish` registers references to your arrays (nothing is
copied); :meth:`Hub.pull` reads a version straight from whichever processes hold it, chunk by
chunk, verified by per-chunk checksums (XXH3-64).

Trainer and rollout ranks of one MPI job::

    from mpi4py import MPI
    import numpy as np, tensorhub

    with tensorhub.Hub(MPI.COMM_WORLD) as hub:
        if MPI.COMM_WORLD.rank == 0:
            w = np.arange(1 << 20, dtype=np.float32)
            hub.publish("policy", 1, {"w": w})
        MPI.COMM_WORLD.barrier()
        if MPI.COMM_WORLD.rank == 1:
            r = hub.pull("policy", "latest")
            assert r.version == 1 and r.tensors["w"][7] == 7
        MPI.COMM_WORLD.barrier()

A plain process (not an MPI rank) joins a running ``tensorhub serve`` with
``tensorhub.Hub(address="host:7070")`` (or ``TENSORHUB_HUB``) over the ucx transport.
Asynchronous pulls (prefetch into spare arrays): :meth:`Hub.pull_async` -> :class:`PullHandle`.
Errors are :class:`Error` subclasses mirroring the C++ ones (tensorhub/core/error.hpp).
"""

from ._tensorhub import (
    Cancelled,
    ChecksumError,
    ContractViolation,
    Error,
    HubClosed,
    NotFoundError,
    OffloadRequired,
    TimeoutError,
    TransportError,
    UnknownWorker,
    UserError,
)
from ._arrays import NUMPY_DTYPES, Slice, Tensor
from ._hub import Group, Hub, Manifest, PublishHandle, PublishResult, PullHandle, PullResult, TensorInfo, parse_bytes

__version__ = "0.1.0"

for _cls in (Cancelled, ChecksumError, ContractViolation, Error, HubClosed, NotFoundError, OffloadRequired, TimeoutError,
             TransportError, UnknownWorker, UserError):
    _cls.__module__ = "tensorhub"  # tracebacks name tensorhub.NotFoundError, not the extension
del _cls

__all__ = [
    "Cancelled",
    "ChecksumError",
    "ContractViolation",
    "Error",
    "Group",
    "Hub",
    "HubClosed",
    "Manifest",
    "NUMPY_DTYPES",
    "NotFoundError",
    "OffloadRequired",
    "PublishHandle",
    "PublishResult",
    "PullHandle",
    "PullResult",
    "Slice",
    "Tensor",
    "TensorInfo",
    "TimeoutError",
    "TransportError",
    "UnknownWorker",
    "UserError",
    "parse_bytes",
]
