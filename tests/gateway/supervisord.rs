//! rpcmux in front of supervisord's XML-RPC interface (Debian `supervisor`, a real
//! third-party XML-RPC server): its verbs discovered by introspection and called over
//! JSON-RPC/HTTP, msgpack-rpc and STOMP, its faults keeping their codes.

use crate::common::Server;
use crate::support::{client, Supervisord};
use rpcmux::client::ClientProto;
use rpcmux::{Params, RpcError, Value};
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn supervisord_through_every_stream_and_json_protocol() {
    let sv = Supervisord::start();
    let url = format!("xmlrpc+http://127.0.0.1:{}/RPC2", sv.port);
    let srv = Server::start(&["--no-demo", "--upstream", &url]);
    let none = || Params::Positional(vec![]);
    for proto in [
        ClientProto::Jsonrpc,
        ClientProto::Msgpack,
        ClientProto::Stomp,
    ] {
        let c = client(proto, srv.addr).await;
        let state = c
            .call("supervisor.getState", none())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            state.get("statecode"),
            Some(&Value::Int(1)),
            "{proto}: {state:?}"
        );
        assert_eq!(state.get("statename"), Some(&Value::from("RUNNING")));

        let info = sleeper_running(&c, "supervisor.").await;
        assert!(
            matches!(info.get("pid"), Some(Value::Int(p)) if *p > 0),
            "{info:?}"
        );

        // supervisord's fault 10, BAD_NAME, as it sent it.
        let r = c
            .call(
                "supervisor.startProcess",
                Params::Positional(vec!["nope".into()]),
            )
            .await
            .unwrap();
        assert_eq!(r, Err(RpcError::new(10, "BAD_NAME: nope")), "{proto}");
    }

    // Its help and signatures show through rpcmux's introspection.
    let c = client(ClientProto::Jsonrpc, srv.addr).await;
    let arg = |m: &str| Params::Positional(vec![Value::from(m)]);
    let sig = c
        .call("system.methodSignature", arg("supervisor.getState"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(sig, Value::Array(vec![Value::Array(vec!["struct".into()])]));
    let help = c
        .call("system.methodHelp", arg("supervisor.getState"))
        .await
        .unwrap()
        .unwrap();
    assert!(
        help.as_str()
            .unwrap()
            .contains("Return current state of supervisor"),
        "{help:?}"
    );
    let list = c
        .call("system.listMethods", Params::Positional(vec![]))
        .await
        .unwrap()
        .unwrap();
    let n = list
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m.as_str().is_some_and(|m| m.starts_with("supervisor.")))
        .count();
    assert!(n > 30, "supervisord's verbs, all of them: {list:?}");
}

/// supervisord as Debian configures it, on a socket file (`[unix_http_server]`, mode
/// 0700), named as its own `serverurl` is but with the protocol: `xmlrpc+unix://PATH`
/// (the HTTP path `/RPC2` by default), and again with `?path=` under a prefix.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn supervisord_on_its_unix_socket() {
    let sv = Supervisord::start_unix();
    let sock = sv.sock.as_ref().unwrap().display().to_string();
    let url = format!("xmlrpc+unix://{sock}");
    let with_path = format!("sv=xmlrpc+http+unix://{sock}?path=/RPC2");
    let srv = Server::start(&["--no-demo", "--upstream", &url, "--upstream", &with_path]);
    let none = || Params::Positional(vec![]);
    for proto in [ClientProto::Jsonrpc, ClientProto::Msgpack] {
        let c = client(proto, srv.addr).await;
        for verb in ["supervisor.getState", "sv.supervisor.getState"] {
            let state = c.call(verb, none()).await.unwrap().unwrap();
            assert_eq!(
                state.get("statename"),
                Some(&Value::from("RUNNING")),
                "{proto} {verb}: {state:?}"
            );
        }
        let info = sleeper_running(&c, "sv.supervisor.").await;
        let one = c
            .call(
                "supervisor.getProcessInfo",
                Params::Positional(vec!["sleeper".into()]),
            )
            .await
            .unwrap();
        assert_eq!(
            one.as_ref().ok().and_then(|i| i.get("pid")),
            info.get("pid"),
            "{proto}: {one:?}"
        );
        let pid = c.call("sv.supervisor.getPID", none()).await.unwrap();
        assert!(
            matches!(pid, Ok(Value::Int(p)) if p > 0),
            "{proto}: {pid:?}"
        );
    }
    // Logs and /metrics name the address by its URL as written.
    let req = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    let (_, _, body) =
        crate::common::parse_http(&crate::common::exchange(srv.addr, req.as_bytes()));
    let m = String::from_utf8(body).unwrap();
    assert!(
        m.contains(&format!(
            "rpcmux_upstream_address_up{{upstream=\"{url}\",address=\"{url}\"}} 1"
        )),
        "{m}"
    );
    assert!(
        srv.log().contains(&format!("upstream={url} ")),
        "{}",
        srv.log()
    );
}

/// supervisord's `getAllProcessInfo` through the gateway (verbs under `prefix`) once its
/// one program, `sleeper`, is RUNNING (it is started shortly after supervisord listens).
async fn sleeper_running(c: &rpcmux::client::Client, prefix: &str) -> Value {
    let end = Instant::now() + Duration::from_secs(10);
    let info = loop {
        let all = c
            .call(
                &format!("{prefix}getAllProcessInfo"),
                Params::Positional(vec![]),
            )
            .await
            .unwrap()
            .unwrap();
        let info = all.as_array().expect("an array")[0].clone();
        if info.get("statename") == Some(&Value::from("RUNNING")) || Instant::now() > end {
            break info;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(info.get("name"), Some(&Value::from("sleeper")), "{info:?}");
    assert_eq!(
        info.get("statename"),
        Some(&Value::from("RUNNING")),
        "{info:?}"
    );
    info
}

/// The README's gateway block, as pasted (its ports and directory moved to free ones):
/// supervisord, then an rpcmux in front of it that the block waits for (listening once
/// it has the verbs), a call through it, and both stopped; with rpcmux's port taken by
/// a server left running, the block says rpcmux did not start instead of passing its
/// readiness check against the other server.
#[test]
fn the_readme_block_waits_for_its_own_rpcmux() {
    use std::process::{Command, Stdio};
    let readme = std::fs::read_to_string(crate::common::repo().join("README.md")).unwrap();
    let start = readme
        .find("mkdir -p /tmp/sv && cat > /tmp/sv/supervisord.conf")
        .expect("the gateway block in README.md");
    let end = start + readme[start..].find("\n```").unwrap();
    let free = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    };
    let (sv_port, port) = (free(), free());
    let dir = crate::common::temp_dir("readme-sv");
    let pasted = readme[start..end]
        .replace("/tmp/sv", dir.to_str().unwrap())
        .replace("127.0.0.1:9001", &format!("127.0.0.1:{sv_port}"))
        .replace("127.0.0.1:54325", &format!("127.0.0.1:{port}"));
    let stop = "kill $srv $sv; wait $srv $sv; rm -f \"$out\"\n";
    let call = format!("rpcmux call localhost:{port} supervisor.getState\n");
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_rpcmux"))
        .parent()
        .unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let paste = |block: String| {
        let out = Command::new("bash")
            .args(["-c", &block])
            .env("PATH", &path)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (text(&out.stdout), text(&out.stderr))
    };
    let (out, err) = paste(format!("{pasted}\n{call}{stop}"));
    assert!(out.contains(r#""statename": "RUNNING""#), "{out}\n{err}");
    let _taken = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
    let (_, err) = paste(format!("{pasted}\n{stop}"));
    assert!(
        err.contains("rpcmux serve did not start: its error is above"),
        "{err}"
    );
    assert!(err.contains("Address already in use"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
