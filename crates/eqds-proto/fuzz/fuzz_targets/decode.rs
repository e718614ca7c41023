//! Feeds arbitrary bytes to `wire::decode`. It must never panic, and whatever it
//! accepts must re-encode to the same bytes and decode to the same header again.

#![no_main]

use eqds_proto::wire::{decode, HEADER_LEN};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let Ok((header, payload)) = decode(input) else {
        return;
    };
    let mut buf = vec![0; HEADER_LEN + payload.len()];
    let n = header.encode(&mut buf).expect("a decoded header encodes");
    buf[n..].copy_from_slice(payload);
    // Decoding is strict, so there is one encoding per header: the input itself.
    assert_eq!(buf, input);
    let (again, again_payload) = decode(&buf).expect("an encoded header decodes");
    assert_eq!(again, header);
    assert_eq!(again_payload, payload);
});
