//! XML-RPC wire format for rpcmux: `<methodCall>` / `<methodResponse>` / `<fault>`
//! to and from [`rpcmux_value::Value`]. Pure: no sockets, no HTTP.
//!
//! Reading streams lexer items (`lex.rs`) straight into `Value`s (no DOM), iteratively, under
//! [`Limits`]. Writing appends to one caller-owned `Vec<u8>`.
//!
//! Types, both ways: `int`/`i4`, `i8`, `boolean`, `string` (and untyped
//! `<value>text</value>`), `double`, `dateTime.iso8601`, `base64`, `struct` (member
//! order kept), `array`, `nil`. On input also Apache's extension forms under any prefix:
//! `ex:nil`, `ex:i1`, `ex:i2`, `ex:i8`, `ex:float`, `ex:biginteger`, `ex:bigdecimal`,
//! `ex:dateTime` (not `ex:dom` / `ex:serializable`, which carry Java objects).
//!
//! Output: an int beyond 32 bits is written as `<i8>`; doubles in their shortest exact
//! form, NaN/±infinity as Python writes them (`nan`, `inf`, `-inf`); strings escape
//! `<`, `>`, `&`, and CR as a character reference; dateTimes keep fractional seconds
//! (only when non-zero) and years beyond 0..=9999 (`+10000-01-01T00:00:00`); a fault's
//! code is clamped to 32 bits and its `data` is not sent (see `write.rs`).
//!
//! XML 1.0 characters only, both ways: a C0 control other than TAB/LF/CR, or U+FFFE /
//! U+FFFF, raw or as a character reference (`&#1;`), makes a document a parse error
//! (-32700), as in expat. A value holding one cannot be written: [`try_write_response`]
//! / [`try_write_call`] return -32603 "string contains a character XML 1.0 cannot carry
//! (U+0001)", [`write_response`] writes that error as a fault, [`check_xml_chars`]
//! checks a value alone. Nothing is ever silently replaced.
//!
//! Security: any `<!DOCTYPE>` is refused, so no entity is ever declared or expanded
//! (billion laughs and external entities cannot happen); only the five predefined
//! entities and character references are decoded. Bodies must be UTF-8. Nesting depth,
//! element count and string length are capped by [`Limits`]. No input panics.
#![warn(missing_docs)]

mod cursor;
mod escape;
mod lex;
mod limits;
mod message;
mod params;
mod read;
mod read_value;
mod scalar;
mod tag;
mod typed;
mod unescape;
mod write;
mod xmlchar;

pub use limits::Limits;
pub use message::MethodCall;
pub use params::{CallParams, Error as ParamsError};
pub use read::{parse_call, parse_response};
pub use typed::{try_write_typed_response, Written};
pub use write::{
    try_write_call, try_write_response, try_write_value, write_call, write_fault, write_response,
    write_value,
};
pub use xmlchar::check_xml_chars;
