//! What an operator sees: Prometheus metrics (`GET /metrics`) and the per-call access
//! log. Every call passes through one `Observer` (`verbs/observed.rs`) in the verb table's dispatch, the one
//! place every protocol's calls meet, so a call is counted and logged the same way
//! whatever carried it.

pub(crate) mod access;
#[cfg(feature = "count-allocs")]
mod alloc_count;
pub(crate) mod log_budget;
pub(crate) mod metrics;
pub(crate) mod upstream;

pub(crate) use access::AccessLog;
pub(crate) use metrics::{Metrics, OutcomeLabel};
