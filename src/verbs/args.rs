//! Arguments of one call, already mapped onto the verb's declared parameter order.

use rpcmux_value::{RpcError, Value};

/// The values of a call's parameters, in declaration order; an optional parameter
/// the caller left out is `Value::Nil`.
#[derive(Debug, Default)]
pub struct Args {
    names: &'static [&'static str],
    values: Vec<Value>,
}

impl Args {
    pub(crate) fn new(names: &'static [&'static str], values: Vec<Value>) -> Self {
        Args { names, values }
    }

    /// How many parameters the verb declares (left-out optional ones read as nil).
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether the verb declares no parameters.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Take parameter `i` as `T`; a type mismatch is invalid-params naming the parameter.
    pub fn take<T>(&mut self, i: usize) -> Result<T, RpcError>
    where
        T: TryFrom<Value>,
        T::Error: std::fmt::Display,
    {
        let v = self.take_value(i);
        T::try_from(v).map_err(|e| RpcError::invalid_params(format!("{}: {e}", self.name(i))))
    }

    /// Take parameter `i` as `T`, or `None` if it was left out (or sent as nil).
    pub fn take_opt<T>(&mut self, i: usize) -> Result<Option<T>, RpcError>
    where
        T: TryFrom<Value>,
        T::Error: std::fmt::Display,
    {
        match self.values.get(i) {
            None | Some(Value::Nil) => Ok(None),
            Some(_) => self.take(i).map(Some),
        }
    }

    /// Take parameter `i` as it came, whatever its type.
    pub fn take_value(&mut self, i: usize) -> Value {
        self.values
            .get_mut(i)
            .map(std::mem::take)
            .unwrap_or_default()
    }

    fn name(&self, i: usize) -> &str {
        self.names.get(i).copied().unwrap_or("param")
    }
}
