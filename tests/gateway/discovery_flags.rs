//! Learning an upstream's verbs as a new user meets it: an upstream without
//! introspection served from `--upstream-methods` (the command line's `methods`), and a
//! slow one that says in the log how far describing its verbs got, rather than starting
//! silently seconds later.

use crate::common::{run_rpcmux, Server};
use crate::support::{client, PyUpstream};
use rpcmux::client::ClientProto;
use rpcmux::{Params, Value};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn methods_on_the_command_line_and_progress_while_describing() {
    let slow = PyUpstream::slow("slow", 20, 0.3);
    let bare = PyUpstream::slow("bare", 3, 0.0);
    let bare_flag = format!("bare={}", bare.url());
    // Without a list, an upstream without introspection stops the start, and the hint
    // names the flag as well as the file's setting.
    let out = run_rpcmux(
        &["serve", "--listen", "127.0.0.1:0", "--upstream", &bare_flag],
        None,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("--upstream-methods [PREFIX=]NAME"), "{err}");
    // A list that picks no upstream is a flag error naming the prefixes there are.
    let out = run_rpcmux(
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            &bare_flag,
            "--upstream-methods",
            "bar=v0",
        ],
        None,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("no upstream has the prefix \"bar\" (the prefixes are bare)"),
        "{err}"
    );
    let srv = Server::start(&[
        "--no-demo",
        "--upstream",
        &format!("slow={}", slow.url()),
        "--upstream",
        &bare_flag,
        "--upstream-methods",
        "bare=v0,v1",
        "--upstream-methods",
        "bare=v2",
    ]);
    // 20 verbs, two calls each at 0.3 s, 8 at a time: describing them takes 1.5 s at
    // least, so the line of the first second is there whatever the machine's speed.
    assert!(
        srv.wait_log("upstream=slow described=", Duration::from_secs(5)),
        "{}",
        srv.log()
    );
    let log = srv.log();
    let line = log
        .lines()
        .find(|l| l.contains("upstream=slow described="))
        .unwrap();
    // It lists its 20 verbs and its three system.* ones (described, then left to
    // rpcmux's own).
    assert!(
        line.contains("learning upstream verbs") && line.contains(" of=23 "),
        "{line}"
    );
    assert!(
        log.contains("upstream verbs registered upstream=bare verbs=3 skipped=0 source=\"the methods setting\""),
        "{log}"
    );
    for proto in ClientProto::ALL {
        let c = client(proto, srv.addr).await;
        for (verb, want) in [("slow.v19", "v19"), ("bare.v0", "v0"), ("bare.v2", "v2")] {
            let r = c.call(verb, Params::default()).await.unwrap();
            assert_eq!(r, Ok(Value::from(want)), "{proto} {verb}");
        }
        let e = c.call("bare.v3", Params::default()).await.unwrap();
        assert_eq!(
            e.unwrap_err().code,
            -32601,
            "{proto}: only the listed verbs"
        );
    }
}
