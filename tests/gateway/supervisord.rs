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

        // `sleeper` is started by supervisord shortly after it listens.
        let end = Instant::now() + Duration::from_secs(10);
        let info = loop {
            let all = c
                .call("supervisor.getAllProcessInfo", none())
                .await
                .unwrap()
                .unwrap();
            let info = all.as_array().expect("an array")[0].clone();
            if info.get("statename") == Some(&Value::from("RUNNING")) || Instant::now() > end {
                break info;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert_eq!(
            info.get("name"),
            Some(&Value::from("sleeper")),
            "{proto}: {info:?}"
        );
        assert_eq!(
            info.get("statename"),
            Some(&Value::from("RUNNING")),
            "{info:?}"
        );
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
