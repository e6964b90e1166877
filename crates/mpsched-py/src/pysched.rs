//! Schedulers written in Python: a Python object with a `next(ctx)` method (and optionally
//! `on_data_ack(now_ns, acked, left_edge_subflows)`) behind the Rust `Scheduler` trait.
//!
//! `ctx` is a `SchedContext` valid only during the call: it reads the same views a Rust
//! scheduler reads and can `penalize` and `record`. `next` returns None (send nothing now),
//! `(dseq, subflow)`, `(dseq, [subflows])`, or either with a reason string as third element
//! ("new", "reinjection", "opportunistic", "redundant"). A Python exception, or a decision the
//! connection cannot carry out, stops the scheduler; the run then raises that error.

use mpsched_core::sched::{
    Decision, Reason, SchedCtx, Scheduler, SubflowSet, SubflowView, ViewValue,
};
use mpsched_core::Time;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use pyo3::IntoPyObjectExt;
use std::cell::RefCell;
use std::rc::Rc;

/// Defines `PySubflowView`, one subflow as a Python scheduler sees it, from the fields the core
/// declares (`mpsched_core::subflow_view_fields!`, `SubflowView::FIELDS`), naming none of them.
/// Each attribute holds its plain value (`ViewValue::plain`), computed once per view, and
/// `get_all` reads it.
macro_rules! py_subflow_view {
    (
        stored { $($field:ident => $py:ident : $ty:ty,)* }
        derived { $($method:ident => $dpy:ident : $dty:ty,)* }
    ) => {
        /// One subflow as a Python scheduler sees it.
        #[pyclass(frozen, get_all, name = "SubflowView", module = "mpsched._native")]
        pub struct PySubflowView {
            $( $py: $ty, )*
            $( $dpy: $dty, )*
        }

        impl PySubflowView {
            fn of(v: &SubflowView) -> PySubflowView {
                PySubflowView {
                    $( $py: ViewValue::plain(&v.$field), )*
                    $( $dpy: ViewValue::plain(&v.$method()), )*
                }
            }

            /// Every attribute, by name, as Python values.
            fn items<'py>(&self, py: Python<'py>) -> PyResult<Vec<(&'static str, PyValue<'py>)>> {
                Ok(vec![
                    $( (stringify!($py), self.$py.into_bound_py_any(py)?), )*
                    $( (stringify!($dpy), self.$dpy.into_bound_py_any(py)?), )*
                ])
            }
        }
    };
}

type PyValue<'py> = Bound<'py, PyAny>;

mpsched_core::subflow_view_fields!(py_subflow_view);

#[pymethods]
impl PySubflowView {
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let fields = self
            .items(py)?
            .into_iter()
            .map(|(name, value)| Ok(format!("{name}={}", value.repr()?)))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(format!("SubflowView({})", fields.join(", ")))
    }
}

/// The scheduler's view of the connection during one call of `next`.
#[pyclass(unsendable, name = "SchedContext", module = "mpsched._native")]
pub struct PyCtx {
    /// Points at the live `SchedCtx` for the duration of the call, null afterwards.
    ctx: *mut (),
}

impl PyCtx {
    // The context is borrowed mutably by the caller of `next` for the whole Python call; this
    // object only lends it out, and Python runs single-threaded under the GIL.
    #[allow(clippy::mut_from_ref)]
    fn get(&self) -> PyResult<&mut SchedCtx<'static>> {
        if self.ctx.is_null() {
            return Err(PyRuntimeError::new_err(
                "the scheduler context is only valid during the call to next()",
            ));
        }
        // Safety: `ctx` is set from a `&mut SchedCtx` that outlives the Python call (see
        // `PyScheduler::next`) and cleared before that borrow ends.
        Ok(unsafe { &mut *(self.ctx as *mut SchedCtx<'static>) })
    }
}

#[pymethods]
impl PyCtx {
    /// Virtual time in nanoseconds.
    #[getter]
    fn now_ns(&self) -> PyResult<u64> {
        Ok(self.get()?.now.as_nanos())
    }
    /// Every subflow, indexed by id.
    #[getter]
    fn subflows(&self) -> PyResult<Vec<PySubflowView>> {
        Ok(self
            .get()?
            .subflows()
            .iter()
            .map(PySubflowView::of)
            .collect())
    }
    /// Left edge of the send window (oldest data segment not yet Data-ACKed).
    #[getter]
    fn data_una(&self) -> PyResult<u64> {
        Ok(self.get()?.data_una())
    }
    /// One past the last data segment written by the application.
    #[getter]
    fn written_end(&self) -> PyResult<u64> {
        Ok(self.get()?.written_end())
    }
    /// The first data segment never sent on any subflow, or None.
    fn first_unsent(&self) -> PyResult<Option<u64>> {
        Ok(self.get()?.first_unsent())
    }
    /// Up to `limit` never-sent data segments, in order.
    #[pyo3(signature = (limit=64))]
    fn unsent(&self, limit: usize) -> PyResult<Vec<u64>> {
        Ok(self.get()?.unsent().take(limit).collect())
    }
    /// Whether the peer's receive window admits data segment `dseq`.
    fn in_window(&self, dseq: u64) -> PyResult<bool> {
        Ok(self.get()?.in_window(dseq))
    }
    /// Ids of the subflows `dseq` has been sent on.
    fn sent_on(&self, dseq: u64) -> PyResult<Vec<usize>> {
        Ok(self.get()?.sent_on(dseq).iter().collect())
    }
    /// Data segments waiting to be reinjected after a subflow timed out, oldest first.
    fn reinject_queue(&self) -> PyResult<Vec<u64>> {
        Ok(self.get()?.reinject_queue().collect())
    }
    #[getter]
    fn window_bytes(&self) -> PyResult<u64> {
        Ok(self.get()?.window_bytes())
    }
    /// Payload bytes of a full data segment (1,424 for MPTCP).
    #[getter]
    fn mss(&self) -> PyResult<u32> {
        Ok(self.get()?.mss())
    }
    #[getter]
    fn sndbuf_full(&self) -> PyResult<bool> {
        Ok(self.get()?.sndbuf_full())
    }
    #[getter]
    fn bytes_sent(&self) -> PyResult<u64> {
        Ok(self.get()?.bytes_sent())
    }
    /// Halve subflow `sf`'s window (the out-of-tree MPTCP penalisation).
    fn penalize(&self, sf: usize) -> PyResult<()> {
        let ctx = self.get()?;
        if sf >= ctx.subflows().len() {
            return Err(PyValueError::new_err(format!("penalize: no subflow {sf}")));
        }
        ctx.penalize(sf);
        Ok(())
    }
    /// Records a value over time (the `scheduler` trace); keys are interned.
    fn record(&self, key: &str, value: f64) -> PyResult<()> {
        let key: &'static str = intern(key);
        self.get()?.record(key, value);
        Ok(())
    }
}

/// Scheduler trace keys must be `'static`; Python's are few, so leak each once.
fn intern(key: &str) -> &'static str {
    thread_local! {
        static KEYS: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) };
    }
    KEYS.with(|k| {
        let mut k = k.borrow_mut();
        if let Some(s) = k.iter().find(|s| **s == key) {
            return *s;
        }
        let s: &'static str = Box::leak(key.to_owned().into_boxed_str());
        k.push(s);
        s
    })
}

/// Set when a scheduler's Python code was interrupted (Ctrl-C), whose `KeyboardInterrupt` the
/// scheduler's error took: a long-running caller (`udp_serve`) stops on it.
static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether a scheduler's Python code was interrupted since the last call.
pub fn take_interrupt() -> bool {
    INTERRUPTED.swap(false, std::sync::atomic::Ordering::Relaxed)
}

/// The first error a scheduler's Python code raised since the last call: a long-running
/// caller stops on it rather than serve with a scheduler that sends nothing more.
static FAILURE: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

pub fn take_failure() -> Option<String> {
    FAILURE.lock().ok().and_then(|mut f| f.take())
}

pub struct PyScheduler {
    obj: Py<PyAny>,
    name: &'static str,
    has_on_data_ack: bool,
    /// The first error; once set the scheduler sends nothing more.
    pub error: Rc<RefCell<Option<PyErr>>>,
}

/// Its state lives in the Python object: the name says which.
impl std::fmt::Debug for PyScheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PyScheduler")
            .field("name", &self.name)
            .finish()
    }
}

impl PyScheduler {
    pub fn new(py: Python<'_>, obj: Py<PyAny>) -> PyResult<PyScheduler> {
        let b = obj.bind(py);
        if !b.hasattr("next")? {
            return Err(PyValueError::new_err(
                "connection.scheduler: a Python scheduler needs a next(ctx) method",
            ));
        }
        let name = b.get_type().name()?.to_string();
        Ok(PyScheduler {
            has_on_data_ack: b.hasattr("on_data_ack")?,
            name: Box::leak(name.into_boxed_str()),
            obj,
            error: Rc::new(RefCell::new(None)),
        })
    }

    fn fail(&self, e: PyErr) {
        if Python::with_gil(|py| e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py)) {
            // Ctrl-C arrived while Python ran the scheduler: it is the caller's to see.
            INTERRUPTED.store(true, std::sync::atomic::Ordering::Relaxed);
        } else if let Ok(mut first) = FAILURE.lock() {
            first.get_or_insert_with(|| format!("{}: {e}", self.name));
        }
        let mut slot = self.error.borrow_mut();
        if slot.is_none() {
            *slot = Some(e);
        }
    }

    fn decode(&self, ctx: &SchedCtx, ret: &Bound<'_, PyAny>) -> PyResult<Option<Decision>> {
        if ret.is_none() {
            return Ok(None);
        }
        let bad = |why: String| {
            PyValueError::new_err(format!("{}.next() returned {ret}: {why}", self.name))
        };
        let t = ret
            .downcast::<PyTuple>()
            .map_err(|_| bad("expected None or a tuple (dseq, subflow[s][, reason])".into()))?;
        if !(2..=3).contains(&t.len()) {
            return Err(bad("expected (dseq, subflow[s][, reason])".into()));
        }
        let dseq: u64 = t
            .get_item(0)?
            .extract()
            .map_err(|_| bad("dseq must be an int".into()))?;
        let item = t.get_item(1)?;
        let ids: Vec<usize> = match item.extract::<usize>() {
            Ok(i) => vec![i],
            Err(_) => item
                .extract()
                .map_err(|_| bad("subflows must be an int or a list of ints".into()))?,
        };
        let reason = if t.len() == 3 {
            match t.get_item(2)?.extract::<String>()?.as_str() {
                "new" => Reason::New,
                "reinjection" => Reason::Reinjection,
                "opportunistic" => Reason::Opportunistic,
                "redundant" => Reason::Redundant,
                r => return Err(bad(format!("unknown reason '{r}'"))),
            }
        } else if ctx.sent_on(dseq).is_empty() {
            Reason::New
        } else {
            Reason::Reinjection
        };
        let views = ctx.subflows();
        let mut set = SubflowSet::EMPTY;
        for i in ids {
            let Some(v) = views.get(i) else {
                return Err(bad(format!("there is no subflow {i}")));
            };
            if !v.established || v.cwnd_space == 0 {
                return Err(bad(format!("subflow {i} has no congestion-window space")));
            }
            set.insert(i);
        }
        if set.is_empty() {
            return Err(bad("no subflow given".into()));
        }
        if dseq < ctx.data_una() || dseq >= ctx.written_end() {
            return Err(bad(format!(
                "data segment {dseq} is not outstanding (range {}..{})",
                ctx.data_una(),
                ctx.written_end()
            )));
        }
        if !ctx.in_window(dseq) {
            return Err(bad(format!(
                "data segment {dseq} is beyond the receive window"
            )));
        }
        Ok(Some(Decision {
            dseq,
            subflows: set,
            reason,
        }))
    }
}

impl Scheduler for PyScheduler {
    fn name(&self) -> &'static str {
        self.name
    }

    fn next(&mut self, ctx: &mut SchedCtx) -> Option<Decision> {
        if self.error.borrow().is_some() {
            return None;
        }
        Python::with_gil(|py| {
            let pyctx = match Bound::new(
                py,
                PyCtx {
                    ctx: ctx as *mut SchedCtx as *mut (),
                },
            ) {
                Ok(c) => c,
                Err(e) => {
                    self.fail(e);
                    return None;
                }
            };
            let ret = self.obj.bind(py).call_method1("next", (pyctx.clone(),));
            // The context dies with this call.
            pyctx.borrow_mut().ctx = std::ptr::null_mut();
            match ret.and_then(|r| self.decode(ctx, &r)) {
                Ok(d) => d,
                Err(e) => {
                    self.fail(e);
                    None
                }
            }
        })
    }

    fn on_data_ack(&mut self, now: Time, acked: u64, left_edge_subflows: SubflowSet) {
        if !self.has_on_data_ack || self.error.borrow().is_some() {
            return;
        }
        Python::with_gil(|py| {
            let ids: Vec<usize> = left_edge_subflows.iter().collect();
            if let Err(e) = self
                .obj
                .bind(py)
                .call_method1("on_data_ack", (now.as_nanos(), acked, ids))
            {
                self.fail(e);
            }
        });
    }
}
