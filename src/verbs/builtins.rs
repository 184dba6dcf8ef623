//! The verbs every table starts with.

use crate::verbs::verb::VerbTable;

impl VerbTable {
    /// A table holding only the built-in verbs: introspection (`system.listMethods`,
    /// `system.methodHelp`, `system.methodSignature`, `rpc.discover`),
    /// `system.multicall`, and event subscriptions (`subscribe`, `unsubscribe`).
    pub fn new() -> Self {
        let mut t = VerbTable::default();
        // The built-in names are distinct and the table is empty: nothing can clash.
        let builtins = [
            crate::verbs::introspect::register,
            crate::verbs::openrpc::register,
            crate::verbs::multicall::register,
            crate::verbs::subscriptions::register,
        ];
        for register in builtins {
            register(&mut t).expect("the built-in verbs' names are distinct");
        }
        t
    }
}
