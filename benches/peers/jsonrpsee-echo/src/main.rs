//! jsonrpsee's HTTP server with the two methods the benchmark calls:
//! `echo(value)` returns value, `ping()` returns true.
//! Usage: jsonrpsee-echo ADDR (port 0 picks one); prints `listening on IP:PORT`.

use jsonrpsee::server::{RpcModule, Server, ServerConfig};
use jsonrpsee::types::ErrorObjectOwned;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".into());
    // HTTP only, and room for the benchmark's connections (the default cap is 100).
    let config = ServerConfig::builder()
        .http_only()
        .max_connections(10_000)
        .build();
    let server = Server::builder().set_config(config).build(addr).await?;
    let mut module = RpcModule::new(());
    module.register_method("echo", |params, _, _| {
        params
            .one::<serde_json::Value>()
            .map_err(ErrorObjectOwned::from)
    })?;
    module.register_method("ping", |_, _, _| true)?;
    println!("listening on {}", server.local_addr()?);
    let handle = server.start(module);
    handle.stopped().await;
    Ok(())
}
