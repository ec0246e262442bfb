"""tensorhub.PullHandle and tensorhub.PublishHandle: an asynchronous pull (Hub.pull_async;
tensorhub::PullHandle in C++) and an asynchronous publish (Hub.publish_async)."""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable, Mapping

from . import _tensorhub


def _seconds(value: float | None, what: str) -> float | None:
    """A timeout/deadline in seconds (None: the default); negative or non-numbers are a UserError."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise _tensorhub.UserError(f"{what}: expected seconds >= 0 (int or float) or None, got {value!r}")
    return float(value)


def _wait_slices(wait: Callable[[float], bool], timeout: float | None) -> bool:
    """Calls ``wait(slice_s)`` (GIL released in C++) in 0.25 s slices until it returns True or
    ``timeout`` seconds pass (None: forever); between slices Python handles signals, so Ctrl-C
    raises KeyboardInterrupt within a fraction of a second."""
    end = None if timeout is None else time.monotonic() + max(0.0, timeout)
    while True:
        slice_s = 0.25 if end is None else max(0.0, min(0.25, end - time.monotonic()))
        if wait(slice_s):
            return True
        if end is not None and time.monotonic() >= end:
            return False


class PullHandle:
    """An asynchronous pull (:meth:`Hub.pull_async`), driven by a hub worker thread.

    ``ready()`` never blocks; ``wait(timeout)`` and ``result(timeout)`` block with the GIL
    released and Ctrl-C interrupts them (KeyboardInterrupt; the pull keeps running: cancel it);
    ``progress`` is ``(done, total)`` bytes (total 0 until the version is resolved);
    ``cancel()`` returns once no transfer of the pull can still write the arrays and it holds no
    pin (they may be reused at once; a pull that already ended keeps its result). The handle keeps
    the destination arrays alive. Leaving a ``with`` block, or dropping the last reference to a
    handle whose pull still runs, cancels it.
    """

    def __init__(self, impl: Any, into: Mapping[str, Any]) -> None:
        self._impl = impl
        self._into = dict(into)  # the destination arrays stay referenced while the pull may write them
        self._result: Any = None

    def ready(self) -> bool:
        """True once the pull ended: done, failed or cancelled."""
        return self._impl.ready()

    def wait(self, timeout: float | None = None) -> bool:
        """Waits up to ``timeout`` seconds (None: until it ends); returns :meth:`ready`."""
        return _wait_slices(self._impl.wait, _seconds(timeout, "timeout"))

    @property
    def progress(self) -> tuple[int, int]:
        return self._impl.progress

    def result(self, timeout: float | None = None) -> Any:
        """Waits for the end and returns the :class:`PullResult` (``tensors``: the ``into`` arrays),
        or raises the pull's exception (:class:`Cancelled` after :meth:`cancel`, ``HubClosed`` if
        the hub closed first, an exception the progress callback raised). :class:`TimeoutError`
        when ``timeout`` seconds pass first (the pull keeps running). May be called again."""
        if self._result is not None:
            return self._result
        if not self.wait(timeout):
            raise _tensorhub.TimeoutError(f"PullHandle.result: the pull did not end within {timeout} s")
        from ._hub import PullResult  # noqa: PLC0415 - _hub imports this module

        self._result = PullResult(tensors=dict(self._into), **self._impl.result())
        return self._result

    def cancel(self) -> None:
        """Stops the pull (GIL released); see the class docstring. Raises TimeoutError only if
        reads had to be abandoned at the deadline (the arrays may still be written)."""
        self._impl.cancel()

    def __enter__(self) -> "PullHandle":
        return self

    def __exit__(self, *exc: object) -> None:
        self.cancel()


@dataclasses.dataclass(frozen=True)
class PublishResult:
    """What a publish did. Times in seconds from the call: ``call_seconds`` on the caller's
    thread (the trainer's stall), ``hashed_seconds`` until every checksum was in,
    ``commit_seconds`` until the coordinator accepted the shard."""

    committed: bool  # this shard was the last of its group: the version is visible
    bytes: int
    hash_threads: int
    call_seconds: float
    hashed_seconds: float
    commit_seconds: float


class PublishHandle:
    """An asynchronous publish (:meth:`Hub.publish_async`), hashed and sent by a hub worker thread.

    ``ready()`` never blocks; ``wait(timeout)`` and ``result(timeout)`` block with the GIL
    released and Ctrl-C interrupts them; ``cancel()`` stops a publish still hashing and returns
    once nothing of it reads the arrays (then nothing was published); one that reached the
    coordinator stays published. Dropping the handle does not stop the publish.
    """

    def __init__(self, impl: Any, release: Callable[[], Any] | None = None) -> None:
        self._impl = impl
        self._release = release  # drops the hub's references to the arrays of a publish that failed
        self._result: PublishResult | None = None

    def ready(self) -> bool:
        """True once the publish ended: committed at the coordinator, failed or cancelled."""
        return self._impl.ready()

    def wait(self, timeout: float | None = None) -> bool:
        """Waits up to ``timeout`` seconds (None: until it ends); returns :meth:`ready`."""
        return _wait_slices(self._impl.wait, _seconds(timeout, "timeout"))

    def result(self, timeout: float | None = None) -> PublishResult:
        """Waits for the end and returns the :class:`PublishResult`, or raises the publish's
        exception (:class:`Cancelled` after :meth:`cancel` or ``unpublish``). TimeoutError when
        ``timeout`` seconds pass first. May be called again."""
        if self._result is not None:
            return self._result
        if not self.wait(timeout):
            raise _tensorhub.TimeoutError(f"PublishHandle.result: the publish did not end within {timeout} s")
        try:
            self._result = PublishResult(**self._impl.result())
        except _tensorhub.Error:
            if self._release is not None:
                self._release()  # nothing was published: the arrays are the caller's again
            raise
        return self._result

    def cancel(self) -> None:
        """Stops a publish still hashing (GIL released); see the class docstring."""
        self._impl.cancel()
        try:
            self.result()
        except _tensorhub.Error:
            pass  # cancelled (or failed): result() raises it again
