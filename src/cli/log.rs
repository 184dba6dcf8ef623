//! The server's log on stderr: `RUST_LOG` filters it (default `info`), and it is coloured
//! only for a person watching a terminal.

use std::ffi::OsString;
use std::io::IsTerminal;

/// How each log line is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// For people: `time LEVEL target: message key=value ...`.
    Text,
    /// One JSON object per line (`timestamp`, `level`, `target`, `fields`), for log
    /// shippers.
    Json,
}

/// Install the global tracing subscriber, writing to stderr.
pub fn init(format: Format) {
    let filter =
        tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    let fmt = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        Format::Json => fmt.json().init(),
        Format::Text => {
            let ansi = colour(
                std::io::stderr().is_terminal(),
                std::env::var_os("NO_COLOR"),
            );
            fmt.with_ansi(ansi).init()
        }
    }
}

/// Colour codes only on a terminal: in a file, a pipe or journald they are noise that
/// breaks grep. And never when `NO_COLOR` is set to anything but the empty string
/// (<https://no-color.org>). tracing-subscriber would colour any writer by default.
fn colour(stderr_is_terminal: bool, no_color: Option<OsString>) -> bool {
    stderr_is_terminal && no_color.is_none_or(|v| v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::colour;

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        assert!(colour(true, None));
        assert!(colour(true, Some("".into())), "an empty NO_COLOR is unset");
        assert!(!colour(true, Some("1".into())));
        assert!(!colour(false, None));
        assert!(!colour(false, Some("1".into())));
    }
}
