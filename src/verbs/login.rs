//! Proving who one is: every kind of credential (HTTP `Authorization`, STOMP
//! `login`/`passcode`, the `rpc.login` verb) is verified through
//! [`VerbTable::login`], which logs and counts the outcome the same way for all.

use crate::codes::ERR_LOGIN_FAILED;
use crate::observe::log_budget::LogBudget;
use crate::verbs::dispatched::Reply;
use crate::verbs::output::Output;
use crate::verbs::RegisterError;
use crate::verbs::{Args, CallContext, Observer, VerbTable};
use rpcmux_auth::{Auth, Credentials, Failure, Principal};
use rpcmux_value::{RpcError, Value};
use std::net::IpAddr;

impl VerbTable {
    /// Verify `credentials` from `source` against `auth`: the outcome is counted
    /// (`rpcmux_logins_total`) and logged (a failure at info, with the user name but
    /// never the secret; the reason at debug).
    pub(crate) async fn login(
        &self,
        auth: &Auth,
        credentials: &Credentials,
        source: IpAddr,
    ) -> Result<Principal, Failure> {
        verify(self.observer.as_deref(), auth, credentials, source).await
    }
}

async fn verify(
    observer: Option<&Observer>,
    auth: &Auth,
    credentials: &Credentials,
    source: IpAddr,
) -> Result<Principal, Failure> {
    let r = auth.login(credentials, source).await;
    let via = match (&r, credentials) {
        (Ok(p), _) => p.via().label(),
        (Err(_), Credentials::Password { .. }) => "password",
        (Err(_), Credentials::Token(_)) => "token",
    };
    let outcome = match &r {
        Ok(_) => "ok",
        Err(f) => f.label(),
    };
    if let Some(m) = observer.and_then(|o| o.metrics.as_ref()) {
        m.logins
            .get_or_create(&crate::observe::metrics::LoginLabels { via, outcome })
            .inc();
    }
    let user = match credentials {
        Credentials::Password { user, .. } => Some(user.chars().take(64).collect::<String>()),
        Credentials::Token(_) => None,
    };
    match &r {
        Ok(p) => tracing::debug!(%source, principal = p.name(), via, "logged in"),
        Err(f) => {
            if let Failure::Rejected { detail } = f {
                tracing::debug!(%source, user, via, detail, "credentials rejected");
            }
            // At most a few lines a second however many guesses arrive (each is
            // counted in rpcmux_logins_total all the same).
            if let Some(suppressed) = FAILED_LOGINS.admit() {
                tracing::info!(%source, user, via, outcome, suppressed, "login failed");
            }
        }
    }
    r
}

/// The log budget of "login failed" lines (one per process: what it protects is the
/// process's log).
static FAILED_LOGINS: std::sync::LazyLock<LogBudget> = std::sync::LazyLock::new(LogBudget::new);

/// Register `rpc.login` (with authentication on: [`crate::Server`] does).
pub(crate) fn register_login(t: &mut VerbTable) -> Result<(), RegisterError> {
    t.verb("rpc.login")
        .typed_param("user", "string", true)
        .typed_param("password", "string", true)
        .typed_param("token", "string", true)
        .returns("struct")
        .help("Prove who you are on this connection, with user and password, or with token (a JWT): every later call on the connection is that principal's. Returns {principal}. On HTTP it lasts for the one request: send an Authorization header instead.")
        .builtin(login)
}

fn login(t: &VerbTable, mut args: Args, ctx: CallContext) -> Reply {
    let parsed = (|| {
        let user: Option<String> = args.take_opt(0)?;
        let password: Option<String> = args.take_opt(1)?;
        let token: Option<String> = args.take_opt(2)?;
        match (user, password, token) {
            (Some(user), Some(password), None) => Ok(Credentials::Password { user, password }),
            (None, None, Some(token)) => Ok(Credentials::Token(token)),
            _ => Err(RpcError::invalid_params(
                "rpc.login takes user and password, or token",
            )),
        }
    })();
    let Some(caller) = ctx.caller.clone() else {
        return ready(Err(RpcError::new(
            ERR_LOGIN_FAILED,
            "authentication is off on this server: every caller may call every verb",
        )));
    };
    let credentials = match parsed {
        Ok(c) => c,
        Err(e) => return ready(Err(e)),
    };
    let source = ctx.source_ip();
    // The verification runs off the async workers (rpcmux-auth); the table is needed
    // only to count it, so the future takes what it needs now.
    let observer = t.observer.clone();
    Box::pin(async move {
        match verify(observer.as_deref(), caller.auth(), &credentials, source).await {
            Ok(p) => {
                let name = p.name().to_owned();
                caller.bind(p);
                let mut reply = rpcmux_value::Map::default();
                reply.insert("principal", Value::from(name));
                Ok(Output::Value(Value::Struct(Box::new(reply))))
            }
            Err(f) => Err(RpcError::new(
                ERR_LOGIN_FAILED,
                format!("login failed: {f}"),
            )),
        }
    })
}

fn ready(r: Result<Output, RpcError>) -> Reply {
    Box::pin(std::future::ready(r))
}
