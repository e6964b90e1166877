//! The Python bindings: a thin layer over `mpsched-sim`. Nothing panics across the boundary:
//! bad input becomes `ValueError`, an internal panic becomes `RuntimeError`.

use mpsched_core::sched::registry;
use mpsched_sim::{run_json, Traces};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::panic::{catch_unwind, AssertUnwindSafe};

fn le_bytes<T: Copy, const N: usize>(v: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
    let mut out = Vec::with_capacity(v.len() * N);
    for &x in v {
        out.extend_from_slice(&f(x));
    }
    out
}

fn columns<'py>(py: Python<'py>, cols: Vec<(&str, &str, Vec<u8>)>) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (name, dtype, bytes) in cols {
        d.set_item(name, (dtype, PyBytes::new(py, &bytes)))?;
    }
    Ok(d)
}

fn traces_to_py<'py>(py: Python<'py>, t: &Traces) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    let a = &t.acks;
    out.set_item(
        "acks",
        columns(
            py,
            vec![
                ("t_ns", "u64", le_bytes(&a.t_ns, u64::to_le_bytes)),
                ("subflow", "u8", a.subflow.clone()),
                (
                    "data_ack_bytes",
                    "u64",
                    le_bytes(&a.data_ack_bytes, u64::to_le_bytes),
                ),
                (
                    "data_ack_step_bytes",
                    "u64",
                    le_bytes(&a.data_ack_step_bytes, u64::to_le_bytes),
                ),
                (
                    "cwnd_segments",
                    "u32",
                    le_bytes(&a.cwnd_segments, u32::to_le_bytes),
                ),
                (
                    "in_flight_segments",
                    "u32",
                    le_bytes(&a.in_flight_segments, u32::to_le_bytes),
                ),
                (
                    "free_cwnd_segments",
                    "u32",
                    le_bytes(&a.free_cwnd_segments, u32::to_le_bytes),
                ),
                ("srtt_ns", "u64", le_bytes(&a.srtt_ns, u64::to_le_bytes)),
            ],
        )?,
    )?;
    // Both per-segment streams are in data sequence order: zip them.
    let n = t
        .sent
        .first_sent_ns
        .len()
        .min(t.delivery.delivered_ns.len());
    let dseq: Vec<u64> = (0..n as u64).collect();
    let s = &t.sent;
    let d = &t.delivery;
    out.set_item(
        "segments",
        columns(
            py,
            vec![
                ("dseq", "u64", le_bytes(&dseq, u64::to_le_bytes)),
                (
                    "len_bytes",
                    "u32",
                    le_bytes(&d.len_bytes[..n], u32::to_le_bytes),
                ),
                ("subflow", "u8", d.subflow[..n].to_vec()),
                (
                    "transmissions",
                    "u16",
                    le_bytes(&s.transmissions[..n], u16::to_le_bytes),
                ),
                (
                    "t_first_sent_ns",
                    "u64",
                    le_bytes(&s.first_sent_ns[..n], u64::to_le_bytes),
                ),
                (
                    "t_first_received_ns",
                    "u64",
                    le_bytes(&d.first_received_ns[..n], u64::to_le_bytes),
                ),
                (
                    "t_delivered_ns",
                    "u64",
                    le_bytes(&d.delivered_ns[..n], u64::to_le_bytes),
                ),
            ],
        )?,
    )?;
    let sc = &t.scheduler;
    let sched = PyDict::new(py);
    let t_ns: Vec<u64> = sc.iter().map(|s| s.t.as_nanos()).collect();
    let value: Vec<f64> = sc.iter().map(|s| s.value).collect();
    sched.set_item(
        "t_ns",
        ("u64", PyBytes::new(py, &le_bytes(&t_ns, u64::to_le_bytes))),
    )?;
    sched.set_item("key", ("str", sc.iter().map(|s| s.key).collect::<Vec<_>>()))?;
    sched.set_item(
        "value",
        ("f64", PyBytes::new(py, &le_bytes(&value, f64::to_le_bytes))),
    )?;
    out.set_item("scheduler", sched)?;
    Ok(out)
}

/// Runs a normalized scenario (JSON). Returns (summary JSON, traces or None).
#[pyfunction]
#[pyo3(signature = (config_json, trace=false))]
fn run<'py>(
    py: Python<'py>,
    config_json: &str,
    trace: bool,
) -> PyResult<(String, Option<Bound<'py, PyDict>>)> {
    let json = config_json.to_owned();
    let result =
        py.allow_threads(move || catch_unwind(AssertUnwindSafe(|| run_json(&json, trace))));
    let out = match result {
        Ok(Ok(out)) => out,
        Ok(Err(msg)) => return Err(PyValueError::new_err(msg)),
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            return Err(PyRuntimeError::new_err(format!("simulator failure: {msg}")));
        }
    };
    let summary = serde_json_string(&out.summary)?;
    let traces = match &out.traces {
        Some(t) => Some(traces_to_py(py, t)?),
        None => None,
    };
    Ok((summary, traces))
}

fn serde_json_string(s: &mpsched_sim::Summary) -> PyResult<String> {
    mpsched_sim::summary_json(s).map_err(|e| PyRuntimeError::new_err(e.to_string()))
}

/// (name, description, source) of every registered scheduler.
#[pyfunction]
fn schedulers() -> Vec<(&'static str, &'static str, &'static str)> {
    registry()
        .map(|s| (s.name, s.description, s.source))
        .collect()
}

/// Million push/pop pairs per second of a bare binary-heap event loop.
#[pyfunction]
#[pyo3(signature = (events=5_000_000, pending=1024))]
fn bench_event_queue(py: Python<'_>, events: u64, pending: u64) -> f64 {
    py.allow_threads(|| mpsched_sim::bench_event_queue(events, pending.max(1)))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(schedulers, m)?)?;
    m.add_function(wrap_pyfunction!(bench_event_queue, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
