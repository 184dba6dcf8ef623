//! A raw WebSocket client over a blocking socket, for the protocol-level checks (close
//! codes, pings, limits) no client library lets a test provoke. Frames are written and
//! read here by the RFC's rules; the libraries' behaviour is checked with the real ones.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

pub struct RawWs {
    pub s: TcpStream,
    buf: Vec<u8>,
}

/// One frame as the server sent it.
#[derive(Debug)]
#[allow(dead_code)] // not every test reads every field
pub struct WsFrame {
    pub fin: bool,
    pub opcode: u8,
    pub payload: Vec<u8>,
}

impl WsFrame {
    /// A close frame's code.
    pub fn close_code(&self) -> Option<u16> {
        (self.opcode == 8 && self.payload.len() >= 2)
            .then(|| u16::from_be_bytes([self.payload[0], self.payload[1]]))
    }
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.payload)
            .unwrap_or_else(|e| panic!("{e}: {:?}", String::from_utf8_lossy(&self.payload)))
    }
}

/// The upgrade request for `path` with extra header lines.
pub fn upgrade_request(path: &str, extra: &str) -> String {
    format!(
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n{extra}\r\n"
    )
}

impl RawWs {
    /// Upgrade on `path` with extra header lines (`"Name: v\r\n"` each); panics unless 101.
    pub fn open(addr: SocketAddr, extra: &str) -> RawWs {
        let (ws, head) = RawWs::try_open(addr, "/", extra).expect("connect");
        assert!(head.starts_with("HTTP/1.1 101"), "{head}");
        assert!(head.contains("s3pPLMBiTxaQ9kYGzzhZRbK+xOo="), "{head}");
        ws
    }

    /// Send the upgrade; the socket and the response head, whatever its status.
    pub fn try_open(addr: SocketAddr, path: &str, extra: &str) -> io::Result<(RawWs, String)> {
        let mut s = TcpStream::connect(addr)?;
        s.set_read_timeout(Some(Duration::from_secs(20)))?;
        s.set_nodelay(true)?;
        s.write_all(upgrade_request(path, extra).as_bytes())?;
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        let end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            let n = s.read(&mut chunk)?;
            if n == 0 {
                break buf.len();
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
        let rest = buf[end..].to_vec();
        Ok((RawWs { s, buf: rest }, head))
    }

    /// Write a frame with `fin`, `opcode`, masked as clients must.
    pub fn frame(&mut self, fin: bool, opcode: u8, payload: &[u8]) -> io::Result<()> {
        self.s.write_all(&encode(fin, opcode, payload))
    }

    pub fn text(&mut self, text: &str) -> io::Result<()> {
        self.frame(true, 1, text.as_bytes())
    }

    /// The next frame, `None` once the server has closed the socket.
    pub fn read(&mut self) -> Option<WsFrame> {
        loop {
            if let Some((f, used)) = decode(&self.buf) {
                self.buf.drain(..used);
                return Some(f);
            }
            let mut chunk = [0u8; 65536];
            match self.s.read(&mut chunk) {
                Ok(0) | Err(_) => return None,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }

    /// The next data frame, answering nothing (pings are skipped).
    pub fn data(&mut self) -> Option<WsFrame> {
        loop {
            let f = self.read()?;
            if f.opcode != 9 && f.opcode != 10 {
                return Some(f);
            }
        }
    }

    /// Frames until a close; its code (`None`: the socket closed without one).
    pub fn close_code(&mut self) -> Option<u16> {
        loop {
            let f = self.read()?;
            if f.opcode == 8 {
                return f.close_code();
            }
        }
    }
}

/// A masked client frame.
pub fn encode(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mut v = vec![(if fin { 0x80 } else { 0 }) | opcode];
    let len = payload.len();
    if len < 126 {
        v.push(0x80 | len as u8);
    } else if len <= 65535 {
        v.push(0x80 | 126);
        v.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        v.push(0x80 | 127);
        v.extend_from_slice(&(len as u64).to_be_bytes());
    }
    let mask = [0x37, 0xfa, 0x21, 0x3d];
    v.extend_from_slice(&mask);
    v.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    v
}

/// An unmasked server frame at the start of `b`, and its length.
pub fn decode(b: &[u8]) -> Option<(WsFrame, usize)> {
    if b.len() < 2 {
        return None;
    }
    assert_eq!(b[1] & 0x80, 0, "server frames are not masked");
    let (len, at) = match b[1] & 0x7f {
        126 => (u16::from_be_bytes([*b.get(2)?, *b.get(3)?]) as usize, 4),
        127 => (
            u64::from_be_bytes(b.get(2..10)?.try_into().unwrap()) as usize,
            10,
        ),
        n => (n as usize, 2),
    };
    let payload = b.get(at..at + len)?.to_vec();
    Some((
        WsFrame {
            fin: b[0] & 0x80 != 0,
            opcode: b[0] & 0x0f,
            payload,
        },
        at + len,
    ))
}
