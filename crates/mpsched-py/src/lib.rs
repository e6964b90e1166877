//! The Python bindings: a thin layer over `mpsched-sim`. Nothing panics across the boundary:
//! bad input becomes `ValueError`, an internal panic becomes `RuntimeError`.

use mpsched_core::sched::registry;
use mpsched_sim::trace_out::{Chunk, Column};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};
use std::panic::{catch_unwind, AssertUnwindSafe};

mod capture;
mod pysched;

fn le_bytes<T: Copy, const N: usize>(v: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
    let mut out = Vec::with_capacity(v.len() * N);
    for &x in v {
        out.extend_from_slice(&f(x));
    }
    out
}

fn column_to_py<'py>(py: Python<'py>, c: &Column) -> PyResult<Bound<'py, PyTuple>> {
    let (dtype, data): (&str, Bound<'py, PyAny>) = match c {
        Column::U64(v) => (
            "u64",
            PyBytes::new(py, &le_bytes(v, u64::to_le_bytes)).into_any(),
        ),
        Column::U32(v) => (
            "u32",
            PyBytes::new(py, &le_bytes(v, u32::to_le_bytes)).into_any(),
        ),
        Column::U16(v) => (
            "u16",
            PyBytes::new(py, &le_bytes(v, u16::to_le_bytes)).into_any(),
        ),
        Column::U8(v) => ("u8", PyBytes::new(py, v).into_any()),
        Column::F64(v) => (
            "f64",
            PyBytes::new(py, &le_bytes(v, f64::to_le_bytes)).into_any(),
        ),
        Column::Str(v) => ("str", PyList::new(py, v.iter())?.into_any()),
    };
    PyTuple::new(py, [PyString::new(py, dtype).into_any(), data])
}

fn chunk_to_py<'py>(py: Python<'py>, chunk: &Chunk) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (name, col) in &chunk.columns {
        d.set_item(name, column_to_py(py, col)?)?;
    }
    Ok(d)
}

fn panic_message(panic: Box<dyn std::any::Any + Send>) -> PyErr {
    let msg = panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "unknown panic".into());
    PyRuntimeError::new_err(format!("simulator failure: {msg}"))
}

/// Runs a normalized scenario (JSON). Returns (summary JSON, traces or None).
///
/// With `trace` and no `sink`, every trace table comes back at the end as
/// `{table: {column: (dtype, data)}}`. With a `sink`, tables are streamed instead: the sink is
/// called as `sink(table, columns)` every `chunk_rows` rows, and the traces returned are None.
/// `scheduler`, a Python object with `next(ctx)`, replaces the scenario's scheduler.
///
/// About ten times a second of wall time the run checks for signals (Ctrl-C) and calls
/// `progress(simulated_ns, events)`; a signal or an exception from `progress` or the sink stops
/// the run there. A signal ends it with the summary of the run so far (`interrupted_at_s`); an
/// exception is raised.
///
/// `pcap`, a file name, asks for a packet capture at `pcap_at` (sender, receiver or links),
/// at most `pcap_max_bytes` long: a run whose capture would pass that raises ValueError.
#[pyfunction]
#[pyo3(signature = (config_json, trace=false, sink=None, sample_interval_ns=10_000_000, chunk_rows=65_536, scheduler=None, progress=None, pcap=None, pcap_at="sender", pcap_max_bytes=u64::MAX))]
#[allow(clippy::too_many_arguments)]
fn run<'py>(
    py: Python<'py>,
    config_json: &str,
    trace: bool,
    sink: Option<Bound<'py, PyAny>>,
    sample_interval_ns: u64,
    chunk_rows: usize,
    scheduler: Option<Bound<'py, PyAny>>,
    progress: Option<Bound<'py, PyAny>>,
    pcap: Option<String>,
    pcap_at: &str,
    pcap_max_bytes: u64,
) -> PyResult<(String, Option<Bound<'py, PyDict>>)> {
    let interval = mpsched_core::Dur(sample_interval_ns.max(1));
    let pysched = match scheduler {
        Some(obj) => Some(pysched::PyScheduler::new(py, obj.unbind())?),
        None => None,
    };
    let sched_error = pysched.as_ref().map(|s| s.error.clone());
    let mut watcher = Watcher::new(progress.map(Bound::unbind));
    if !trace && pysched.is_none() {
        let json = config_json.to_owned();
        let result = py.allow_threads(|| {
            catch_unwind(AssertUnwindSafe(|| {
                let mut sim = mpsched_sim::simulation_from_json(&json, false, None)?;
                let status = match &pcap {
                    Some(path) => Some(capture::attach(&mut sim, path, pcap_at, pcap_max_bytes)?),
                    None => None,
                };
                // Without the GIL: take it only to look at the signals and report.
                let out = sim.run_watched(&mut |now, events| {
                    !watcher.due() || Python::with_gil(|py| watcher.check(py, now, events))
                });
                Ok::<_, String>((out, status))
            }))
        });
        let (out, status) = match result {
            Ok(Ok(out)) => out,
            Ok(Err(msg)) => return Err(PyValueError::new_err(msg)),
            Err(panic) => return Err(panic_message(panic)),
        };
        if let Some(msg) = capture::error(&status) {
            return Err(PyValueError::new_err(msg));
        }
        watcher.raise()?;
        return Ok((serde_json_string(&out.summary)?, None));
    }
    // The GIL stays held: the sink or the scheduler is Python.
    let external = pysched.map(|s| Box::new(s) as Box<dyn mpsched_core::sched::Scheduler>);
    let mut sim = mpsched_sim::simulation_from_json(config_json, trace, external)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let status = match &pcap {
        Some(path) => Some(
            capture::attach(&mut sim, path, pcap_at, pcap_max_bytes)
                .map_err(PyValueError::new_err)?,
        ),
        None => None,
    };
    let collected = PyDict::new(py);
    let mut error: Option<PyErr> = None;
    let rows = if sink.is_some() {
        chunk_rows.max(1)
    } else {
        usize::MAX
    };
    // A sink that failed (a full disk, a trace-size limit) stops the run at the next watch.
    let sink_failed = std::cell::Cell::new(false);
    let mut on_chunk = |chunk: Chunk| {
        if error.is_some() || chunk.rows() == 0 {
            return;
        }
        let res = chunk_to_py(py, &chunk).and_then(|cols| match &sink {
            Some(f) => f.call1((chunk.table, cols)).map(|_| ()),
            None => collected.set_item(chunk.table, cols),
        });
        if let Err(e) = res {
            error = Some(e);
            sink_failed.set(true);
        }
    };
    let mut watch = |now: mpsched_core::Time, events: u64| {
        !sink_failed.get() && (!watcher.due() || watcher.check(py, now, events))
    };
    let result = catch_unwind(AssertUnwindSafe(|| {
        if trace {
            sim.run_streaming_watched(interval, rows, &mut on_chunk, &mut watch)
        } else {
            sim.run_watched(&mut watch).summary
        }
    }));
    let summary = match result {
        Ok(s) => s,
        Err(panic) => return Err(panic_message(panic)),
    };
    if let Some(e) = sched_error.and_then(|e| e.borrow_mut().take()) {
        return Err(e);
    }
    if let Some(e) = error {
        return Err(e);
    }
    if let Some(msg) = capture::error(&status) {
        return Err(PyValueError::new_err(msg));
    }
    watcher.raise()?;
    let traces = if trace && sink.is_none() {
        Some(collected)
    } else {
        None
    };
    Ok((serde_json_string(&summary)?, traces))
}

/// Looks at the signals and reports progress about ten times a second of wall time.
struct Watcher {
    progress: Option<Py<PyAny>>,
    last: std::time::Instant,
    /// An exception from the progress callback, raised once the run has stopped.
    error: Option<PyErr>,
}

impl Watcher {
    const PERIOD: std::time::Duration = std::time::Duration::from_millis(100);

    fn new(progress: Option<Py<PyAny>>) -> Watcher {
        Watcher {
            progress,
            last: std::time::Instant::now(),
            error: None,
        }
    }

    /// Whether a check is due (cheap: no GIL).
    fn due(&mut self) -> bool {
        if self.last.elapsed() < Self::PERIOD {
            return false;
        }
        self.last = std::time::Instant::now();
        true
    }

    /// Signals, then progress; whether the run goes on.
    fn check(&mut self, py: Python<'_>, now: mpsched_core::Time, events: u64) -> bool {
        // A signal's handler raised (Ctrl-C): the run stops and returns what it has, its
        // summary marked with where it stopped.
        if py.check_signals().is_err() {
            return false;
        }
        if let Some(f) = &self.progress {
            if let Err(e) = f.call1(py, (now.as_nanos(), events)) {
                if !e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) {
                    self.error = Some(e);
                }
                return false;
            }
        }
        true
    }

    fn raise(&mut self) -> PyResult<()> {
        self.error.take().map_or(Ok(()), Err)
    }
}

fn serde_json_string(s: &mpsched_sim::Summary) -> PyResult<String> {
    mpsched_sim::summary_json(s).map_err(|e| PyRuntimeError::new_err(e.to_string()))
}

/// (name, description, source, parameter keys) of every registered scheduler.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn schedulers() -> Vec<(&'static str, &'static str, &'static str, Vec<&'static str>)> {
    registry()
        .map(|s| {
            (
                s.name,
                s.description,
                s.source,
                s.params.iter().map(|p| p.key).collect(),
            )
        })
        .collect()
}

/// What scenarios may name and what runs return, each with its meaning (JSON; see
/// `mpsched_sim::contract`).
#[pyfunction]
fn contract() -> String {
    mpsched_sim::contract::contract_json()
}

/// Runs the link emulator as this process (`mpsched-emu CONFIG`): it never returns. For a
/// process of its own (`python -m mpsched.testbed.emulator CONFIG`).
#[cfg(target_os = "linux")]
#[pyfunction]
fn emulator_main(py: Python<'_>, config_path: String) {
    py.allow_threads(|| mpsched_emu::app::run(&["mpsched-emu".to_string(), config_path]))
}

/// Million push/pop pairs per second of a bare binary-heap event loop.
#[pyfunction]
#[pyo3(signature = (events=5_000_000, pending=1024))]
fn bench_event_queue(py: Python<'_>, events: u64, pending: u64) -> f64 {
    py.allow_threads(|| mpsched_sim::bench_event_queue(events, pending.max(1)))
}

/// Runs the benchmark scenarios (all when `names` is empty); a JSON list of rows.
#[pyfunction]
#[pyo3(signature = (names=Vec::new()))]
fn bench_scenarios(py: Python<'_>, names: Vec<String>) -> PyResult<String> {
    let rows = py
        .allow_threads(|| catch_unwind(AssertUnwindSafe(|| mpsched_sim::bench::run(&names))))
        .map_err(panic_message)?
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    serde_json::to_string(&rows).map_err(|e| PyRuntimeError::new_err(e.to_string()))
}

/// A `HOST:PORT` as a socket address (a name resolved); one line with the fix otherwise.
#[cfg(target_os = "linux")]
fn socket_addr(field: &str, text: &str) -> PyResult<std::net::SocketAddr> {
    use std::net::ToSocketAddrs;
    if let Ok(a) = text.parse() {
        return Ok(a);
    }
    let no_port = !text.contains(':')
        || (text.starts_with('[') && text.ends_with(']'))
        || text.parse::<std::net::Ipv6Addr>().is_ok();
    if no_port {
        return Err(PyValueError::new_err(format!(
            "{field}: '{text}' has no port: give HOST:PORT (e.g. {text}:4433, IPv6 as \
             [ADDR]:PORT)"
        )));
    }
    match text.to_socket_addrs().map(|mut a| a.next()) {
        Ok(Some(a)) => Ok(a),
        Ok(None) => Err(PyValueError::new_err(format!(
            "{field}: '{text}' resolves to no address"
        ))),
        Err(e) => Err(PyValueError::new_err(format!(
            "{field}: '{text}': {e} (give HOST:PORT, IPv6 as [ADDR]:PORT)"
        ))),
    }
}

/// `mpsched keygen`: 32 random bytes in base64.
#[cfg(target_os = "linux")]
#[pyfunction]
fn udp_keygen() -> PyResult<String> {
    let s = mpsched_udp::secret::Secret::generate()
        .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    Ok(s.to_base64().to_string())
}

/// Checks a secret's text and, if given, its key file's permissions: the one-line reason
/// it is refused.
#[cfg(target_os = "linux")]
#[pyfunction]
#[pyo3(signature = (secret, key_file=None))]
fn udp_check_secret(secret: Vec<u8>, key_file: Option<String>) -> PyResult<()> {
    let secret = zeroize::Zeroizing::new(secret);
    if let Some(f) = key_file {
        mpsched_udp::secret::check_key_file(std::path::Path::new(&f))
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
    }
    mpsched_udp::secret::Secret::parse(&secret)
        .map(drop)
        .map_err(|e| PyValueError::new_err(format!("secret: {e}")))
}

/// `mpsched serve`: serves `file` (or `size` generated bytes, endless if neither) on `bind`
/// until Ctrl-C; `ready(address)` once everything is checked and the socket bound; returns
/// the datagrams dropped, as JSON.
#[cfg(target_os = "linux")]
#[pyfunction]
#[pyo3(signature = (bind, secret, file=None, size=None, scheduler="linux".to_string(),
    params=Vec::new(), congestion="cubic".to_string(), sndbuf=6 << 20, scheduler_object=None,
    aead=None, idle_timeout_s=30.0, ready=None))]
#[allow(clippy::too_many_arguments)]
fn udp_serve(
    py: Python<'_>,
    bind: String,
    secret: Vec<u8>,
    file: Option<String>,
    size: Option<u64>,
    scheduler: String,
    params: Vec<(String, String)>,
    congestion: String,
    sndbuf: u64,
    scheduler_object: Option<PyObject>,
    aead: Option<String>,
    idle_timeout_s: f64,
    ready: Option<PyObject>,
) -> PyResult<String> {
    use mpsched_udp::app::{parse_params, run_serve, ServeOptions};
    let aead = aead.as_deref().map(parse_suite).transpose()?;
    // A scheduler written in Python: checked once here, then one per connection.
    let factory: Option<mpsched_udp::server::SchedulerFactory> = match scheduler_object {
        Some(obj) => {
            pysched::PyScheduler::new(py, obj.clone_ref(py))?;
            Some(Box::new(move || {
                Python::with_gil(|py| {
                    Box::new(
                        pysched::PyScheduler::new(py, obj.clone_ref(py)).expect("checked above"),
                    ) as Box<dyn mpsched_core::sched::Scheduler>
                })
            }))
        }
        None => None,
    };
    use std::sync::atomic::{AtomicBool, Ordering};
    let bind = socket_addr("bind", &bind)?;
    let opts = ServeOptions {
        bind,
        secret: zeroize::Zeroizing::new(secret),
        file: file.map(Into::into),
        size,
        server: mpsched_udp::server::ServerConfig {
            scheduler,
            scheduler_params: parse_params(&params),
            congestion,
            sndbuf,
            aead,
            idle_timeout: idle_duration(idle_timeout_s)?,
            ..Default::default()
        },
        factory,
    };
    let stop = AtomicBool::new(false);
    let failure: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);
    // Whatever an earlier run's Python scheduler left is not this one's.
    pysched::take_failure();
    let report = py
        .allow_threads(|| {
            catch_unwind(AssertUnwindSafe(|| {
                let on_ready = |addr: std::net::SocketAddr| {
                    if let Some(cb) = ready.as_ref() {
                        Python::with_gil(|py| match cb.call1(py, (addr.to_string(),)) {
                            Ok(_) => {}
                            // Ctrl-C (or SIGTERM, which `serve` turns into it) while the
                            // callback ran: serving stops as it would a moment later.
                            Err(e)
                                if e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(
                                    py,
                                ) =>
                            {
                                stop.store(true, Ordering::Relaxed);
                            }
                            Err(e) => {
                                *failure.lock().expect("one thread") =
                                    Some(format!("ready: {e} (serving stopped)"));
                                stop.store(true, Ordering::Relaxed);
                            }
                        });
                    }
                };
                run_serve(opts, &stop, on_ready, |_| {
                    // Ctrl-C ends serving (it may have reached a Python scheduler first); so
                    // does a Python scheduler that raised.
                    if let Some(why) = pysched::take_failure() {
                        *failure.lock().expect("one thread") =
                            Some(format!("connection.scheduler: {why} (serving stopped)"));
                        stop.store(true, Ordering::Relaxed);
                    }
                    if Python::with_gil(|py| py.check_signals()).is_err()
                        || pysched::take_interrupt()
                    {
                        stop.store(true, Ordering::Relaxed);
                    }
                })
            }))
        })
        .map_err(panic_message)?
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    if let Some(why) = failure.into_inner().expect("one thread") {
        return Err(PyValueError::new_err(why));
    }
    let drops = report.drops;
    let answers = report.answers;
    Ok(format!(
        r#"{{"drops": {{"malformed": {}, "unauthenticated": {}, "replayed": {}, "unknown_connection": {}, "amplification": {}, "over_capacity": {}, "stale": {}, "failed_proof": {}}}, "answers": {{"cookies": {}, "resets": {}, "migrations": {}}}, "decisions": {}, "decision_us": {}}}"#,
        drops.malformed,
        drops.unauthenticated,
        drops.replayed,
        drops.unknown_connection,
        drops.amplification,
        drops.over_capacity,
        drops.stale,
        drops.failed_proof,
        answers.cookies,
        answers.resets,
        answers.migrations,
        report.decisions,
        report
            .decision_us
            .map_or("null".to_string(), |v| format!("{v:.3}"))
    ))
}

/// An idle timeout in seconds as the transport's duration (1 s to a day).
#[cfg(target_os = "linux")]
fn idle_duration(secs: f64) -> PyResult<mpsched_core::Dur> {
    if !(1.0..=86_400.0).contains(&secs) {
        return Err(PyValueError::new_err(format!(
            "idle timeout: {secs} s (give 1 s to 1 day)"
        )));
    }
    Ok(mpsched_core::Dur((secs * 1e9) as u64))
}

/// `mpsched get`: downloads from `server` over one path per local address; `progress(bytes,
/// total or None, [bytes received per path])` about every 100 ms. Returns the summary (JSON)
/// and, with `trace`, the client's trace tables (`{table: {column: (dtype, bytes)}}`, the
/// columns it can see); Ctrl-C stops the download and returns what arrived.
#[cfg(target_os = "linux")]
#[pyfunction]
#[pyo3(signature = (server, locals, secret, out=None, rcvbuf=6 << 20, progress=None,
    duration_s=None, trace=false, aead=None, ack_every=None, resume=false,
    idle_timeout_s=30.0))]
#[allow(clippy::too_many_arguments)]
fn udp_get<'py>(
    py: Python<'py>,
    server: String,
    locals: Vec<String>,
    secret: Vec<u8>,
    out: Option<String>,
    rcvbuf: u64,
    progress: Option<PyObject>,
    duration_s: Option<f64>,
    trace: bool,
    aead: Option<String>,
    ack_every: Option<u32>,
    resume: bool,
    idle_timeout_s: f64,
) -> PyResult<(String, Option<Bound<'py, PyDict>>)> {
    use mpsched_udp::app::{run_get, GetOptions};
    use std::sync::atomic::{AtomicBool, Ordering};
    let server = socket_addr("server", &server)?;
    let locals = locals
        .iter()
        .map(|l| {
            l.parse().map_err(|e| {
                PyValueError::new_err(format!("path: '{l}': {e} (give a local IP address)"))
            })
        })
        .collect::<PyResult<Vec<_>>>()?;
    let opts = GetOptions {
        server,
        locals,
        secret: zeroize::Zeroizing::new(secret),
        out: out.map(Into::into),
        resume,
        idle_timeout: idle_duration(idle_timeout_s)?,
        rcvbuf,
        duration: duration_s
            .filter(|d| d.is_finite() && *d > 0.0)
            .map(std::time::Duration::from_secs_f64),
        trace,
        aead: aead.as_deref().map(parse_suite).transpose()?,
        ack_every: match ack_every {
            Some(0) => return Err(PyValueError::new_err("ack_every: at least 1")),
            n => n,
        },
    };
    let stop = AtomicBool::new(false);
    let interrupted = AtomicBool::new(false);
    let failure: std::sync::Mutex<Option<PyErr>> = std::sync::Mutex::new(None);
    let summary = py
        .allow_threads(|| {
            catch_unwind(AssertUnwindSafe(|| {
                run_get(opts, &stop, |client, _| {
                    Python::with_gil(|py| {
                        if let Some(cb) = progress.as_ref() {
                            let args = (
                                client.delivered_bytes(),
                                client.total(),
                                client.bytes_received.clone(),
                            );
                            match cb.call1(py, args) {
                                Ok(_) => {}
                                // Ctrl-C while the callback ran: an interruption, whose
                                // partial file is kept and reported, not a failure.
                                Err(e)
                                    if e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(
                                        py,
                                    ) =>
                                {
                                    interrupted.store(true, Ordering::Relaxed);
                                    stop.store(true, Ordering::Relaxed);
                                }
                                Err(e) => {
                                    *failure.lock().expect("one thread") = Some(e);
                                    stop.store(true, Ordering::Relaxed);
                                }
                            }
                        }
                        if py.check_signals().is_err() {
                            interrupted.store(true, Ordering::Relaxed);
                            stop.store(true, Ordering::Relaxed);
                        }
                    });
                })
            }))
        })
        .map_err(panic_message)?
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    if let Some(e) = failure.into_inner().expect("one thread") {
        return Err(e);
    }
    let json = summary.to_json();
    let traces = summary
        .traces
        .map(|t| get_traces_to_py(py, t))
        .transpose()?;
    // Ctrl-C: what arrived is reported, marked as interrupted.
    let json = if interrupted.load(Ordering::Relaxed) {
        format!("{}, \"interrupted\": true}}", &json[..json.len() - 1])
    } else {
        json
    };
    Ok((json, traces))
}

/// An AEAD suite by name (`aes-128-gcm`, `chacha20-poly1305`).
#[cfg(target_os = "linux")]
fn parse_suite(name: &str) -> PyResult<mpsched_udp::aead::Suite> {
    use mpsched_udp::aead::Suite;
    Suite::parse(name).ok_or_else(|| {
        let known: Vec<&str> = Suite::ALL.iter().map(|s| s.name()).collect();
        PyValueError::new_err(format!(
            "aead: unknown suite '{name}' (known: {})",
            known.join(", ")
        ))
    })
}

/// The client's trace tables as `table_from_columns` reads them: `segments` and `connection`
/// with the columns a receiver sees.
#[cfg(target_os = "linux")]
fn get_traces_to_py(py: Python<'_>, t: mpsched_udp::app::GetTraces) -> PyResult<Bound<'_, PyDict>> {
    let table = |columns: Vec<(&str, Column)>| -> PyResult<Bound<'_, PyDict>> {
        let d = PyDict::new(py);
        for (name, col) in &columns {
            d.set_item(name, column_to_py(py, col)?)?;
        }
        Ok(d)
    };
    let d = t.delivery;
    let ooo: Vec<u64> = d
        .delivered_ns
        .iter()
        .zip(&d.first_received_ns)
        .map(|(a, b)| a.saturating_sub(*b))
        .collect();
    let segments = table(vec![
        (
            "dseq",
            Column::U64((0..d.delivered_ns.len() as u64).collect()),
        ),
        ("len_bytes", Column::U32(d.len_bytes)),
        ("subflow", Column::U8(d.subflow)),
        ("t_first_received_ns", Column::U64(d.first_received_ns)),
        ("t_delivered_ns", Column::U64(d.delivered_ns)),
        ("ooo_delay_ns", Column::U64(ooo)),
    ])?;
    let connection = table(vec![
        ("t_ns", Column::U64(t.t_ns)),
        ("reorder_bytes", Column::U64(t.reorder_bytes)),
        ("rcvbuf_used_bytes", Column::U64(t.rcvbuf_used_bytes)),
        ("rcvbuf_bytes", Column::U64(t.rcvbuf_bytes)),
        ("rwnd_bytes", Column::U64(t.rwnd_bytes)),
        ("bytes_delivered", Column::U64(t.bytes_delivered)),
    ])?;
    let out = PyDict::new(py);
    out.set_item("segments", segments)?;
    out.set_item("connection", connection)?;
    Ok(out)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(schedulers, m)?)?;
    m.add_function(wrap_pyfunction!(contract, m)?)?;
    #[cfg(target_os = "linux")]
    m.add_function(wrap_pyfunction!(emulator_main, m)?)?;
    #[cfg(target_os = "linux")]
    m.add_function(wrap_pyfunction!(udp_serve, m)?)?;
    #[cfg(target_os = "linux")]
    m.add_function(wrap_pyfunction!(udp_get, m)?)?;
    #[cfg(target_os = "linux")]
    m.add_function(wrap_pyfunction!(udp_keygen, m)?)?;
    #[cfg(target_os = "linux")]
    m.add_function(wrap_pyfunction!(udp_check_secret, m)?)?;
    m.add_function(wrap_pyfunction!(bench_event_queue, m)?)?;
    m.add_function(wrap_pyfunction!(bench_scenarios, m)?)?;
    m.add_class::<pysched::PySubflowView>()?;
    m.add_class::<pysched::PyCtx>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
