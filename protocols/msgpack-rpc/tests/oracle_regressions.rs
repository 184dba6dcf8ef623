//! Behaviour pinned by the differential fuzz targets (`fuzz/fuzz_targets/*_oracle.rs`,
//! docs/fuzzing.md): where rpcmux's typed reader was found to differ from rmp-serde.
use rpcmux_msgpack_rpc::typed::from_slice;
use serde::Deserialize;

#[derive(Debug, PartialEq, Deserialize)]
enum Shape {
    Dot,
    Circle(f64),
}

#[test]
fn a_unit_variant_reads_by_name_or_by_index_as_rmp_serde_reads_it() {
    assert_eq!(from_slice::<Shape>(b"\xa3Dot").unwrap(), Shape::Dot);
    // Found by msgpack_typed_oracle: `0` was refused, though `{1: 2.5}` was read.
    assert_eq!(from_slice::<Shape>(&[0x00]).unwrap(), Shape::Dot);
    assert_eq!(
        from_slice::<Shape>(&[0x81, 0x01, 0xcb, 0x40, 0x04, 0, 0, 0, 0, 0, 0]).unwrap(),
        Shape::Circle(2.5)
    );
    // A variant that carries data still needs it.
    assert!(from_slice::<Shape>(&[0x01]).is_err());
    assert!(from_slice::<Shape>(b"\xa6Circle").is_err());
    assert!(from_slice::<Shape>(&[0x02]).is_err(), "no third variant");
}

#[test]
fn a_bin_is_bytes_only_never_a_sequence() {
    // Intended difference (msgpack_typed_oracle): rmp-serde reads a bin where a
    // sequence, tuple or struct is expected as a sequence of u8 (and ignores bytes left
    // over: `Floats` from 8 bytes took two). rpcmux reads a bin only as bytes.
    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Floats {
        x: f32,
        y: f64,
    }
    let bin = [0xc4, 0x02, 0x61, 0x00];
    assert!(from_slice::<Floats>(&bin).is_err());
    assert!(from_slice::<Vec<u8>>(&bin).is_err());
    assert!(from_slice::<(u8, u8)>(&bin).is_err());
    assert_eq!(
        from_slice::<rpcmux_value::Value>(&bin).unwrap(),
        rpcmux_value::Value::Bytes(vec![0x61, 0])
    );
}
