//! Configuration errors. Every variant names the offending field or input and says what is
//! accepted, so the user can fix the command line or file without reading the source.

/// An error in a configuration, a profile, an override or an input file.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// Malformed TOML.
    #[error("{origin}: malformed TOML at line {line}, column {column}: {message}")]
    Syntax {
        origin: String,
        line: usize,
        column: usize,
        message: String,
    },
    /// A key that no section has.
    #[error("unknown key `{path}`{suggestion}; {section_desc} accepts: {known}")]
    UnknownKey {
        path: String,
        /// ", did you mean `x`?" or empty.
        suggestion: String,
        /// "section `nic`" or "the top level".
        section_desc: String,
        known: String,
    },
    /// A value of the wrong TOML type.
    #[error("`{path}` = {value}: expected {expected}{hint}")]
    WrongType {
        path: String,
        value: String,
        expected: String,
        hint: String,
    },
    /// A value outside the accepted range or set.
    #[error("`{path}` = {value} is not accepted: must be {accepted}{hint}")]
    OutOfRange {
        path: String,
        value: String,
        accepted: String,
        hint: String,
    },
    /// A profile name that is not registered.
    #[error("unknown profile `{name}`; known profiles: {known}")]
    UnknownProfile { name: String, known: String },
    /// A malformed `--set` argument.
    #[error("bad override `{arg}`: {reason}")]
    BadOverride { arg: String, reason: String },
    /// A constraint between two fields.
    #[error("{0}")]
    Inconsistent(String),
    /// Should not happen: the checked table failed to (de)serialize.
    #[error("internal configuration error: {0}")]
    Internal(String),
}

impl ConfigError {
    /// Converts a TOML parse error into [`ConfigError::Syntax`] with a 1-based line and column.
    pub fn from_toml_error(origin: &str, src: &str, e: &toml::de::Error) -> ConfigError {
        let (line, column) = match e.span() {
            Some(span) => line_col(src, span.start),
            None => (0, 0),
        };
        ConfigError::Syntax {
            origin: origin.to_string(),
            line,
            column,
            message: e.message().trim().to_string(),
        }
    }
}

/// 1-based (line, column) of a byte offset; columns count characters.
pub(crate) fn line_col(src: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(src.len());
    let before = src.get(..offset).unwrap_or(src);
    let line = before.matches('\n').count() + 1;
    let col = before
        .rsplit('\n')
        .next()
        .map(|l| l.chars().count())
        .unwrap_or(0)
        + 1;
    (line, col)
}
