//! A table's fallback: one handler for every method name no verb has, and taking a
//! verb back out of a table.
//!
//! For servers whose names are not known when the table is built: Python's
//! `SimpleXMLRPCServer.register_instance` resolves any name (dotted attributes, an
//! instance's `_dispatch`) when it is called, so its names cannot be registered one by
//! one. A fallback is a passthrough verb told the name it was called by; it is
//! observed (metrics, access log) under the name given to [`VerbTable::verb`], so
//! the names callers invent do not grow the metrics.

use crate::verbs::output::Output;
use crate::verbs::register_error::RegisterError;
use crate::verbs::verb::{Run, Verb, VerbTable};
use crate::verbs::{CallContext, VerbBuilder};
use rpcmux_value::{Params, RpcError, Value};
use std::future::Future;
use std::sync::Arc;

impl VerbBuilder<'_> {
    /// Finish as the table's fallback: `f` answers every method name that no verb (nor
    /// alias, nor upstream verb) has, told the name, with the parameters as sent (as
    /// [`VerbBuilder::passthrough`]). The builder's name labels its calls in the
    /// metrics and the access log; its policy (timeout, concurrency) applies to them.
    /// Introspection does not list it. An error if the table has a fallback already.
    ///
    /// ```
    /// use rpcmux::{Value, VerbTable};
    /// let mut verbs = VerbTable::new();
    /// verbs
    ///     .verb("*")
    ///     .fallback(|method, _params, _ctx| {
    ///         let method = method.to_owned();
    ///         async move { Ok(Value::from(format!("you called {method}"))) }
    ///     })
    ///     .unwrap();
    /// ```
    pub fn fallback<F, Fut>(self, f: F) -> Result<(), RegisterError>
    where
        F: Fn(&str, Params, CallContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, RpcError>> + Send + 'static,
    {
        let run = Run::AnyName(Arc::new(move |method: &str, params, ctx| {
            let fut = f(method, params, ctx);
            Box::pin(async move { fut.await.map(Output::Value) })
        }));
        let (table, verb): (&mut VerbTable, Verb) = self.build(run, None);
        if table.fallback.is_some() {
            return Err(RegisterError::taken("(the fallback)"));
        }
        table.fallback = Some(Arc::new(verb));
        Ok(())
    }
}

impl VerbTable {
    /// Take verb `name` out of the table (aliases to it then answer -32601), so that
    /// another can be registered under its name: a server that answers a built-in's
    /// name in its own way (Python's `system.listMethods` lists what Python
    /// registered). `None` if no verb has that name.
    pub fn remove(&mut self, name: &str) -> Option<Arc<Verb>> {
        self.verbs.remove(name)
    }
}

#[cfg(test)]
mod tests {
    use crate::{Params, Value, VerbTable};

    #[tokio::test]
    async fn the_fallback_answers_unknown_names_only_and_removed_verbs_are_gone() {
        let mut verbs = VerbTable::new();
        verbs
            .verb("known")
            .passthrough(|_, _| async { Ok(Value::from("known")) })
            .unwrap();
        verbs
            .verb("*")
            .fallback(|method, params, _| {
                let answer = format!("{method}/{}", params.len());
                async move { Ok(Value::from(answer)) }
            })
            .unwrap();
        assert!(verbs
            .verb("again")
            .fallback(|_, _, _| async { Ok(Value::Nil) })
            .is_err());
        let hub = std::sync::Arc::new(crate::EventHub::default());
        let ctx = crate::CallContext::new("test", hub);
        let r = verbs.call("known", Params::default(), ctx.clone()).await;
        assert_eq!(r.unwrap(), Value::from("known"));
        let r = verbs
            .call("a.b", Params::Positional(vec![Value::Nil]), ctx.clone())
            .await;
        assert_eq!(r.unwrap(), Value::from("a.b/1"));
        assert!(verbs.remove("system.listMethods").is_some());
        assert!(verbs.remove("system.listMethods").is_none());
        let r = verbs
            .call("system.listMethods", Params::default(), ctx)
            .await;
        assert_eq!(r.unwrap(), Value::from("system.listMethods/0"));
    }
}
