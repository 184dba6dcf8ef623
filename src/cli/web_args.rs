//! The `rpcmux serve` flags for WebSocket and browsers (`[websocket]`, `[web]`).

use clap::Args;
use rpcmux::Config;

#[derive(Args, Debug)]
#[command(next_help_heading = "WebSocket and browsers")]
pub struct WebArgs {
    /// WebSocket message cap in bytes, fragments together (close 1009 past it).
    #[arg(long, value_name = "BYTES")]
    ws_max_message: Option<usize>,
    /// WebSocket frame cap in bytes, judged from the frame header (close 1009).
    #[arg(long, value_name = "BYTES")]
    ws_max_frame: Option<usize>,
    /// Frames one fragmented WebSocket message may take (close 1009 past it).
    #[arg(long, value_name = "N")]
    ws_max_fragments: Option<usize>,
    /// Seconds of silence before the server pings a WebSocket peer (0: off).
    #[arg(long, value_name = "SECS", value_parser = super::seconds::seconds)]
    ws_ping_interval: Option<f64>,
    /// Seconds after that ping before a silent peer is dropped with its subscriptions
    /// (0: off).
    #[arg(long, value_name = "SECS", value_parser = super::seconds::seconds)]
    ws_pong_timeout: Option<f64>,
    /// A foreign origin browsers may call from (WebSocket and CORS POST; repeatable;
    /// `*` for any). Pages of the server's own origin, and programs, need none.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    allow_origin: Vec<String>,
    /// A host name browsers may reach the server by (repeatable; `.domain` for its
    /// subdomains too, `*` for any), besides IP addresses, `localhost` and the names
    /// given to `--listen`. Guards against DNS rebinding.
    #[arg(long = "allow-host", value_name = "NAME")]
    allow_host: Vec<String>,
    /// Serve the console page at `GET /` to browsers (default: with the demo verbs).
    #[arg(long, overrides_with = "no_console")]
    console: bool,
    /// Do not serve the console page.
    #[arg(long)]
    no_console: bool,
}

impl WebArgs {
    pub fn apply(self, c: &mut Config) {
        let w = &mut c.websocket;
        macro_rules! set {
            ($($flag:ident => $f:ident),*) => {$( if let Some(v) = self.$flag { w.$f = v; } )*};
        }
        set!(
            ws_max_message => max_message,
            ws_max_frame => max_frame,
            ws_max_fragments => max_fragments,
            ws_ping_interval => ping_interval,
            ws_pong_timeout => pong_timeout
        );
        if !self.allow_origin.is_empty() {
            c.web.allowed_origins = self.allow_origin;
        }
        c.web.allowed_hosts.extend(self.allow_host);
        if self.console {
            c.web.console = Some(true);
        }
        if self.no_console {
            c.web.console = Some(false);
        }
    }
}
