//! Looking verbs up by name (verbs, aliases, upstream verbs served now).

use crate::verbs::register_error::RegisterError;
use crate::verbs::verb::{Run, Verb, VerbTable};
use std::sync::Arc;

impl VerbTable {
    /// Make `alias` call `target`.
    ///
    /// An error if `alias` is already a verb or an alias: a name means one thing.
    pub fn alias(&mut self, alias: &str, target: &str) -> Result<&mut Self, RegisterError> {
        self.claim(alias)?;
        self.aliases.insert(alias.to_owned(), target.to_owned());
        Ok(self)
    }

    /// Refuse a name that is taken.
    pub(crate) fn claim(&self, name: &str) -> Result<(), RegisterError> {
        match self.contains(name) {
            true => Err(RegisterError::taken(name)),
            false => Ok(()),
        }
    }

    /// Whether `name` is taken, as a verb or an alias: a caller registering names it
    /// does not choose (the gateway, from an upstream's list) checks first and skips a
    /// taken one rather than handle the error registering it would give.
    pub fn contains(&self, name: &str) -> bool {
        self.verbs.contains_key(name) || self.aliases.contains_key(name)
    }

    /// The verb `name` calls (following aliases), the table's own or, failing that, an
    /// upstream verb served right now.
    pub fn get(&self, name: &str) -> Option<Arc<Verb>> {
        self.own(name).cloned().or_else(|| self.extra.get(name))
    }

    /// The table's own verb `name` (following aliases): no lock, no refcount.
    fn own(&self, name: &str) -> Option<&Arc<Verb>> {
        self.verbs
            .get(name)
            .or_else(|| self.aliases.get(name).and_then(|t| self.verbs.get(t)))
    }

    /// Does `method` name a typed verb (which reads its parameters from the wire itself)?
    /// Only the table's own verbs can be: changing verbs are passthrough.
    pub(crate) fn is_typed(&self, method: &str) -> bool {
        self.own(method)
            .is_some_and(|v| matches!(v.run, Run::Typed(_)))
    }

    /// Every verb, the table's own and the upstream verbs served right now, sorted by
    /// name (aliases not included).
    pub fn verbs(&self) -> Vec<Arc<Verb>> {
        let extra = self.extra.snapshot();
        let mut v: Vec<_> = self.verbs.values().chain(extra.values()).cloned().collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }

    /// Take the verbs out of a table built only to hold them (the gateway builds its
    /// upstream verbs in one, then serves them as the changing set).
    #[cfg(feature = "gateway")]
    pub(crate) fn into_verbs(self) -> crate::verbs::verb::VerbSet {
        self.verbs
    }

    /// The aliases of `target`, sorted.
    pub fn aliases_of(&self, target: &str) -> Vec<&str> {
        let mut v: Vec<&str> = self
            .aliases
            .iter()
            .filter(|(_, t)| *t == target)
            .map(|(a, _)| a.as_str())
            .collect();
        v.sort();
        v
    }

    /// Every callable name, verbs and aliases, sorted.
    pub fn names(&self) -> Vec<String> {
        let extra = self.extra.snapshot();
        let mut v: Vec<String> = self
            .verbs
            .keys()
            .chain(self.aliases.keys())
            .chain(extra.keys())
            .cloned()
            .collect();
        v.sort();
        v
    }

    /// Look `method` up once: the table's own verbs first, without a lock, then the
    /// upstream verbs served now. A framer that decides by the verb's kind (grouping
    /// forwarded calls) looks it up here and dispatches with [`Self::dispatch_found`].
    pub(crate) fn find(&self, method: &str) -> Found<'_> {
        match self.own(method) {
            Some(v) => Found::Local(v),
            None => Found::Upstream(self.extra.get(method).or_else(|| self.fallback.clone())),
        }
    }
}

/// A verb as [`VerbTable::find`] found it.
pub(crate) enum Found<'a> {
    /// One of the table's own (Rust, built-in, demo): never grouped.
    Local(&'a Arc<Verb>),
    /// An upstream verb served now, or no verb of that name.
    Upstream(Option<Arc<Verb>>),
}

impl Found<'_> {
    pub(crate) fn verb(&self) -> Option<&Arc<Verb>> {
        match self {
            Found::Local(v) => Some(v),
            Found::Upstream(v) => v.as_ref(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verbs::CallContext;
    use rpcmux_value::{Params, RpcError, Value};
    use std::sync::Arc;

    use crate::events::EventHub;
    use rpcmux_value::Map;

    fn table() -> VerbTable {
        let mut t = VerbTable::new();
        t.verb("VM.create")
            .param("vmID")
            .param("name")
            .optional("memSize")
            .handler(|mut a, _| async move {
                let id: String = a.take(0)?;
                let name: String = a.take(1)?;
                let mem: Option<i64> = a.take_opt(2)?;
                Ok(Value::from(format!("{id}/{name}/{mem:?}")))
            })
            .unwrap();
        t.verb("boom")
            .handler(|_, _| async { panic!("kaboom") })
            .unwrap();
        t.verb("boom.sync")
            .handler(|_, _| -> std::future::Ready<_> { panic!("sync kaboom") })
            .unwrap();
        t.alias("create", "VM.create").unwrap();
        t
    }

    fn call(t: &VerbTable, m: &str, p: Params) -> Result<Value, RpcError> {
        let ctx = CallContext::new("test", Arc::new(EventHub::default()));
        futures_util::FutureExt::now_or_never(t.call(m, p, ctx)).expect("ready")
    }

    fn pos(v: Vec<Value>) -> Params {
        Params::Positional(v)
    }

    fn named(kv: &[(&str, Value)]) -> Params {
        Params::Named(
            kv.iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect::<Map>(),
        )
    }

    #[test]
    fn positional_and_named_map_alike() {
        let t = table();
        let want = Ok(Value::from("a/b/Some(5)"));
        assert_eq!(
            call(&t, "VM.create", pos(vec!["a".into(), "b".into(), 5.into()])),
            want
        );
        let p = named(&[
            ("memSize", 5.into()),
            ("name", "b".into()),
            ("vmID", "a".into()),
        ]);
        assert_eq!(call(&t, "VM.create", p), want);
        let short = Ok(Value::from("a/b/None"));
        assert_eq!(call(&t, "create", pos(vec!["a".into(), "b".into()])), short);
        let p = named(&[("name", "b".into()), ("vmID", "a".into())]);
        assert_eq!(call(&t, "VM.create", p), short);
    }

    #[test]
    fn parameter_errors_are_invalid_params() {
        let t = table();
        for p in [
            pos(vec!["a".into()]),
            pos(vec!["a".into(), "b".into(), 1.into(), 2.into()]),
            pos(vec!["a".into(), 7.into()]),
            named(&[("vmID", "a".into()), ("bogus", 1.into())]),
            named(&[("name", "b".into())]),
            named(&[("vmID", "a".into()), ("memSize", 1.into())]),
        ] {
            let e = call(&t, "VM.create", p.clone()).unwrap_err();
            assert_eq!(e.code, -32602, "{p:?} -> {e}");
        }
        let e = call(&t, "VM.create", pos(vec!["a".into(), 7.into()])).unwrap_err();
        assert!(e.message.contains("name: expected string, got int"), "{e}");
    }

    #[test]
    fn passthrough_takes_params_as_sent_and_shows_given_signatures() {
        let mut t = table();
        t.verb("fwd")
            .signatures(vec![
                vec!["int".into(), "int".into()],
                vec!["string".into()],
            ])
            .passthrough(|p, _| async move {
                Ok(match p {
                    Params::Positional(v) => Value::Array(v),
                    Params::Named(m) => Value::from(m),
                })
            })
            .unwrap();
        let v: Vec<Value> = vec![1.into(), "x".into(), Value::Nil, 4.into()];
        assert_eq!(call(&t, "fwd", pos(v.clone())), Ok(Value::Array(v)));
        let r = call(&t, "fwd", named(&[("anything", 1.into())])).unwrap();
        assert_eq!(r.get("anything"), Some(&Value::Int(1)));
        let sig = call(&t, "system.methodSignature", pos(vec!["fwd".into()])).unwrap();
        assert_eq!(
            sig,
            Value::Array(vec![
                Value::Array(vec!["int".into(), "int".into()]),
                Value::Array(vec!["string".into()]),
            ])
        );
        assert!(t.contains("fwd") && t.contains("create") && !t.contains("nope"));
    }

    #[test]
    fn unknown_verb_and_panics() {
        let t = table();
        assert_eq!(call(&t, "nope", pos(vec![])).unwrap_err().code, -32601);
        assert_eq!(call(&t, "boom", pos(vec![])).unwrap_err().code, -32603);
        assert_eq!(call(&t, "boom.sync", pos(vec![])).unwrap_err().code, -32603);
        // and the table still works afterwards
        assert!(call(&t, "create", pos(vec!["a".into(), "b".into()])).is_ok());
    }
}
