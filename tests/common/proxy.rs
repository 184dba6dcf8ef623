//! A TCP proxy in front of a server, for tests of what clients do when their
//! connection is cut (issue 40's resume tests): it forwards every connection, and
//! [`Proxy::cut`] closes them all and refuses new ones for a while.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A TCP proxy to `upstream` whose connections the test can cut, refusing new ones
/// (accepting and closing them at once) until it is restored.
pub struct Proxy {
    pub addr: SocketAddr,
    open: Arc<Mutex<Vec<TcpStream>>>,
    down: Arc<AtomicBool>,
}

impl Proxy {
    pub fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let open = Arc::new(Mutex::new(Vec::new()));
        let down = Arc::new(AtomicBool::new(false));
        let (o, d) = (open.clone(), down.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                if d.load(Ordering::SeqCst) {
                    drop(client);
                    continue;
                }
                let Ok(server) = TcpStream::connect(upstream) else {
                    continue;
                };
                let mut held = o.lock().unwrap();
                held.push(client.try_clone().unwrap());
                held.push(server.try_clone().unwrap());
                pipe(client.try_clone().unwrap(), server.try_clone().unwrap());
                pipe(server, client);
            }
        });
        Proxy { addr, open, down }
    }

    /// Close every connection through the proxy and refuse new ones for `for_`.
    pub fn cut(&self, for_: Duration) {
        self.down.store(true, Ordering::SeqCst);
        for s in self.open.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
        std::thread::sleep(for_);
        self.down.store(false, Ordering::SeqCst);
    }
}

/// Copy `from` to `to` on a thread of its own until either end is done.
fn pipe(mut from: TcpStream, mut to: TcpStream) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = to.shutdown(Shutdown::Both);
        let _ = from.shutdown(Shutdown::Both);
    });
}
