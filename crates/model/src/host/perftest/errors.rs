//! What went wrong in the application: the judges read it to fail a run and say why.

use std::collections::BTreeMap;

/// The application's errors: completions with an error status and other application-level
/// errors (a CQ slot without a valid CQE).
#[derive(Debug, Clone, Default)]
pub struct ErrorLog {
    /// Errors in all.
    pub count: u64,
    /// The first error.
    pub first: Option<String>,
    /// Error completions by verbs status name (`RETRY_EXC_ERR`, ...).
    pub by_status: BTreeMap<String, u64>,
}

impl ErrorLog {
    /// Notes one error; the first one's message is kept.
    pub(crate) fn note(&mut self, msg: String) {
        self.count += 1;
        self.first.get_or_insert(msg);
    }
}
