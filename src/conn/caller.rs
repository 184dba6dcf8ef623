//! Who is calling on a connection (or an HTTP request), when authentication is on.

use rpcmux_auth::{Auth, Decision, Principal};
use std::sync::{Arc, RwLock};

/// The policy in force and the principal of one connection (stream protocols, where
/// `rpc.login` or STOMP `login` binds it once) or of one HTTP request (its
/// `Authorization`). Shared by every call's context; only present with `--auth`.
pub struct Caller {
    auth: Arc<Auth>,
    who: RwLock<Option<Principal>>,
}

impl std::fmt::Debug for Caller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caller")
            .field("who", &self.principal().map(|p| p.name_arc().clone()))
            .finish()
    }
}

impl Caller {
    /// A caller checked against `auth`, proved as `who` so far (`None`: anonymous).
    pub fn new(auth: Arc<Auth>, who: Option<Principal>) -> Arc<Self> {
        Arc::new(Caller {
            auth,
            who: RwLock::new(who),
        })
    }

    /// The policy this caller is checked against.
    pub fn auth(&self) -> &Arc<Auth> {
        &self.auth
    }

    /// Its principal now, if it has proved one and the proof still holds: an expired
    /// token names nobody, wherever it is read (`whoami`, the gateway's
    /// `X-Rpcmux-Principal`, `.authenticated()` verbs, the access log).
    pub fn principal(&self) -> Option<Principal> {
        let who = self.who.read().ok().and_then(|w| w.clone());
        who.filter(Principal::is_current)
    }

    /// Bind `who` to the connection: every later call on it is `who`'s.
    pub fn bind(&self, who: Principal) {
        if let Ok(mut w) = self.who.write() {
            *w = Some(who);
        }
    }

    /// May it call `verb` (the verb's registered name)?
    pub fn allows(&self, verb: &str) -> Decision {
        match self.who.read() {
            Ok(w) => self.auth.allows(w.as_ref(), verb),
            Err(_) => Decision::Forbidden,
        }
    }

    /// May it receive the event named `event`?
    pub fn sees(&self, event: &str) -> bool {
        match self.who.read() {
            Ok(w) => self.auth.sees(w.as_ref(), event),
            Err(_) => false,
        }
    }
}
