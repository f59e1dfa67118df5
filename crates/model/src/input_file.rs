//! Reading the text files rnic takes as input (scenario, sweep and topology files), each
//! under a size cap, so that a wrong path (`/dev/zero`, a capture, a log) or a generated file
//! of millions of values is refused in a moment instead of being read until memory runs out.
//! The reading stops at the cap: a file is never read whole to find out it is too large.

use std::io::Read as _;
use std::path::Path;

/// The most bytes of one input file: 1 MiB. The largest file rnic ships is under 2 KB; a
/// topology file of 10,000 switches in a chain (a `[[switch]]` and a `[[link]]` table each)
/// is about 600 KB. Parsed TOML takes many times the bytes of its text, so a cap well above
/// what people write keeps a wrong or runaway file from exhausting memory.
pub const MAX_INPUT_BYTES: u64 = 1 << 20;

/// Why an input file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum InputFileError {
    /// Opening or reading failed (missing, a directory, not UTF-8, ...).
    #[error("cannot read {path}: {source}{hint}")]
    Io {
        path: String,
        source: std::io::Error,
        /// Where a missing relative path was looked for, or nothing.
        hint: String,
    },
    /// The file holds more than `cap` bytes; reading stopped there.
    #[error(
        "{path} is larger than {cap} bytes ({mib} MiB), the most rnic reads from {what}: is it \
         the file you meant? Split a larger sweep or topology into smaller files",
        mib = cap >> 20
    )]
    TooLarge {
        path: String,
        what: String,
        cap: u64,
    },
}

/// For a relative path that is not there: " (a relative path is taken from the working
/// directory, DIR)", since files that name other files (a scenario's `workload.cdf`, a
/// topology file in `net.topology`) are read from where rnic runs, not from beside the file
/// that names them.
fn where_looked(path: &Path, e: &std::io::Error) -> String {
    if path.is_absolute() || e.kind() != std::io::ErrorKind::NotFound {
        return String::new();
    }
    match std::env::current_dir() {
        Ok(dir) => format!(
            " (a relative path is taken from the working directory, {})",
            dir.display()
        ),
        Err(_) => String::new(),
    }
}

/// Reads the text file at `path` (`what` names its kind in errors, e.g. "a scenario file"),
/// refusing one of more than [`MAX_INPUT_BYTES`] bytes.
pub fn read_text(path: &Path, what: &str) -> Result<String, InputFileError> {
    read_text_capped(path, what, MAX_INPUT_BYTES)
}

/// [`read_text`] with its own cap, in bytes.
pub fn read_text_capped(path: &Path, what: &str, cap: u64) -> Result<String, InputFileError> {
    let io = |source: std::io::Error| InputFileError::Io {
        path: path.display().to_string(),
        hint: where_looked(path, &source),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let mut bytes = Vec::new();
    // One byte past the cap tells a file of exactly `cap` bytes from a longer one.
    file.take(cap + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > cap {
        return Err(InputFileError::TooLarge {
            path: path.display().to_string(),
            what: what.to_string(),
            cap,
        });
    }
    String::from_utf8(bytes).map_err(|e| {
        io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "it is not UTF-8 text (byte {})",
                e.utf8_error().valid_up_to()
            ),
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_past_the_cap_is_refused_and_read_no_further() {
        // /dev/zero never ends: reading it whole would never return.
        let e = read_text(Path::new("/dev/zero"), "a scenario file").unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, InputFileError::TooLarge { .. }), "{msg}");
        assert!(
            msg.contains("/dev/zero is larger than 1048576 bytes (1 MiB)")
                && msg.contains("a scenario file"),
            "{msg}"
        );
        let dir = std::env::temp_dir().join(format!("rnic-input-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("at-cap.toml");
        std::fs::write(&f, "a".repeat(16)).unwrap();
        assert_eq!(read_text_capped(&f, "x", 16).unwrap().len(), 16);
        assert!(matches!(
            read_text_capped(&f, "x", 15),
            Err(InputFileError::TooLarge { cap: 15, .. })
        ));
        std::fs::write(&f, b"\xff\xfe").unwrap();
        let e = read_text(&f, "x").unwrap_err().to_string();
        assert!(e.contains("not UTF-8"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
