//! Python values to rpcmux's `Value` and back, as `xmlrpc.client` marshals them.
//!
//! Only `Value`'s public constructors and accessors are used (docs/design.md, "the seam
//! between the new `Value` and Python verbs"), so the data model may change behind them.
//! The rules are the standard library's `Marshaller`/`Unmarshaller`: exact types only
//! (a subclass of `int` or `str` is refused, as `xmlrpc.client` refuses it), other
//! objects with a `__dict__` sent as a struct of it, `None` only with `allow_none`,
//! `bytes`/`Binary` and `datetime`/`DateTime` chosen by `use_builtin_types`, and the
//! same error messages, so a fault text reads as the standard library's would.

use pyo3::exceptions::{PyOverflowError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple,
};
use rpcmux::{DateTime, Map, Value};

/// Nesting beyond this is refused (a cyclic list would otherwise recurse for ever; the
/// standard library says "recursive" for those, and so does this message).
const MAX_DEPTH: usize = 256;

/// XML-RPC's `int` is 32 bits: `xmlrpc.client` refuses more, and so does the drop-in on
/// the XML-RPC protocol. The others carry 64.
const XML_INT: std::ops::RangeInclusive<i64> = (i32::MIN as i64)..=(i32::MAX as i64);

/// How a server marshals: the standard library constructor's two switches.
#[derive(Clone, Copy, Debug)]
pub struct Marshal {
    /// `allow_none`: `None` may be answered (it is always accepted in a call).
    pub allow_none: bool,
    /// `use_builtin_types`: `bytes` and `datetime.datetime` in calls, not `Binary` and
    /// `DateTime`.
    pub builtin_types: bool,
}

/// The classes conversion needs, imported once per server.
pub struct Types {
    binary: Py<PyAny>,
    wrapper: Py<PyAny>,
    datetime: Py<PyAny>,
    pub(crate) fault: Py<PyAny>,
}

impl Types {
    /// Import `xmlrpc.client`'s `Binary`, `DateTime`, `Fault` and `datetime.datetime`.
    pub fn import(py: Python<'_>) -> PyResult<Types> {
        let client = py.import("xmlrpc.client")?;
        Ok(Types {
            binary: client.getattr("Binary")?.unbind(),
            wrapper: client.getattr("DateTime")?.unbind(),
            fault: client.getattr("Fault")?.unbind(),
            datetime: py.import("datetime")?.getattr("datetime")?.unbind(),
        })
    }
}

/// One conversion's settings: the server's and the protocol the answer goes out by.
pub struct To<'a> {
    pub marshal: Marshal,
    pub types: &'a Types,
    /// The answer goes out as XML-RPC (32-bit ints).
    pub xml: bool,
}

impl To<'_> {
    /// A Python value as a `Value`; a `TypeError`/`OverflowError` worded as
    /// `xmlrpc.client` words it when it cannot be sent.
    pub fn value(&self, obj: &Bound<'_, PyAny>) -> PyResult<Value> {
        self.at(obj, 0)
    }

    fn at(&self, obj: &Bound<'_, PyAny>, depth: usize) -> PyResult<Value> {
        if depth > MAX_DEPTH {
            return Err(PyTypeError::new_err(format!(
                "cannot marshal recursive or deeper than {MAX_DEPTH} levels structures"
            )));
        }
        if obj.is_exact_instance_of::<PyString>() {
            let s = obj.cast::<PyString>()?.to_cow()?;
            return Ok(Value::from(&*s));
        }
        // bool before int: `bool` is an `int` subclass but its own type.
        if obj.is_exact_instance_of::<PyBool>() {
            return Ok(Value::Bool(obj.is_truthy()?));
        }
        if obj.is_exact_instance_of::<PyInt>() {
            return self.int(obj);
        }
        if obj.is_exact_instance_of::<PyFloat>() {
            return Ok(Value::Double(obj.extract::<f64>()?));
        }
        if obj.is_exact_instance_of::<PyDict>() {
            return self.dict(obj.cast::<PyDict>()?, depth);
        }
        if obj.is_exact_instance_of::<PyList>() || obj.is_exact_instance_of::<PyTuple>() {
            let mut items = Vec::with_capacity(obj.len()?);
            for item in obj.try_iter()? {
                items.push(self.at(&item?, depth + 1)?);
            }
            return Ok(Value::Array(items));
        }
        if obj.is_none() {
            return match self.marshal.allow_none {
                true => Ok(Value::Nil),
                false => Err(PyTypeError::new_err(
                    "cannot marshal None unless allow_none is enabled",
                )),
            };
        }
        if obj.is_exact_instance_of::<PyBytes>() {
            return Ok(Value::Bytes(obj.cast::<PyBytes>()?.as_bytes().to_vec()));
        }
        if obj.is_exact_instance_of::<PyByteArray>() {
            return Ok(Value::Bytes(obj.cast::<PyByteArray>()?.to_vec()));
        }
        let py = obj.py();
        let ty = obj.get_type();
        if ty.is(self.types.datetime.bind(py)) {
            return datetime_of(obj);
        }
        if ty.is(self.types.binary.bind(py)) {
            let data = obj.getattr("data")?;
            return match data.cast::<PyBytes>() {
                Ok(b) => Ok(Value::Bytes(b.as_bytes().to_vec())),
                Err(_) => Ok(Value::Bytes(data.extract::<Vec<u8>>()?)),
            };
        }
        if ty.is(self.types.wrapper.bind(py)) {
            let text: String = obj.getattr("value")?.str()?.extract()?;
            return DateTime::parse(&text).map(Value::DateTime).ok_or_else(|| {
                PyTypeError::new_err(format!("cannot marshal DateTime {text:?}: not a date"))
            });
        }
        self.instance(obj, depth)
    }

    fn int(&self, obj: &Bound<'_, PyAny>) -> PyResult<Value> {
        let refused = || PyOverflowError::new_err("int exceeds XML-RPC limits");
        let i: i64 = obj.extract().map_err(|_| refused())?;
        if self.xml && !XML_INT.contains(&i) {
            return Err(refused());
        }
        Ok(Value::Int(i))
    }

    fn dict(&self, d: &Bound<'_, PyDict>, depth: usize) -> PyResult<Value> {
        let mut m = Map::with_capacity(d.len());
        for (k, v) in d.iter() {
            if !k.is_exact_instance_of::<PyString>() {
                return Err(PyTypeError::new_err("dictionary key must be string"));
            }
            let key = k.cast::<PyString>()?.to_cow()?;
            m.insert(&*key, self.at(&v, depth + 1)?);
        }
        Ok(Value::from(m))
    }

    /// `xmlrpc.client`'s `dump_instance`: an object with a `__dict__` whose class is
    /// no subclass of a marshallable type goes as a struct of its `__dict__`.
    fn instance(&self, obj: &Bound<'_, PyAny>, depth: usize) -> PyResult<Value> {
        let refused = || {
            PyTypeError::new_err(format!(
                "cannot marshal {} objects",
                obj.get_type()
                    .str()
                    .map(|s| s.to_string())
                    .unwrap_or_default()
            ))
        };
        let Ok(attrs) = obj.getattr("__dict__") else {
            return Err(refused());
        };
        let basic = obj.is_instance_of::<PyInt>()
            || obj.is_instance_of::<PyFloat>()
            || obj.is_instance_of::<PyString>()
            || obj.is_instance_of::<PyBytes>()
            || obj.is_instance_of::<PyByteArray>()
            || obj.is_instance_of::<PyList>()
            || obj.is_instance_of::<PyTuple>()
            || obj.is_instance_of::<PyDict>()
            || obj.is_instance(self.types.datetime.bind(obj.py()))?;
        match attrs.cast::<PyDict>() {
            Ok(d) if !basic => self.dict(d, depth + 1),
            _ => Err(refused()),
        }
    }
}

/// A `datetime.datetime`'s fields as they read (a zone is ignored, as `xmlrpc.client`
/// ignores it: it formats the fields).
fn datetime_of(obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    let f = |name: &str| -> PyResult<u32> { obj.getattr(name)?.extract() };
    let year: i32 = obj.getattr("year")?.extract()?;
    let (mo, d, h, mi, s) = (
        f("month")?,
        f("day")?,
        f("hour")?,
        f("minute")?,
        f("second")?,
    );
    DateTime::from_ymd_hms(year, mo, d, h, mi, s)
        .and_then(|dt| {
            let (secs, _) = dt.to_unix();
            DateTime::from_unix(secs, f("microsecond").ok()?.checked_mul(1000)?)
        })
        .map(Value::DateTime)
        .ok_or_else(|| PyTypeError::new_err("cannot marshal this datetime"))
}

/// `Value`s as Python values, as `xmlrpc.client.loads` gives them.
pub struct From<'a> {
    pub marshal: Marshal,
    pub types: &'a Types,
}

impl From<'_> {
    /// A `Value` as a Python object.
    pub fn object<'py>(&self, py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
        Ok(match v {
            Value::Nil => py.None().into_bound(py),
            Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
            Value::Int(i) => i.into_pyobject(py)?.into_any(),
            Value::Double(d) => PyFloat::new(py, *d).into_any(),
            Value::String(s) => PyString::new(py, s).into_any(),
            Value::Bytes(b) => {
                let bytes = PyBytes::new(py, b).into_any();
                match self.marshal.builtin_types {
                    true => bytes,
                    false => self.types.binary.bind(py).call1((bytes,))?,
                }
            }
            Value::DateTime(dt) => self.datetime(py, dt)?,
            Value::Array(items) => {
                let list = PyList::empty(py);
                for item in items {
                    list.append(self.object(py, item)?)?;
                }
                list.into_any()
            }
            Value::Struct(m) => {
                let d = PyDict::new(py);
                for (k, v) in m.iter() {
                    d.set_item(PyString::new(py, k), self.object(py, v)?)?;
                }
                d.into_any()
            }
        })
    }

    /// `datetime.datetime` with `use_builtin_types`, else `xmlrpc.client.DateTime`
    /// holding the wire text; a time `datetime` cannot hold exactly (nanoseconds, a
    /// year outside 1..=9999) is given as the `DateTime` text either way.
    fn datetime<'py>(&self, py: Python<'py>, dt: &DateTime) -> PyResult<Bound<'py, PyAny>> {
        use chrono::{Datelike, Timelike};
        let t = dt.0;
        let nanos = t.nanosecond();
        let exact =
            nanos.is_multiple_of(1000) && nanos < 1_000_000_000 && (1..=9999).contains(&t.year());
        if self.marshal.builtin_types && exact {
            let args = (
                t.year(),
                t.month(),
                t.day(),
                t.hour(),
                t.minute(),
                t.second(),
                nanos / 1000,
            );
            return self.types.datetime.bind(py).call1(args);
        }
        self.types.wrapper.bind(py).call1((dt.to_xmlrpc(),))
    }
}
