//! `nettrail._nettrail`: the native half of the `nettrail` Python package.
//! It reads a trace with the same libraries as the `nettrail` binary and
//! hands Python plain values (dicts, lists, JSON text); `nettrail/__init__.py`
//! turns the columns into pyarrow tables. Every call releases the GIL while
//! Rust works, and errors carry the file, the offset and the reason.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};

use nettrail_decode::Schemas;
use nettrail_etl::{Batching, Guid, TraceFile};
use nettrail_export::events::{Filter, Format, Formatter, Options, TimeBound, table};
use nettrail_export::facts::Facts;
use nettrail_net::Analysis;
use nettrail_stacks::NoSymbols;
use nettrail_tables::{Analysed, Cell, Column, Kind, Table, Values, column, columns};
use pyo3::exceptions::{PyIndexError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// A reason nettrail gives, for Python: `nettrail.TraceError(message, path, offset, reason)`.
struct Failure {
    path: PathBuf,
    offset: Option<u64>,
    reason: String,
}

impl Failure {
    fn new(path: &Path, reason: impl ToString) -> Failure {
        Failure { path: path.to_path_buf(), offset: None, reason: reason.to_string() }
    }

    fn of_trace(path: &Path, e: &nettrail_etl::Error) -> Failure {
        let offset = e.location.file_offset().or(Some(e.location.buffer_offset));
        let offset = if matches!(e.kind, nettrail_etl::ErrorKind::NotATrace { .. }) { None } else { offset };
        Failure { path: path.to_path_buf(), offset, reason: e.kind.to_string() }
    }

    fn into_py(self, py: Python<'_>) -> PyErr {
        let message = match self.offset {
            Some(o) => format!("{}: at offset {o:#x}: {}", self.path.display(), self.reason),
            None => format!("{}: {}", self.path.display(), self.reason),
        };
        let class = py.import("nettrail").and_then(|m| m.getattr("TraceError"));
        match class.and_then(|c| c.call1((message.clone(), self.path.display().to_string(), self.offset, self.reason)))
        {
            Ok(instance) => PyErr::from_value(instance),
            Err(_) => PyValueError::new_err(message),
        }
    }
}

/// What a trace keeps between calls: its schemas and, once a table was
/// asked for, its network model.
struct State {
    schemas: Schemas,
    analysis: Option<Analysis>,
}

/// An opened trace (see `nettrail.Trace`).
#[pyclass(frozen, module = "nettrail._nettrail")]
struct NativeTrace {
    path: PathBuf,
    manifests: Vec<PathBuf>,
    file: Arc<TraceFile>,
    /// The partition name the dataset export would give this trace.
    name: String,
    state: Mutex<Option<State>>,
}

/// The manifests given, then what the trace carries.
fn schemas_for(trace: &nettrail_etl::Trace<'_>, manifests: &[PathBuf]) -> Result<Schemas, Failure> {
    let mut schemas = Schemas::new();
    schemas.add_manifest_files(manifests).map_err(|e| Failure::new(&e.path, e.message))?;
    schemas.learn(trace);
    Ok(schemas)
}

impl NativeTrace {
    /// Runs `f` on the analysed trace (the model built on first use).
    fn with_analysed<T>(&self, f: impl FnOnce(&Analysed<'_>) -> T) -> Result<T, Failure> {
        let trace = nettrail_etl::Trace::open(&self.file).map_err(|e| Failure::of_trace(&self.path, &e))?;
        let mut guard = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let state = match guard.take() {
            Some(s) => s,
            None => State { schemas: schemas_for(&trace, &self.manifests)?, analysis: None },
        };
        let analysed = match state.analysis {
            Some(analysis) => Analysed { trace, schemas: state.schemas, analysis },
            None => Analysed::new(trace, state.schemas, &mut |_| {}),
        };
        let out = f(&analysed);
        let Analysed { schemas, analysis, .. } = analysed;
        *guard = Some(State { schemas, analysis: Some(analysis) });
        Ok(out)
    }

    /// Runs `f` on the trace and its schemas (no network model needed).
    fn with_schemas<T>(&self, f: impl FnOnce(&nettrail_etl::Trace<'_>, &Schemas) -> T) -> Result<T, Failure> {
        let trace = nettrail_etl::Trace::open(&self.file).map_err(|e| Failure::of_trace(&self.path, &e))?;
        let mut guard = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if guard.is_none() {
            *guard = Some(State { schemas: schemas_for(&trace, &self.manifests)?, analysis: None });
        }
        let state = guard.as_ref().map(|s| &s.schemas);
        Ok(f(&trace, state.unwrap_or(&Schemas::new())))
    }
}

/// One table as `(name, type, values)` per column; `None` is null, times
/// are microseconds since 1970 (UTC).
type Columns = Vec<(&'static str, &'static str, ColumnValues)>;

/// A column's values on their way to Python (lists of ints, floats, bools, str, lists, None).
struct ColumnValues(Values);

impl<'py> IntoPyObject<'py> for ColumnValues {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(match self.0 {
            Values::Int(v) | Values::Timestamp(v) => v.into_pyobject(py)?.into_any(),
            Values::Float(v) => v.into_pyobject(py)?.into_any(),
            Values::Bool(v) => v.into_pyobject(py)?.into_any(),
            Values::Text(v) => v.into_pyobject(py)?.into_any(),
            Values::TextList(v) => v.into_pyobject(py)?.into_any(),
            Values::IntList(v) => v.into_pyobject(py)?.into_any(),
        })
    }
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Int => "int64",
        Kind::Float => "float64",
        Kind::Bool => "bool",
        Kind::Text => "string",
        Kind::Timestamp => "timestamp",
        Kind::TextList => "list<string>",
        Kind::IntList => "list<int64>",
    }
}

/// `columns` over `rows`, with the dataset's first column `trace`.
fn table_columns<R>(name: &str, columns: Vec<Column<R>>, rows: &[&R]) -> Columns {
    let name = name.to_string();
    let mut all = vec![column("trace", Kind::Text, false, move |_: &R| Cell::text(name.clone()))];
    all.extend(columns);
    let values = nettrail_tables::columnar::columns_of(&all, rows);
    all.iter().zip(values).map(|(c, v)| (c.name, kind_name(c.kind), ColumnValues(v))).collect()
}

/// The partition name of a trace file, as the dataset export makes it.
fn partition_name(path: &Path) -> String {
    let stem = path.file_stem().map_or_else(|| "trace".into(), |s| s.to_string_lossy().into_owned());
    let safe: String =
        stem.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') { c } else { '_' }).collect();
    if safe.is_empty() || safe.starts_with('.') { format!("trace{safe}") } else { safe }
}

#[pymethods]
impl NativeTrace {
    #[new]
    #[pyo3(signature = (path, manifests = None))]
    fn new(py: Python<'_>, path: PathBuf, manifests: Option<Vec<PathBuf>>) -> PyResult<Self> {
        let opened = py.detach(|| -> Result<Arc<TraceFile>, Failure> {
            let file = TraceFile::open(&path).map_err(|e| Failure::new(&path, format!("cannot open: {e}")))?;
            // A file that is no trace fails here, not at the first table.
            nettrail_etl::Trace::open(&file).map_err(|e| Failure::of_trace(&path, &e))?;
            Ok(Arc::new(file))
        });
        let file = opened.map_err(|f| f.into_py(py))?;
        let name = partition_name(&path);
        Ok(NativeTrace { path, manifests: manifests.unwrap_or_default(), file, name, state: Mutex::new(None) })
    }

    /// The facts `nettrail info --format json` prints, as JSON text.
    fn info_json(&self, py: Python<'_>) -> PyResult<String> {
        let path = self.path.clone();
        py.detach(|| self.with_schemas(|trace, schemas| Facts::of(&path, trace, schemas).document.to_string()))
            .map_err(|f| f.into_py(py))
    }

    /// The damage met while reading, as messages (empty for a sound trace).
    fn damage(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        py.detach(|| self.with_analysed(|a| a.analysis.damage.iter().map(ToString::to_string).collect()))
            .map_err(|f| f.into_py(py))
    }

    /// One table's columns: `requests`, `connections`, `dns`, `http_server` or `browser`.
    fn table(&self, py: Python<'_>, name: &str) -> PyResult<Columns> {
        let table = Table::ALL.into_iter().find(|t| t.name() == name).ok_or_else(|| {
            PyValueError::new_err(format!("no table {name:?}: requests, connections, dns, http_server, browser"))
        })?;
        let trace_name = self.name.clone();
        py.detach(|| {
            self.with_analysed(|a| {
                let report = a.report();
                match table {
                    Table::Requests => {
                        let rows = nettrail_tables::requests(&report, &Default::default());
                        table_columns(&trace_name, columns::requests(&report), &rows.iter().collect::<Vec<_>>())
                    }
                    Table::Connections => table_columns(
                        &trace_name,
                        columns::connections(&report),
                        &report.connections.iter().collect::<Vec<_>>(),
                    ),
                    Table::Dns => {
                        table_columns(&trace_name, columns::dns(&report), &report.dns.iter().collect::<Vec<_>>())
                    }
                    Table::HttpServer => table_columns(
                        &trace_name,
                        columns::http_server(&report),
                        &report.http_server.iter().collect::<Vec<_>>(),
                    ),
                    Table::Browser => table_columns(
                        &trace_name,
                        columns::browser(&report),
                        &report.browser.iter().collect::<Vec<_>>(),
                    ),
                }
            })
        })
        .map_err(|f| f.into_py(py))
    }

    /// The stitched stacks of request `number` (the `request` column):
    /// `{"first": […], "last": […], "middle": […], "full": […], "chain": [{"thread", "title", "frames"}]}`,
    /// or None when the trace has no stack for it.
    fn stacks<'py>(&self, py: Python<'py>, number: usize) -> PyResult<Option<Bound<'py, PyDict>>> {
        let stitched = py
            .detach(|| {
                self.with_analysed(|a| {
                    let report = a.report();
                    let mut rows = nettrail_tables::requests(&report, &Default::default());
                    let count = rows.len();
                    rows.retain(|r| r.number == number);
                    if rows.is_empty() {
                        return Err(count);
                    }
                    a.stitch(&mut rows, &NoSymbols);
                    Ok(rows.pop().and_then(|r| r.stacks))
                })
            })
            .map_err(|f| f.into_py(py))?
            .map_err(|count| {
                PyIndexError::new_err(format!("no request {number}: the trace has requests 1 to {count}"))
            })?;
        let Some(s) = stitched else { return Ok(None) };
        let dict = PyDict::new(py);
        dict.set_item("first", s.first().to_vec())?;
        dict.set_item("last", s.last().to_vec())?;
        dict.set_item("middle", s.middle())?;
        dict.set_item("full", s.full())?;
        let chain = PyList::empty(py);
        for (i, c) in s.stacks.iter().enumerate() {
            let step = PyDict::new(py);
            step.set_item("thread", c.thread)?;
            step.set_item("pid", c.pid)?;
            step.set_item("title", s.title(i))?;
            step.set_item("frames", c.frames.clone())?;
            chain.append(step)?;
        }
        dict.set_item("chain", chain)?;
        Ok(Some(dict))
    }

    /// Writes the HTML report to `output`.
    fn report(&self, py: Python<'_>, output: PathBuf) -> PyResult<()> {
        let title =
            self.path.file_name().map_or_else(|| self.path.display().to_string(), |n| n.to_string_lossy().into());
        let path = self.path.clone();
        py.detach(|| {
            let written = self.with_analysed(|a| {
                let facts = Facts::of(&path, &a.trace, &a.schemas);
                let file = std::fs::File::create(&output)?;
                let mut out = std::io::BufWriter::new(file);
                nettrail_export::report::write_report(&mut out, &title, a, &facts, &NoSymbols, &mut |_, _| {})
                    .map(|_| ())
            })?;
            written.map_err(|e| Failure::new(&output, format!("cannot write: {e}")))
        })
        .map_err(|f| f.into_py(py))
    }

    /// The events as JSON lines, a chunk at a time (see `Trace.events`).
    #[pyo3(signature = (providers = None, ids = None, since = None, until = None))]
    fn events_jsonl(
        &self,
        providers: Option<Vec<String>>,
        ids: Option<Vec<u16>>,
        since: Option<String>,
        until: Option<String>,
    ) -> PyResult<EventChunks> {
        let bound = |s: Option<String>| -> PyResult<Option<TimeBound>> {
            s.map(|s| s.parse::<TimeBound>().map_err(PyValueError::new_err)).transpose()
        };
        let (since, until) = (bound(since)?, bound(until)?);
        let (to_python, chunks) = sync_channel(4);
        let file = Arc::clone(&self.file);
        let (path, manifests) = (self.path.clone(), self.manifests.clone());
        let providers = providers.unwrap_or_default();
        let ids = ids.unwrap_or_default();
        let worker = std::thread::spawn(move || {
            produce_events(&path, &file, &manifests, &providers, &ids, since, until, to_python)
        });
        Ok(EventChunks { chunks: Mutex::new(chunks), worker: Mutex::new(Some(worker)) })
    }

    /// The events table's columns (the Parquet `events` table), with `trace` first.
    fn events_columns(&self, py: Python<'_>) -> PyResult<Columns> {
        let name = self.name.clone();
        py.detach(|| {
            self.with_schemas(|trace, schemas| {
                let mut all: Option<Vec<Values>> = None;
                table::read(trace, schemas, Some(&name), 1 << 16, &mut |_| {}, |group| {
                    match &mut all {
                        Some(all) => all.iter_mut().zip(group).for_each(|(a, g)| a.append(g)),
                        None => all = Some(group),
                    }
                    ControlFlow::Continue(())
                });
                let schema = std::iter::once(("trace", Kind::Text)).chain(table::SCHEMA);
                let all = all.unwrap_or_else(|| schema.clone().map(|(_, k)| Values::empty(k)).collect());
                schema.zip(all).map(|((n, k), v)| (n, kind_name(k), ColumnValues(v))).collect()
            })
        })
        .map_err(|f| f.into_py(py))
    }

    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    #[getter]
    fn name(&self) -> String {
        self.name.clone()
    }
}

/// Chunks of JSON lines from a reading thread; dropping it stops the thread.
#[pyclass(module = "nettrail._nettrail")]
struct EventChunks {
    chunks: Mutex<Receiver<Result<Vec<u8>, String>>>,
    worker: Mutex<Option<std::thread::JoinHandle<()>>>,
}

#[pymethods]
impl EventChunks {
    /// The next chunk of JSON lines, or None at the end.
    fn next_chunk(&self, py: Python<'_>) -> PyResult<Option<String>> {
        let received = py.detach(|| self.chunks.lock().unwrap_or_else(|p| p.into_inner()).recv());
        match received {
            Ok(Ok(text)) => Ok(Some(String::from_utf8(text).unwrap_or_default())),
            Ok(Err(message)) => Err(PyValueError::new_err(message)),
            Err(_) => {
                if let Some(worker) = self.worker.lock().unwrap_or_else(|p| p.into_inner()).take() {
                    let _ = worker.join();
                }
                Ok(None)
            }
        }
    }
}

/// Reads every event the filters keep and sends its JSON lines, chunk by chunk.
#[allow(clippy::too_many_arguments)]
fn produce_events(
    path: &Path,
    file: &TraceFile,
    manifests: &[PathBuf],
    providers: &[String],
    ids: &[u16],
    since: Option<TimeBound>,
    until: Option<TimeBound>,
    to_python: SyncSender<Result<Vec<u8>, String>>,
) {
    let trace = match nettrail_etl::Trace::open(file) {
        Ok(t) => t,
        Err(e) => {
            let _ = to_python.send(Err(format!("{}: {e}", path.display())));
            return;
        }
    };
    let schemas = match schemas_for(&trace, manifests) {
        Ok(s) => s,
        Err(f) => {
            let _ = to_python.send(Err(format!("{}: {}", f.path.display(), f.reason)));
            return;
        }
    };
    let clock = *trace.clock();
    let filter = Filter::new(providers, ids, &[], since, until, None::<Guid>, trace.header().start_time);
    let options = Options { format: Format::Jsonl, fields: Vec::new(), raw: false, filter };
    let code = nettrail_stacks::scan(&trace, &schemas, &|_| true);
    let formatter = Formatter::new(&schemas, &clock, &options, Some((&code, &NoSymbols)));
    nettrail_etl::drive(
        &trace,
        Batching::default(),
        |chunk| {
            let mut text = Vec::new();
            formatter.chunk(chunk, &mut text);
            text
        },
        |text| {
            if text.is_empty() || to_python.send(Ok(text)).is_ok() {
                ControlFlow::Continue(())
            } else {
                ControlFlow::Break(())
            }
        },
        |_| {},
    );
}

/// The native module.
#[pymodule]
fn _nettrail(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NativeTrace>()?;
    m.add_class::<EventChunks>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
