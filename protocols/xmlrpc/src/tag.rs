//! The element names XML-RPC uses, classified once so the parser matches on an enum.
//!
//! A name that is not one of XML-RPC's is retried on its local part (after any
//! `prefix:`), so Apache's `ex:nil`, `ex:i8` and friends, and the same forms under
//! another prefix, need no namespace resolution. Aliases that decode the same way share one variant: every integer
//! spelling is [`Tag::Int`], every floating one [`Tag::Double`].

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tag {
    MethodCall,
    MethodName,
    MethodResponse,
    Params,
    Param,
    Fault,
    Value,
    Array,
    Data,
    Struct,
    Member,
    Name,
    /// `int`, `i4`, `i8`, and Apache's `ex:i1`, `ex:i2`, `ex:i8`, `ex:biginteger`.
    Int,
    Boolean,
    String,
    /// `double`, and Apache's `ex:float`, `ex:bigdecimal`.
    Double,
    /// `dateTime.iso8601`, and Apache's `ex:dateTime` (an xsd:dateTime with a zone).
    DateTime,
    Base64,
    /// `nil`, and Apache's `ex:nil`.
    Nil,
    /// Anything else; the cursor keeps its name for the error message.
    Other,
}

impl Tag {
    /// Classify a tag's qualified name. The unprefixed spelling is tried first: it is
    /// what nearly every client sends, and it needs no scan for ':'.
    pub(crate) fn from_name(qname: &[u8]) -> Tag {
        match Tag::from_local_name(qname) {
            Tag::Other => match qname.iter().rposition(|&b| b == b':') {
                Some(colon) => Tag::from_local_name(&qname[colon + 1..]),
                None => Tag::Other,
            },
            tag => tag,
        }
    }

    fn from_local_name(name: &[u8]) -> Tag {
        match name {
            b"methodCall" => Tag::MethodCall,
            b"methodName" => Tag::MethodName,
            b"methodResponse" => Tag::MethodResponse,
            b"params" => Tag::Params,
            b"param" => Tag::Param,
            b"fault" => Tag::Fault,
            b"value" => Tag::Value,
            b"array" => Tag::Array,
            b"data" => Tag::Data,
            b"struct" => Tag::Struct,
            b"member" => Tag::Member,
            b"name" => Tag::Name,
            b"int" | b"i4" | b"i8" | b"i1" | b"i2" | b"biginteger" => Tag::Int,
            b"boolean" => Tag::Boolean,
            b"string" => Tag::String,
            b"double" | b"float" | b"bigdecimal" => Tag::Double,
            b"dateTime.iso8601" | b"dateTime" => Tag::DateTime,
            b"base64" => Tag::Base64,
            b"nil" => Tag::Nil,
            _ => Tag::Other,
        }
    }

    /// Whether this tag holds one scalar as text (so `<value><tag>text</tag></value>`).
    pub(crate) fn is_scalar(self) -> bool {
        matches!(
            self,
            Tag::Int
                | Tag::Boolean
                | Tag::String
                | Tag::Double
                | Tag::DateTime
                | Tag::Base64
                | Tag::Nil
        )
    }

    /// The canonical spelling, for error messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Tag::MethodCall => "methodCall",
            Tag::MethodName => "methodName",
            Tag::MethodResponse => "methodResponse",
            Tag::Params => "params",
            Tag::Param => "param",
            Tag::Fault => "fault",
            Tag::Value => "value",
            Tag::Array => "array",
            Tag::Data => "data",
            Tag::Struct => "struct",
            Tag::Member => "member",
            Tag::Name => "name",
            Tag::Int => "int",
            Tag::Boolean => "boolean",
            Tag::String => "string",
            Tag::Double => "double",
            Tag::DateTime => "dateTime.iso8601",
            Tag::Base64 => "base64",
            Tag::Nil => "nil",
            Tag::Other => "?",
        }
    }
}
