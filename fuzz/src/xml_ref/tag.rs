//! XML-RPC's element names, classified as the protocol reads them: the whole name, else
//! the part after its last `:` (Apache's `ex:nil` and friends under any prefix, with no
//! namespace declaration needed). Aliases that decode alike share a class.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tag {
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
    Int,
    Boolean,
    String,
    Double,
    DateTime,
    Base64,
    Nil,
    Other,
}

impl Tag {
    pub fn from_name(qname: &[u8]) -> Tag {
        match local(qname) {
            Tag::Other => match qname.iter().rposition(|&b| b == b':') {
                Some(i) => local(&qname[i + 1..]),
                None => Tag::Other,
            },
            t => t,
        }
    }

    pub fn is_scalar(self) -> bool {
        use Tag::*;
        matches!(
            self,
            Int | Boolean | String | Double | DateTime | Base64 | Nil
        )
    }
}

fn local(name: &[u8]) -> Tag {
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
