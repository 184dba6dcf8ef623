//! Reading a secret from the terminal without showing it: the terminal's echo is off
//! while the line is typed, and back on however the read ends.

use std::io::BufRead;

/// Show `prompt`, then read one line from stdin (a terminal) with echo off; the line
/// ending is dropped. Echo goes off before the prompt shows: a line typed (or pasted)
/// as soon as the prompt appears is never echoed.
pub fn read_line_hidden(prompt: &str) -> std::io::Result<String> {
    let _echo = EchoOff::new();
    eprint!("{prompt}");
    let _ = std::io::Write::flush(&mut std::io::stderr());
    let mut line = String::new();
    let read = std::io::stdin().lock().read_line(&mut line);
    // The Enter the user typed was not echoed either.
    eprintln!();
    read?;
    Ok(trim_line_end(&line).to_owned())
}

/// `line` without its `\n` or `\r\n`.
pub fn trim_line_end(line: &str) -> &str {
    let line = line.strip_suffix('\n').unwrap_or(line);
    line.strip_suffix('\r').unwrap_or(line)
}

/// The terminal's echo off, restored on drop.
struct EchoOff {
    #[cfg(target_os = "linux")]
    saved: Option<libc::termios>,
}

impl EchoOff {
    #[cfg(target_os = "linux")]
    fn new() -> Self {
        // SAFETY: tcgetattr/tcsetattr on fd 0 with a termios we own; a failure (not
        // a terminal) leaves `saved` empty and the terminal as it was.
        unsafe {
            let mut t: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(0, &mut t) != 0 {
                return EchoOff { saved: None };
            }
            let saved = t;
            t.c_lflag &= !(libc::ECHO | libc::ECHONL);
            t.c_lflag |= libc::ICANON;
            if libc::tcsetattr(0, libc::TCSANOW, &t) != 0 {
                return EchoOff { saved: None };
            }
            EchoOff { saved: Some(saved) }
        }
    }

    /// No termios here: the line is echoed (the prompt says so).
    #[cfg(not(target_os = "linux"))]
    fn new() -> Self {
        EchoOff {}
    }
}

impl Drop for EchoOff {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        if let Some(saved) = &self.saved {
            // SAFETY: restores the attributes read in `new` on the same fd.
            unsafe {
                libc::tcsetattr(0, libc::TCSANOW, saved);
            }
        }
    }
}
