//! The verbs every table starts with.

use crate::verbs::verb::VerbTable;

impl VerbTable {
    /// A table holding only the built-in verbs: introspection (`system.listMethods`,
    /// `system.methodHelp`, `system.methodSignature`, `rpc.discover`),
    /// `system.multicall`, and event subscriptions (`subscribe`, `unsubscribe`).
    pub fn new() -> Self {
        let mut t = VerbTable::default();
        crate::verbs::introspect::register(&mut t);
        crate::verbs::openrpc::register(&mut t);
        crate::verbs::multicall::register(&mut t);
        crate::verbs::subscriptions::register(&mut t);
        t
    }
}
