//! Tests of the wire format: exact layout, every type and flag combination, one test
//! per malformed class, round trips and serial arithmetic across the wrap point.

use super::*;
use proptest::prelude::*;

const ALL_NEXT_PROTOS: [NextProto; 5] = [
    NextProto::None,
    NextProto::Ipv4,
    NextProto::Ipv6,
    NextProto::Ethernet,
    NextProto::Native,
];
const ALL_CONTROL_KINDS: [ControlKind; 4] = [
    ControlKind::Pull,
    ControlKind::Ack,
    ControlKind::Nack,
    ControlKind::Rst,
];

/// The type table of the module doc, written out independently of the code under
/// test: `Some(flags allowed)` for a known type, `None` for an unknown one.
fn allowed_flags_per_doc(type_code: u8) -> Option<u8> {
    match type_code {
        0x0 => Some(0x01 | 0x02 | 0x04), // DATA: SYN TRIMMED UNORDERED
        0x1 => Some(0x01),               // RTS: SYN
        0x8 => Some(0),                  // PULL
        0x9 => Some(0x01 | 0x08),        // ACK: SYN CUMULATIVE
        0xA => Some(0x01),               // NACK: SYN
        0xB => Some(0),                  // RST
        _ => None,
    }
}

/// A flags byte from the documented bit values.
fn flag_bits(syn: bool, trimmed: bool, unordered: bool, cumulative: bool) -> u8 {
    [
        (syn, 0x01),
        (trimmed, 0x02),
        (unordered, 0x04),
        (cumulative, 0x08),
    ]
    .into_iter()
    .filter(|&(set, _)| set)
    .fold(0, |bits, (_, bit)| bits | bit)
}

fn data(kind: DataKind, next_proto: NextProto) -> DataHeader {
    DataHeader {
        kind,
        syn: false,
        trimmed: false,
        unordered: false,
        next_proto,
        seq: 0x0102_0304,
        pull_target: 0x0506_0708,
        path_id: 0x090A,
        sender_id: 0x0B0C,
    }
}

fn control(kind: ControlKind) -> ControlHeader {
    ControlHeader {
        kind,
        syn: false,
        cumulative: false,
        sender_id: 0x0B0C,
        ack_no: 0x0102_0304,
        pull_no: 0x0506_0708,
        busy_time_ns: 0x090A_0B0C,
    }
}

/// A header's bytes followed by `payload`.
fn packet(header: &Header, payload: &[u8]) -> Vec<u8> {
    let mut buf = vec![0; HEADER_LEN + payload.len()];
    let n = header.encode(&mut buf).expect("test header is valid");
    buf[n..].copy_from_slice(payload);
    buf
}

/// A valid DATA packet to corrupt one byte of.
fn data_packet() -> Vec<u8> {
    packet(&Header::Data(data(DataKind::Data, NextProto::Ipv4)), b"x")
}

// ---- exact layout ----

#[test]
fn data_header_bytes_match_the_documented_layout() {
    let h = DataHeader {
        syn: true,
        unordered: true,
        ..data(DataKind::Data, NextProto::Ipv6)
    };
    let mut buf = [0xEE; 20];
    assert_eq!(h.encode(&mut buf), Ok(HEADER_LEN));
    assert_eq!(
        buf[..HEADER_LEN],
        [
            0x10, 0x05, 0x02, 0x00, // version 1, DATA; SYN|UNORDERED; IPv6; reserved
            0x01, 0x02, 0x03, 0x04, // seq
            0x05, 0x06, 0x07, 0x08, // pull_target
            0x09, 0x0A, 0x0B, 0x0C, // path_id, sender_id
        ]
    );
    assert_eq!(
        buf[HEADER_LEN..],
        [0xEE; 4],
        "encode writes the header only"
    );
}

#[test]
fn control_header_bytes_match_the_documented_layout() {
    let h = ControlHeader {
        syn: true,
        cumulative: true,
        ..control(ControlKind::Ack)
    };
    let mut buf = [0; HEADER_LEN];
    assert_eq!(h.encode(&mut buf), Ok(HEADER_LEN));
    assert_eq!(
        buf,
        [
            0x19, 0x09, 0x0B, 0x0C, // version 1, ACK; SYN|CUMULATIVE; sender_id
            0x01, 0x02, 0x03, 0x04, // ack_no
            0x05, 0x06, 0x07, 0x08, // pull_no
            0x09, 0x0A, 0x0B, 0x0C, // busy_time
        ]
    );
}

#[test]
fn type_codes_and_next_proto_codes_match_the_documentation() {
    assert_eq!(DataKind::Data as u8, 0x0);
    assert_eq!(DataKind::Rts as u8, 0x1);
    let control_codes = ALL_CONTROL_KINDS.map(|k| k as u8);
    assert_eq!(control_codes, [0x8, 0x9, 0xA, 0xB]);
    // Bit 3 of the type selects the control layout.
    assert!(control_codes.iter().all(|c| c & 0x8 != 0));
    assert_eq!(ALL_NEXT_PROTOS.map(|p| p as u8), [0, 1, 2, 3, 0x80]);
}

// ---- every type and flag combination ----

/// Every type nibble with every flags byte, decoded from raw bytes and checked
/// against the documented table; accepted ones must re-encode to the same bytes.
#[test]
fn every_type_and_flags_byte_decodes_as_documented() {
    for type_code in 0..16u8 {
        for flags in 0..=255u8 {
            let mut buf = [0u8; HEADER_LEN + 1];
            buf[0] = 0x10 | type_code;
            buf[1] = flags;
            let is_data_layout = type_code < 8;
            let len = if is_data_layout {
                // DATA names an inner protocol and has a payload; RTS has neither.
                buf[2] = if type_code == 0 { 1 } else { 0 };
                if type_code == 0 {
                    HEADER_LEN + 1
                } else {
                    HEADER_LEN
                }
            } else {
                HEADER_LEN
            };
            let input = &buf[..len];
            let got = decode(input);
            let expected_err = match allowed_flags_per_doc(type_code) {
                None => Some(WireError::UnknownType(type_code)),
                Some(_) if flags & 0xF0 != 0 => Some(WireError::ReservedBitsSet),
                Some(allowed) if flags & !allowed != 0 => Some(WireError::InvalidFlags {
                    type_code,
                    flags: flags & !allowed,
                }),
                Some(_) => None,
            };
            match (expected_err, got) {
                (Some(e), got) => assert_eq!(got, Err(e), "type {type_code:#x} flags {flags:#x}"),
                (None, Ok((header, payload))) => {
                    let decoded_flags = match header {
                        Header::Data(h) => flag_bits(h.syn, h.trimmed, h.unordered, false),
                        Header::Control(h) => flag_bits(h.syn, false, false, h.cumulative),
                    };
                    assert_eq!(decoded_flags, flags);
                    assert_eq!(packet(&header, payload), input);
                }
                (None, Err(e)) => panic!("type {type_code:#x} flags {flags:#x}: {e}"),
            }
        }
    }
}

/// Every header value the types can express (kinds x flag bools x next_proto):
/// valid ones round-trip, invalid ones fail to encode and write nothing.
#[test]
fn every_expressible_header_round_trips_or_fails_to_encode() {
    let bools = [false, true];
    for kind in [DataKind::Data, DataKind::Rts] {
        for next_proto in ALL_NEXT_PROTOS {
            for syn in bools {
                for trimmed in bools {
                    for unordered in bools {
                        let h = DataHeader {
                            syn,
                            trimmed,
                            unordered,
                            ..data(kind, next_proto)
                        };
                        let is_rts = kind == DataKind::Rts;
                        let expected = if is_rts && (trimmed || unordered) {
                            Err(WireError::InvalidFlags {
                                type_code: 0x1,
                                flags: flag_bits(false, trimmed, unordered, false),
                            })
                        } else if is_rts != (next_proto == NextProto::None) {
                            Err(WireError::NextProtoMismatch {
                                type_code: kind as u8,
                                next_proto: next_proto as u8,
                            })
                        } else {
                            Ok(HEADER_LEN)
                        };
                        assert_round_trip_or_error(Header::Data(h), expected);
                    }
                }
            }
        }
    }
    for kind in ALL_CONTROL_KINDS {
        for syn in bools {
            for cumulative in bools {
                let h = ControlHeader {
                    syn,
                    cumulative,
                    ..control(kind)
                };
                let syn_ok = matches!(kind, ControlKind::Ack | ControlKind::Nack);
                let cumulative_ok = kind == ControlKind::Ack;
                let invalid = flag_bits(syn && !syn_ok, false, false, cumulative && !cumulative_ok);
                let expected = if invalid != 0 {
                    Err(WireError::InvalidFlags {
                        type_code: kind as u8,
                        flags: invalid,
                    })
                } else {
                    Ok(HEADER_LEN)
                };
                assert_round_trip_or_error(Header::Control(h), expected);
            }
        }
    }
}

fn assert_round_trip_or_error(header: Header, expected: Result<usize, WireError>) {
    let mut buf = [0xAA; HEADER_LEN + 3];
    let got = header.encode(&mut buf);
    assert_eq!(got, expected, "{header:?}");
    if got.is_err() {
        assert_eq!(
            buf,
            [0xAA; HEADER_LEN + 3],
            "a failed encode writes nothing"
        );
        return;
    }
    let payload_len = match header {
        Header::Data(h) if h.kind == DataKind::Data => 3,
        _ => 0,
    };
    let decoded = decode(&buf[..HEADER_LEN + payload_len]);
    assert_eq!(
        decoded,
        Ok((header, &buf[HEADER_LEN..HEADER_LEN + payload_len]))
    );
}

// ---- one test per malformed class ----

#[test]
fn short_buffer_is_truncated() {
    for len in 0..HEADER_LEN {
        assert_eq!(
            decode(&data_packet()[..len]),
            Err(WireError::Truncated { len })
        );
    }
}

#[test]
fn wrong_version_is_rejected() {
    for version in [0u8, 2, 15] {
        let mut buf = data_packet();
        buf[0] = (version << 4) | (buf[0] & 0x0F);
        assert_eq!(decode(&buf), Err(WireError::BadVersion(version)));
    }
}

#[test]
fn unknown_type_is_rejected() {
    for type_code in [0x2, 0x3, 0x7, 0xC, 0xF] {
        let mut buf = data_packet();
        buf[0] = 0x10 | type_code;
        assert_eq!(decode(&buf), Err(WireError::UnknownType(type_code)));
    }
}

#[test]
fn unknown_next_proto_is_rejected() {
    for code in [4u8, 0x7F, 0x81, 0xFE, 0xFF] {
        let mut buf = data_packet();
        buf[2] = code;
        assert_eq!(decode(&buf), Err(WireError::UnknownNextProto(code)));
    }
}

/// A native payload is DATA like any other: its header round-trips with the native
/// code in byte 2, and an RTS may not claim it (an RTS carries nothing).
#[test]
fn native_data_round_trips_and_native_rts_is_rejected() {
    let h = Header::Data(data(DataKind::Data, NextProto::Native));
    let buf = packet(&h, b"app bytes");
    assert_eq!(buf[2], 0x80);
    let (back, payload) = decode(&buf).expect("native DATA decodes");
    assert_eq!(back, h);
    assert_eq!(payload, b"app bytes");
    let mut rts = packet(&Header::Data(data(DataKind::Rts, NextProto::None)), &[]);
    rts[2] = NextProto::Native as u8;
    assert_eq!(
        decode(&rts),
        Err(WireError::NextProtoMismatch {
            type_code: 0x1,
            next_proto: 0x80
        })
    );
    let bad = Header::Data(data(DataKind::Rts, NextProto::Native));
    assert!(bad.encode(&mut [0u8; HEADER_LEN]).is_err());
}

#[test]
fn reserved_flag_bits_and_reserved_byte_are_rejected() {
    for bit in [0x10u8, 0x20, 0x40, 0x80] {
        let mut buf = data_packet();
        buf[1] |= bit;
        assert_eq!(decode(&buf), Err(WireError::ReservedBitsSet));
        let mut buf = packet(&Header::Control(control(ControlKind::Ack)), &[]);
        buf[1] |= bit;
        assert_eq!(decode(&buf), Err(WireError::ReservedBitsSet));
    }
    let mut buf = data_packet();
    buf[3] = 0x01;
    assert_eq!(decode(&buf), Err(WireError::ReservedBitsSet));
}

#[test]
fn flags_not_valid_for_the_type_are_rejected() {
    let cases = [
        (0x0, 0x08), // CUMULATIVE on DATA
        (0x1, 0x02), // TRIMMED on RTS
        (0x1, 0x04), // UNORDERED on RTS
        (0x8, 0x01), // SYN on PULL
        (0x9, 0x04), // UNORDERED on ACK
        (0xA, 0x08), // CUMULATIVE on NACK
        (0xB, 0x01), // SYN on RST
    ];
    for (type_code, bad) in cases {
        let mut buf = [0u8; HEADER_LEN];
        buf[0] = 0x10 | type_code;
        buf[1] = bad;
        assert_eq!(
            decode(&buf),
            Err(WireError::InvalidFlags {
                type_code,
                flags: bad
            })
        );
    }
}

#[test]
fn data_without_inner_protocol_and_rts_with_one_are_rejected() {
    let mut buf = data_packet();
    buf[2] = NextProto::None as u8;
    assert_eq!(
        decode(&buf),
        Err(WireError::NextProtoMismatch {
            type_code: 0x0,
            next_proto: 0
        })
    );
    let mut buf = packet(&Header::Data(data(DataKind::Rts, NextProto::None)), &[]);
    buf[2] = NextProto::Ethernet as u8;
    assert_eq!(
        decode(&buf),
        Err(WireError::NextProtoMismatch {
            type_code: 0x1,
            next_proto: 3
        })
    );
}

#[test]
fn control_packet_with_payload_is_rejected() {
    for kind in ALL_CONTROL_KINDS {
        let buf = packet(&Header::Control(control(kind)), b"abc");
        assert_eq!(decode(&buf), Err(WireError::PayloadOnControl { len: 3 }));
    }
}

#[test]
fn rts_with_payload_is_rejected() {
    let buf = packet(&Header::Data(data(DataKind::Rts, NextProto::None)), b"ab");
    assert_eq!(decode(&buf), Err(WireError::PayloadOnRts { len: 2 }));
}

#[test]
fn untrimmed_data_without_payload_is_rejected() {
    let buf = packet(&Header::Data(data(DataKind::Data, NextProto::Ipv4)), &[]);
    assert_eq!(decode(&buf), Err(WireError::MissingPayload));
}

/// The decision in the module doc: a trimmed DATA packet keeps its next_proto and may
/// keep any part of its inner packet, from nothing to the first headers.
#[test]
fn trimmed_data_may_carry_any_remnant_of_its_payload() {
    let h = Header::Data(DataHeader {
        trimmed: true,
        ..data(DataKind::Data, NextProto::Ipv4)
    });
    for remnant in [&[][..], &[0x45, 0x00, 0x05, 0xDC][..]] {
        let buf = packet(&h, remnant);
        assert_eq!(decode(&buf), Ok((h, remnant)));
    }
}

#[test]
fn encode_into_a_short_buffer_fails() {
    let headers = [
        Header::Data(data(DataKind::Data, NextProto::Ipv4)),
        Header::Data(data(DataKind::Rts, NextProto::None)),
        Header::Control(control(ControlKind::Pull)),
    ];
    for header in headers {
        for len in [0, 1, HEADER_LEN - 1] {
            let mut buf = vec![0; len];
            assert_eq!(
                header.encode(&mut buf),
                Err(WireError::BufferTooSmall { len })
            );
        }
        assert_eq!(header.encode(&mut [0; HEADER_LEN]), Ok(HEADER_LEN));
    }
}

// ---- property tests ----

fn any_valid_data_header() -> impl Strategy<Value = DataHeader> {
    let data_kind = (
        any::<(bool, bool, bool)>(),
        prop::sample::select(&ALL_NEXT_PROTOS[1..]),
    )
        .prop_map(|((syn, trimmed, unordered), next_proto)| DataHeader {
            syn,
            trimmed,
            unordered,
            ..data(DataKind::Data, next_proto)
        });
    let rts = any::<bool>().prop_map(|syn| DataHeader {
        syn,
        ..data(DataKind::Rts, NextProto::None)
    });
    (prop_oneof![data_kind, rts], any::<(u32, u32, u16, u16)>()).prop_map(
        |(h, (seq, pull_target, path_id, sender_id))| DataHeader {
            seq,
            pull_target,
            path_id,
            sender_id,
            ..h
        },
    )
}

fn any_valid_control_header() -> impl Strategy<Value = ControlHeader> {
    let kind_and_flags = prop_oneof![
        Just((ControlKind::Pull, false, false)),
        any::<(bool, bool)>().prop_map(|(s, c)| (ControlKind::Ack, s, c)),
        any::<bool>().prop_map(|s| (ControlKind::Nack, s, false)),
        Just((ControlKind::Rst, false, false)),
    ];
    (kind_and_flags, any::<(u16, u32, u32, u32)>()).prop_map(
        |((kind, syn, cumulative), (sender_id, ack_no, pull_no, busy_time_ns))| ControlHeader {
            kind,
            syn,
            cumulative,
            sender_id,
            ack_no,
            pull_no,
            busy_time_ns,
        },
    )
}

/// A valid header with a payload it may carry.
fn any_valid_packet() -> impl Strategy<Value = (Header, Vec<u8>)> {
    prop_oneof![
        any_valid_data_header().prop_flat_map(|h| {
            let len = match (h.kind, h.trimmed) {
                (DataKind::Rts, _) => 0..1,
                (DataKind::Data, true) => 0..65,
                (DataKind::Data, false) => 1..1500,
            };
            (
                Just(Header::Data(h)),
                prop::collection::vec(any::<u8>(), len),
            )
        }),
        any_valid_control_header().prop_map(|h| (Header::Control(h), Vec::new())),
    ]
}

/// Bytes that often get past the version and type checks, so decoding goes deep.
fn plausible_bytes() -> impl Strategy<Value = Vec<u8>> {
    (
        prop_oneof![any::<u8>(), (0u8..16).prop_map(|t| 0x10 | t)],
        prop_oneof![any::<u8>(), 0u8..16],
        prop_oneof![any::<u8>(), 0u8..5],
        prop_oneof![any::<u8>(), Just(0u8)],
        prop::collection::vec(any::<u8>(), 0..40),
    )
        .prop_map(|(b0, b1, b2, b3, rest)| {
            let mut bytes = vec![b0, b1, b2, b3];
            bytes.extend(rest);
            bytes
        })
}

proptest! {
    #[test]
    fn decode_inverts_encode((header, payload) in any_valid_packet()) {
        let buf = packet(&header, &payload);
        prop_assert_eq!(decode(&buf), Ok((header, &payload[..])));
    }

    /// Never panics; whatever it accepts re-encodes to the very same bytes.
    #[test]
    fn decode_never_panics_and_accepts_only_canonical_bytes(
        bytes in prop_oneof![prop::collection::vec(any::<u8>(), 0..64), plausible_bytes()]
    ) {
        if let Ok((header, payload)) = decode(&bytes) {
            prop_assert_eq!(packet(&header, payload), bytes.clone());
        }
    }
}

// ---- serial arithmetic ----

#[test]
fn serial_order_holds_across_the_wrap_point() {
    assert!(seq_lt(u32::MAX, 0));
    assert!(!seq_lt(0, u32::MAX));
    assert!(seq_lt(u32::MAX - 5, 5));
    assert!(seq_le(u32::MAX, 0));
    assert!(seq_le(7, 7));
    assert!(!seq_lt(7, 7));
    assert_eq!(seq_diff(0, u32::MAX), 1);
    assert_eq!(seq_diff(u32::MAX, 0), -1);
    assert_eq!(seq_diff(5, u32::MAX - 4), 10);
}

#[test]
fn serial_numbers_half_the_space_apart_are_unordered() {
    for a in [0u32, 1, 1 << 31, u32::MAX] {
        let b = a.wrapping_add(1 << 31);
        assert!(!seq_lt(a, b) && !seq_lt(b, a));
        assert_eq!(seq_diff(b, a), i32::MIN);
    }
    // One short of half the space still orders.
    assert!(seq_lt(0, (1 << 31) - 1));
    assert!(seq_lt(1 << 31, u32::MAX));
}

proptest! {
    #[test]
    fn serial_order_agrees_with_the_distance(a in any::<u32>(), d in 1u32..(1 << 31)) {
        let b = a.wrapping_add(d);
        prop_assert!(seq_lt(a, b));
        prop_assert!(!seq_lt(b, a));
        prop_assert!(seq_le(a, b) && !seq_le(b, a));
        prop_assert_eq!(i64::from(seq_diff(b, a)), i64::from(d));
        prop_assert_eq!(i64::from(seq_diff(a, b)), -i64::from(d));
    }

    #[test]
    fn an_epoch_owns_one_block_starting_at_its_isn(epoch in 0u32..(1 << EPOCH_BITS), k in 0..EPOCH_BLOCK) {
        let isn = isn_for_epoch(epoch);
        prop_assert_eq!(isn % EPOCH_BLOCK, 0);
        prop_assert_eq!(epoch_of(isn + k), epoch);
    }
}

#[test]
fn epochs_are_22_bits_and_compare_across_their_own_wrap() {
    assert_eq!(EPOCH_BLOCK, 1024);
    assert_eq!(EPOCH_BITS, 22);
    assert_eq!(isn_for_epoch(3), 3 * 1024);
    assert_eq!(epoch_of(3 * 1024 + 1023), 3);
    assert_eq!(epoch_of(u32::MAX), (1 << 22) - 1);
    // Bits beyond 22 cannot be carried, so epochs count modulo 2^22.
    assert_eq!(isn_for_epoch(1 << 22), 0);
    let last = (1 << 22) - 1;
    assert!(epoch_lt(last, 0), "epoch 0 follows the last 22-bit epoch");
    assert!(!epoch_lt(0, last));
    assert!(epoch_lt(5, 6) && !epoch_lt(6, 5) && !epoch_lt(5, 5));
    // The same two values in 32-bit order would say the opposite.
    assert!(seq_lt(0, last));
}

#[test]
fn a_trimming_switch_marks_data_headers_only() {
    let data = DataHeader {
        kind: DataKind::Data,
        syn: true,
        trimmed: false,
        unordered: false,
        next_proto: NextProto::Ipv4,
        seq: 7,
        pull_target: 9,
        path_id: 3,
        sender_id: 1,
    };
    let mut buf = [0u8; HEADER_LEN];
    data.encode(&mut buf).unwrap();
    // Cut to its header, an intact DATA packet would be malformed; marked, it is a
    // trimmed header like any other.
    assert_eq!(decode(&buf), Err(WireError::MissingPayload));
    mark_trimmed(&mut buf);
    let (h, rest) = decode(&buf).unwrap();
    assert!(rest.is_empty());
    assert_eq!(
        h,
        Header::Data(DataHeader {
            trimmed: true,
            ..data
        })
    );
    let rts = DataHeader {
        kind: DataKind::Rts,
        next_proto: NextProto::None,
        ..data
    };
    rts.encode(&mut buf).unwrap();
    let before = buf;
    mark_trimmed(&mut buf);
    assert_eq!(buf, before);
}

#[test]
fn path_id_of_reads_data_and_rts_headers_only() {
    let mut buf = [0u8; HEADER_LEN];
    let mut rts = data(DataKind::Rts, NextProto::None);
    rts.path_id = 0xBEEF;
    Header::Data(rts).encode(&mut buf).unwrap();
    assert_eq!(path_id_of(&buf), Some(0xBEEF));
    Header::Control(control(ControlKind::Ack))
        .encode(&mut buf)
        .unwrap();
    assert_eq!(path_id_of(&buf), None, "control headers carry no path");
    buf[0] = 0xF0 | (buf[0] & 0x0F);
    assert_eq!(path_id_of(&buf), None, "another version");
}
