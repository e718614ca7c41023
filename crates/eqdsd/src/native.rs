//! The native interface: applications hand payloads to EQDS directly, without an IP
//! packet around them, through a Unix datagram socket (`native.socket`).
//!
//! Every datagram between an application and the daemon starts with an 8-byte header:
//!
//! ```text
//!  byte 0          byte 1          byte 2          byte 3
//! +---------------+---------------+---------------+---------------+
//! |  version (1)  |     kind      |    reason     | reserved (0)  |
//! +---------------+---------------+---------------+---------------+
//! |               peer: tunnel IPv4 address of the far daemon     |
//! +---------------------------------------------------------------+
//! ```
//!
//! | kind | name   | direction     | peer is        | payload                |
//! |------|--------|---------------|----------------|------------------------|
//! | 0    | DATA   | app to daemon | destination    | required (1..=inner MTU) |
//! | 0    | DATA   | daemon to app | source         | as the sender wrote it |
//! | 1    | HELLO  | app to daemon | 0.0.0.0        | none                   |
//! | 1    | HELLO  | daemon to app | 0.0.0.0        | none                   |
//! | 2    | BUSY   | daemon to app | destination    | none                   |
//! | 3    | REJECT | daemon to app | destination    | none; `reason` says why |
//!
//! A peer is named by its tunnel address, as in the peer table: the address its
//! daemon listens on (`tunnel.listen`'s IP), or any address of a `[[peer_range]]`.
//! Delivered payloads name their source the same way, so an application answers by
//! sending to the peer it heard from.
//!
//! The application whose datagram the daemon read last (HELLO or DATA, from a bound
//! socket) is the one that receives: delivered payloads, BUSY and REJECT go to it.
//! BUSY means the destination's send queue was full and the payload was not taken
//! (the application backs off and sends it again if it wants to); REJECT means it
//! never will be (`reason`: [`Reject`]). `reason` is 0 in every other kind.
//!
//! Replies are reliable and in order: the daemon answers each HELLO with a HELLO,
//! and a reply the application's receive queue cannot take waits, with the daemon
//! reading nothing more, until the queue drains (Linux queues only
//! `net.unix.max_dgram_qlen`, often 10, datagrams per socket). So an application
//! that has its HELLO answered has heard of every payload before it that was
//! refused; eqdsperf uses this to count what the daemon took.
//!
//! Decoding is strict like the EQDS wire format: anything else is an error, counted
//! and dropped by the daemon, never a panic.

use std::net::Ipv4Addr;

use thiserror::Error;

/// Length of the native header.
pub const NATIVE_HEADER_LEN: usize = 8;

/// The version this module reads and writes.
pub const NATIVE_VERSION: u8 = 1;

/// What a native datagram is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// A payload for (or from) `peer`.
    Data = 0,
    /// An application announces itself as the receiver, without sending anything.
    Hello = 1,
    /// The payload for `peer` found its send queue full and was not taken.
    Busy = 2,
    /// The payload for `peer` cannot be sent; `reason` says why.
    Reject = 3,
}

/// Why a payload was rejected (byte 2 of a REJECT).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Reject {
    /// No peer or peer range has that tunnel address (or the peer table is full).
    UnknownPeer = 1,
    /// The payload is larger than the tunnel's inner MTU.
    TooLarge = 2,
}

/// A decoded native header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NativeHeader {
    /// What the datagram is.
    pub kind: Kind,
    /// The peer's tunnel address: destination, or source of a delivered payload.
    pub peer: Ipv4Addr,
    /// For [`Kind::Reject`], why.
    pub reason: Option<Reject>,
}

/// Why a datagram is not a well-formed native datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum NativeError {
    /// Shorter than the header.
    #[error("native datagram of {0} bytes is shorter than the 8-byte header")]
    Truncated(usize),
    /// The version byte is not [`NATIVE_VERSION`].
    #[error("native header version {0}, expected {NATIVE_VERSION}")]
    BadVersion(u8),
    /// Unknown kind.
    #[error("unknown native kind {0}")]
    UnknownKind(u8),
    /// A reason where none belongs, an unknown reason, or the reserved byte set.
    #[error("native header reserved or reason byte invalid")]
    Reserved,
    /// A payload where none belongs, or none where one is required.
    #[error("native {kind:?} with a payload of {len} bytes")]
    BadPayload {
        /// The datagram's kind.
        kind: Kind,
        /// Its payload length.
        len: usize,
    },
}

impl NativeHeader {
    /// A DATA header for (or from) `peer`.
    pub fn data(peer: Ipv4Addr) -> Self {
        Self {
            kind: Kind::Data,
            peer,
            reason: None,
        }
    }

    /// The 8 header bytes.
    pub fn encode(&self) -> [u8; NATIVE_HEADER_LEN] {
        let mut b = [0u8; NATIVE_HEADER_LEN];
        b[0] = NATIVE_VERSION;
        b[1] = self.kind as u8;
        b[2] = self.reason.map_or(0, |r| r as u8);
        b[4..8].copy_from_slice(&self.peer.octets());
        b
    }
}

/// Splits a native datagram into its header and payload.
pub fn decode(buf: &[u8]) -> Result<(NativeHeader, &[u8]), NativeError> {
    if buf.len() < NATIVE_HEADER_LEN {
        return Err(NativeError::Truncated(buf.len()));
    }
    if buf[0] != NATIVE_VERSION {
        return Err(NativeError::BadVersion(buf[0]));
    }
    let kind = match buf[1] {
        0 => Kind::Data,
        1 => Kind::Hello,
        2 => Kind::Busy,
        3 => Kind::Reject,
        k => return Err(NativeError::UnknownKind(k)),
    };
    if buf[3] != 0 {
        return Err(NativeError::Reserved);
    }
    let reason = match (kind, buf[2]) {
        (Kind::Reject, 1) => Some(Reject::UnknownPeer),
        (Kind::Reject, 2) => Some(Reject::TooLarge),
        (Kind::Reject, _) => return Err(NativeError::Reserved),
        (_, 0) => None,
        _ => return Err(NativeError::Reserved),
    };
    let peer = Ipv4Addr::new(buf[4], buf[5], buf[6], buf[7]);
    let payload = &buf[NATIVE_HEADER_LEN..];
    let wants_payload = kind == Kind::Data;
    if wants_payload == payload.is_empty() {
        return Err(NativeError::BadPayload {
            kind,
            len: payload.len(),
        });
    }
    Ok((NativeHeader { kind, peer, reason }, payload))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer() -> Ipv4Addr {
        Ipv4Addr::new(10, 77, 2, 1)
    }

    #[test]
    fn header_bytes_match_the_documented_layout() {
        let h = NativeHeader::data(peer());
        assert_eq!(h.encode(), [1, 0, 0, 0, 10, 77, 2, 1]);
        let r = NativeHeader {
            kind: Kind::Reject,
            peer: peer(),
            reason: Some(Reject::TooLarge),
        };
        assert_eq!(r.encode(), [1, 3, 2, 0, 10, 77, 2, 1]);
    }

    #[test]
    fn every_kind_round_trips() {
        let cases = [
            (NativeHeader::data(peer()), &b"payload"[..]),
            (
                NativeHeader {
                    kind: Kind::Hello,
                    peer: Ipv4Addr::UNSPECIFIED,
                    reason: None,
                },
                &[][..],
            ),
            (
                NativeHeader {
                    kind: Kind::Busy,
                    peer: peer(),
                    reason: None,
                },
                &[][..],
            ),
            (
                NativeHeader {
                    kind: Kind::Reject,
                    peer: peer(),
                    reason: Some(Reject::UnknownPeer),
                },
                &[][..],
            ),
        ];
        for (h, payload) in cases {
            let mut buf = h.encode().to_vec();
            buf.extend_from_slice(payload);
            assert_eq!(decode(&buf), Ok((h, payload)), "{h:?}");
        }
    }

    #[test]
    fn malformed_datagrams_are_errors() {
        let good = {
            let mut b = NativeHeader::data(peer()).encode().to_vec();
            b.push(7);
            b
        };
        for len in 0..NATIVE_HEADER_LEN {
            assert_eq!(decode(&good[..len]), Err(NativeError::Truncated(len)));
        }
        let corrupt = |at: usize, v: u8| {
            let mut b = good.clone();
            b[at] = v;
            decode(&b).map(|(h, _)| h)
        };
        assert_eq!(corrupt(0, 2), Err(NativeError::BadVersion(2)));
        assert_eq!(corrupt(0, 0), Err(NativeError::BadVersion(0)));
        assert_eq!(corrupt(1, 4), Err(NativeError::UnknownKind(4)));
        assert_eq!(corrupt(1, 0xFF), Err(NativeError::UnknownKind(0xFF)));
        assert_eq!(corrupt(2, 1), Err(NativeError::Reserved), "reason on DATA");
        assert_eq!(corrupt(3, 1), Err(NativeError::Reserved));
        // DATA needs a payload; HELLO, BUSY and REJECT may not have one.
        assert_eq!(
            decode(&good[..NATIVE_HEADER_LEN]),
            Err(NativeError::BadPayload {
                kind: Kind::Data,
                len: 0
            })
        );
        assert_eq!(
            corrupt(1, 1),
            Err(NativeError::BadPayload {
                kind: Kind::Hello,
                len: 1
            })
        );
        let mut reject = good[..NATIVE_HEADER_LEN].to_vec();
        reject[1] = 3;
        assert_eq!(decode(&reject), Err(NativeError::Reserved), "no reason");
        reject[2] = 9;
        assert_eq!(
            decode(&reject),
            Err(NativeError::Reserved),
            "unknown reason"
        );
    }

    #[test]
    fn decode_never_panics_on_short_or_random_bytes() {
        // Every 9-byte datagram whose first two bytes vary and whose rest is fixed,
        // plus every length up to 64 of one pattern: no panics, only errors or headers.
        for b0 in 0..=255u8 {
            for b1 in 0..=255u8 {
                let buf = [b0, b1, 0, 0, 1, 2, 3, 4, 5];
                let _ = decode(&buf);
            }
        }
        let pattern: Vec<u8> = (0..64u8).map(|i| i.wrapping_mul(37)).collect();
        for len in 0..pattern.len() {
            let _ = decode(&pattern[..len]);
        }
    }
}
