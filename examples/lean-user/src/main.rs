//! Serve one verb with rpcmux as a lean library, call it once over raw-TCP JSON-RPC,
//! print the reply and stop.

use rpcmux::{Config, Server, Value, VerbTable};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut verbs = VerbTable::new();
    verbs
        .verb("greet")
        .param("name")
        .help("Say hello.")
        .handler(|mut args, _ctx| async move {
            let name: String = args.take(0)?;
            Ok(Value::from(format!("hello, {name}")))
        })?;
    let config = Config {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        ..Config::default()
    };
    let server = Server::bind(config, verbs).await?;
    let addr = server.local_addrs()[0];
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.run(async {
        let _ = stopped.await;
    }));

    let mut conn = BufReader::new(tokio::net::TcpStream::connect(addr).await?);
    conn.get_mut()
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"greet\",\"params\":[\"lean\"],\"id\":1}\n")
        .await?;
    let mut reply = String::new();
    conn.read_line(&mut reply).await?;
    print!("{reply}");

    let _ = stop.send(());
    serving.await.ok();
    if reply.contains("\"hello, lean\"") {
        Ok(())
    } else {
        Err(std::io::Error::other(format!("unexpected reply: {reply}")))
    }
}
