//! The credentials file, parsed and compiled.

use crate::jwt::{JwtConfig, JwtKey};
use crate::password;
use crate::PolicyError;
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// A credentials file, parsed and checked: users (argon2id password hashes or none),
/// groups, allow/deny verb globs, event globs, `anonymous`, `[jwt]` keys loaded.
///
/// ```toml
/// anonymous = ["ping", "system.listMethods"]  # callers without credentials (default: none)
///
/// [users.alice]
/// password = "$argon2id$v=19$..."  # `rpcmux passwd`; none: no password login
/// groups = ["operators"]           # each must be a [groups.NAME]
/// allow = ["echo"]                 # the user's own globs, added to its groups'
///
/// [groups.operators]
/// allow = ["VM.*", "Host.*"]       # verb names; `*` any run, `?` one character
/// deny = ["VM.destroy"]            # deny wins, also over `anonymous`
/// events = ["|virt|*"]             # event names this principal receives
///
/// [users.engine]                   # a certificate's or token's name, or the embedder's
/// allow = ["*"]
///
/// [jwt]
/// hs256_secret_file = "jwt.hex"    # 32+ bytes of hex (geth's jwt.hex); relative to the file
/// # public_key_file = "key.pem"    # or an RSA, EC P-256/P-384 or Ed25519 public key
/// audience = "rpcmux"              # if set, `aud` must name it
/// issuer = "me"                    # if set, `iss` must be it
/// leeway = 30                      # seconds of clock skew allowed on exp/nbf (default 30)
/// ```
///
/// An authenticated caller may call what its rules allow plus what `anonymous` allows,
/// minus what its rules deny. A caller without credentials receives no events.
pub struct Policy {
    /// Each user's rules, its groups' merged in at load time: one lookup per call.
    pub(crate) users: HashMap<Box<str>, User, foldhash::fast::RandomState>,
    /// Verb globs anyone may call, with or without credentials.
    pub(crate) anonymous: Vec<Box<str>>,
    /// The token check, if `[jwt]` is configured.
    pub(crate) jwt: Option<JwtKey>,
    /// The PHC string unknown users' passwords are verified against, with the cost of
    /// the costliest of the file's own hashes (see [`password::dummy_for`]).
    pub(crate) dummy_hash: String,
    /// Every verb glob as written and where (`users.alice.allow[0]`), to tell the
    /// operator which match no verb ([`Policy::unmatched_verb_globs`]).
    verb_globs: Vec<(String, Box<str>)>,
}

/// One user of the file, compiled.
pub(crate) struct User {
    /// Its argon2id PHC string, checked at load time; `None`: no password login.
    pub(crate) password: Option<String>,
    pub(crate) rules: Rules,
}

/// Globs of one user, its own and its groups' together.
#[derive(Default)]
pub(crate) struct Rules {
    pub(crate) allow: Vec<Box<str>>,
    pub(crate) deny: Vec<Box<str>>,
    pub(crate) events: Vec<Box<str>>,
}

/// The file as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    anonymous: Vec<String>,
    #[serde(default)]
    users: BTreeMap<String, UserEntry>,
    #[serde(default)]
    groups: BTreeMap<String, GroupEntry>,
    jwt: Option<JwtConfig>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UserEntry {
    password: Option<String>,
    #[serde(default)]
    groups: Vec<String>,
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
    #[serde(default)]
    events: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GroupEntry {
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
    #[serde(default)]
    events: Vec<String>,
}

/// How `from_toml` names text that came from no file.
const TEXT_ORIGIN: &str = "credentials";

impl Policy {
    /// Parse a credentials file's text. Relative paths in it (`hs256_secret_file`,
    /// `public_key_file`) are read from `base`.
    pub fn from_toml(text: &str, base: &Path) -> Result<Policy, PolicyError> {
        Self::parse(text, base, TEXT_ORIGIN)
    }

    /// Read and parse the credentials file at `path`.
    pub fn load(path: &Path) -> Result<Policy, PolicyError> {
        let origin = path.display().to_string();
        let text =
            std::fs::read_to_string(path).map_err(|e| PolicyError::at(&origin, "reading", e))?;
        let base = path.parent().unwrap_or(Path::new("."));
        Self::parse(&text, base, &origin)
    }

    /// An HS256 token for `sub` that this file's `[jwt]` accepts for `ttl` from now
    /// (with its `audience` and `issuer`), for `rpcmux token`. An error when there is
    /// no `[jwt]` or it names a public key.
    pub fn mint_token(&self, sub: &str, ttl: std::time::Duration) -> Result<String, &'static str> {
        self.jwt
            .as_ref()
            .ok_or("no [jwt] section: tokens are not accepted")?
            .mint(sub, ttl)
    }

    /// Whether a user of this name is in the file.
    pub fn has_user(&self, name: &str) -> bool {
        self.users.contains_key(name)
    }

    fn parse(text: &str, base: &Path, origin: &str) -> Result<Policy, PolicyError> {
        let file: File = toml::from_str(text).map_err(|e| toml_error(origin, text, &e))?;
        let mut users = HashMap::with_capacity_and_hasher(file.users.len(), Default::default());
        // The costliest hash of the file: an unknown user's attempt takes as long as the
        // slowest real one's, so no user's hash is timed apart from the unknown.
        let mut costliest: Option<(u64, &str)> = None;
        for (name, entry) in &file.users {
            let password = match &entry.password {
                Some(phc) => {
                    let place = format!("users.{name}.password");
                    password::check_phc(phc).map_err(|why| PolicyError::at(origin, &place, why))?;
                    let cost = password::cost(phc);
                    if costliest.is_none_or(|(c, _)| cost > c) {
                        costliest = Some((cost, phc));
                    }
                    Some(phc.clone())
                }
                None => None,
            };
            let mut rules = Rules::default();
            rules.add(&entry.allow, &entry.deny, &entry.events);
            for group in &entry.groups {
                let Some(g) = file.groups.get(group) else {
                    let place = format!("users.{name}.groups");
                    let what = format!("no group {group:?} in [groups]");
                    return Err(PolicyError::at(origin, &place, what));
                };
                rules.add(&g.allow, &g.deny, &g.events);
            }
            users.insert(name.as_str().into(), User { password, rules });
        }
        let jwt = match &file.jwt {
            Some(config) => Some(JwtKey::load(config, base, origin)?),
            None => None,
        };
        let mut verb_globs = Vec::new();
        let mut places = |place: &str, globs: &[String]| {
            for (i, g) in globs.iter().enumerate() {
                verb_globs.push((format!("{place}[{i}]"), g.as_str().into()));
            }
        };
        places("anonymous", &file.anonymous);
        for (name, u) in &file.users {
            places(&format!("users.{name}.allow"), &u.allow);
            places(&format!("users.{name}.deny"), &u.deny);
        }
        for (name, g) in &file.groups {
            places(&format!("groups.{name}.allow"), &g.allow);
            places(&format!("groups.{name}.deny"), &g.deny);
        }
        Ok(Policy {
            users,
            anonymous: globs(&file.anonymous),
            jwt,
            dummy_hash: costliest
                .map_or_else(password::default_dummy, |(_, phc)| password::dummy_for(phc)),
            verb_globs,
        })
    }

    /// Each verb glob of the file (in `anonymous`, a user's or a group's `allow` or
    /// `deny`) that matches none of `verbs`, with its place:
    /// `users.alice.allow[0] "Vm.*" matches no verb`. Most likely a typo, which would
    /// otherwise grant (or deny) nothing, silently.
    pub fn unmatched_verb_globs(&self, verbs: &[String]) -> Vec<String> {
        self.verb_globs
            .iter()
            .filter(|(_, g)| !verbs.iter().any(|v| crate::glob::matches(g, v)))
            .map(|(place, g)| format!("{place} {g:?} matches no verb"))
            .collect()
    }

    /// The rules of user `name`, if in the file.
    pub(crate) fn rules(&self, name: &str) -> Option<&Rules> {
        self.users.get(name).map(|u| &u.rules)
    }
}

/// Names and counts only: no hash, no key.
impl std::fmt::Debug for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut users: Vec<&str> = self.users.keys().map(|k| &**k).collect();
        users.sort_unstable();
        f.debug_struct("Policy")
            .field("users", &users)
            .field("anonymous", &self.anonymous)
            .field("jwt", &self.jwt.is_some())
            .finish()
    }
}

impl Rules {
    fn add(&mut self, allow: &[String], deny: &[String], events: &[String]) {
        extend(&mut self.allow, allow);
        extend(&mut self.deny, deny);
        extend(&mut self.events, events);
    }
}

/// Add the globs not already there (a user in two groups granting the same verbs
/// matches each once).
fn extend(into: &mut Vec<Box<str>>, from: &[String]) {
    for glob in from {
        if !into.iter().any(|g| **g == **glob) {
            into.push(glob.as_str().into());
        }
    }
}

fn globs(from: &[String]) -> Vec<Box<str>> {
    let mut out = Vec::new();
    extend(&mut out, from);
    out
}

/// A TOML error as "file: line L, column C: message". Not the parser's own `Display`:
/// that quotes the offending line, which may hold a password hash. For the same reason
/// a quoted string in the message (serde's "invalid type: string \"...\"") is elided.
fn toml_error(origin: &str, text: &str, error: &toml::de::Error) -> PolicyError {
    let place = match error.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
            format!("line {line}, column {column}")
        }
        None => "TOML".to_owned(),
    };
    PolicyError::at(origin, &place, elide_quoted(error.message().trim()))
}

/// `message` with the contents of each `"..."` replaced by `...`.
fn elide_quoted(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut parts = message.split('"');
    if let Some(first) = parts.next() {
        out.push_str(first);
    }
    for (i, part) in parts.enumerate() {
        if i % 2 == 0 {
            out.push_str("\"...");
        } else {
            out.push('"');
            out.push_str(part);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::elide_quoted;

    #[test]
    fn quoted_strings_are_elided() {
        assert_eq!(
            elide_quoted(r#"invalid type: string "$argon2id$v=19$secret", expected a sequence"#),
            r#"invalid type: string "...", expected a sequence"#
        );
        assert_eq!(elide_quoted("unknown field `x`"), "unknown field `x`");
    }
}
