"""Windows network tracing with ETW, on any OS.

``nettrail`` reads ``.etl`` traces (recorded with WPR, xperf, netsh trace or
``nettrail start``), decodes every event and joins the network layers
(WinINet, WinHTTP, Winsock, TCP/UDP, DNS, Http.sys, LDAP) into tables:

>>> import nettrail
>>> trace = nettrail.open("trace.etl")
>>> trace.requests().to_pandas()[["process", "method", "url", "bytes_received"]]

Tables are :class:`pyarrow.Table` objects with the same columns and types as
``nettrail export --format parquet`` writes (a first column ``trace`` names
the trace, as in a dataset of many traces). Times are UTC timestamps
(microseconds), lists are lists. The work runs in Rust, without the GIL.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

import pyarrow as pa

from . import _nettrail

__all__ = ["TraceError", "Trace", "open", "__version__"]
__version__: str = _nettrail.__version__

PathLike = Union[str, "os.PathLike[str]"]


class TraceError(Exception):
    """A trace that cannot be read, or damage found in one.

    ``path`` is the file, ``offset`` the file offset of the damage (None when
    the whole file is at fault, e.g. it is not a trace) and ``reason`` what
    was expected.
    """

    def __init__(self, message: str, path: str, offset: Optional[int], reason: str) -> None:
        super().__init__(message)
        self.path = path
        self.offset = offset
        self.reason = reason


_TYPES = {
    "int64": pa.int64(),
    "float64": pa.float64(),
    "bool": pa.bool_(),
    "string": pa.string(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "list<string>": pa.list_(pa.field("element", pa.string())),
    "list<int64>": pa.list_(pa.field("element", pa.int64())),
}


def _table(columns: List[Any]) -> pa.Table:
    """A pyarrow table from the native module's (name, type, values) columns."""
    names = [name for name, _, _ in columns]
    arrays = [pa.array(values, type=_TYPES[kind]) for _, kind, values in columns]
    schema = pa.schema([pa.field(name, _TYPES[kind]) for name, kind, _ in columns])
    return pa.Table.from_arrays(arrays, schema=schema)


class Trace:
    """An opened ``.etl`` trace. Create it with :func:`nettrail.open`."""

    def __init__(self, path: PathLike, manifests: Optional[Sequence[PathLike]] = None) -> None:
        self._native = _nettrail.NativeTrace(os.fspath(path), [os.fspath(m) for m in manifests or []])

    @property
    def path(self) -> str:
        """The trace file."""
        return str(self._native.path)

    @property
    def name(self) -> str:
        """The trace's name in a dataset (the file's stem, made safe): the ``trace`` column."""
        return self._native.name

    def info(self) -> Dict[str, Any]:
        """The facts ``nettrail info --format json`` prints: session, clock, providers, counts, damage."""
        return json.loads(self._native.info_json())

    def damage(self) -> List[str]:
        """Damage met while reading the trace (empty for a sound trace); what could be read is in the tables."""
        return list(self._native.damage())

    def requests(self) -> pa.Table:
        """One row per request or connection, at the highest layer that saw it (``nettrail requests``)."""
        return _table(self._native.table("requests"))

    def connections(self) -> pa.Table:
        """Every TCP connection and UDP flow (``nettrail connections``)."""
        return _table(self._native.table("connections"))

    def dns(self) -> pa.Table:
        """DNS lookups, and the DNS servers of each interface (``nettrail dns``)."""
        return _table(self._native.table("dns"))

    def http_server(self) -> pa.Table:
        """Http.sys server requests (``nettrail http-server``)."""
        return _table(self._native.table("http_server"))

    def browser(self) -> pa.Table:
        """Browsers' regions, events and NetLog sources, with their URLs (``nettrail browser``)."""
        return _table(self._native.table("browser"))

    def events(
        self,
        provider: Optional[Union[str, Sequence[str]]] = None,
        ids: Optional[Sequence[int]] = None,
        since: Optional[str] = None,
        until: Optional[str] = None,
    ) -> Iterator[Dict[str, Any]]:
        """Every event in time order as the dicts ``nettrail dump --format jsonl`` prints.

        ``provider``: a name or GUID, or a list of them; ``ids``: event ids;
        ``since``/``until``: a UTC time (``2012-06-19T20:34:00Z``) or seconds
        from the start (``+12.5``). Events are read lazily, a chunk at a time.
        """
        providers = [provider] if isinstance(provider, str) else list(provider or [])
        chunks = self._native.events_jsonl(providers, list(ids or []), since, until)
        while True:
            chunk = chunks.next_chunk()
            if chunk is None:
                return
            for line in chunk.splitlines():
                yield json.loads(line)

    def events_table(self) -> pa.Table:
        """Every event as the Parquet export's ``events`` table (properties as JSON text)."""
        return _table(self._native.events_columns())

    def report(self, path: PathLike) -> str:
        """Writes the self-contained HTML report (``nettrail view``) to ``path``; returns the path."""
        self._native.report(os.fspath(path))
        return os.fspath(path)

    def stacks(self, request: int) -> Optional[Dict[str, Any]]:
        """The stitched call stacks of request ``request`` (the ``request`` column).

        ``first``: the code that began the work; ``last``: the request's own
        stack; ``middle`` and ``full``: the hand-offs between, titled;
        ``chain``: each stack with its thread, process and title. None when
        the trace has no stack for the request.
        """
        return self._native.stacks(request)

    def __repr__(self) -> str:
        return f"nettrail.Trace({self.path!r})"


def open(path: PathLike, manifests: Optional[Sequence[PathLike]] = None) -> Trace:  # noqa: A001
    """Opens a trace. ``manifests``: instrumentation manifests (files or folders) to decode with.

    Raises :class:`TraceError` when the file is not a readable trace.
    """
    return Trace(path, manifests)
