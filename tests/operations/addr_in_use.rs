//! `rpcmux serve` on a port that a closed connection holds (TIME_WAIT) says so, rather
//! than blame "another process (another rpcmux serve?)": the README's blocks, run twice,
//! met it when calls to one section's server took another section's port as their own.

use crate::common::run_rpcmux;
use std::net::{TcpListener, TcpStream};

#[test]
fn a_port_held_in_time_wait_is_named_as_such() {
    // A connection whose client closes first: its own port stays in TIME_WAIT.
    let server = TcpListener::bind("127.0.0.1:0").unwrap();
    let client = TcpStream::connect(server.local_addr().unwrap()).unwrap();
    let port = client.local_addr().unwrap().port();
    let (accepted, _) = server.accept().unwrap();
    drop(client);
    // The server side reads the FIN, then closes: the client's side waits out TIME_WAIT.
    let mut buf = [0u8; 1];
    assert_eq!(std::io::Read::read(&mut &accepted, &mut buf).unwrap(), 0);
    drop(accepted);
    let listen = format!("127.0.0.1:{port}");
    let out = run_rpcmux(&["serve", "--listen", &listen], None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("Address already in use"), "{err}");
    assert!(
        err.contains("nothing listens there: the port is held by a connection"),
        "{err}"
    );
    assert!(!err.contains("another rpcmux serve?"), "{err}");
}
