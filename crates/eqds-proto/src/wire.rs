//! EQDS wire format: the 16-byte data and control headers (paper §4, Figure 4).
//!
//! The paper keeps only the field names of Figure 4; the widths and positions here
//! are ours, as are the encodings of the packet kinds and flags the paper names.
//! EQDS rides inside UDP, so the buffer given to [`decode`] is a UDP payload: one
//! EQDS header, then the inner packet. Every field is in network byte order.
//!
//! # Layout
//!
//! Both headers are 16 bytes and share bytes 0 and 1, so a reader learns the version
//! and which layout follows from byte 0 alone, before it trusts anything else:
//!
//! ```text
//!  byte 0          byte 1          byte 2          byte 3
//! +-------+-------+---------------+---------------+---------------+
//! |version| type  |     flags     |  next_proto   | reserved (0)  |  DATA, RTS
//! +-------+-------+---------------+---------------+---------------+
//! |                              seq                              |
//! +---------------------------------------------------------------+
//! |                          pull_target                          |
//! +-------------------------------+-------------------------------+
//! |            path_id            |           sender_id           |
//! +-------------------------------+-------------------------------+
//!
//! +-------+-------+---------------+-------------------------------+
//! |version| type  |     flags     |           sender_id           |  PULL, ACK,
//! +-------+-------+---------------+-------------------------------+  NACK, RST
//! |                            ack_no                             |
//! +---------------------------------------------------------------+
//! |                            pull_no                            |
//! +---------------------------------------------------------------+
//! |                       busy_time (ns)                          |
//! +---------------------------------------------------------------+
//! ```
//!
//! Both headers keep Figure 4's fields in its order, with 32-bit numbers and 16-bit
//! ids. Figure 4 gives the data header no type field and no version, but RTS needs a
//! type (the paper names RTS, §5, without an encoding) and a reader needs one byte
//! common to both layouts to tell them apart. So byte 0 carries the version (high
//! nibble, [`VERSION`] = 1) and the type (low nibble), the flags follow in byte 1, and
//! byte 3 of the data header is reserved.
//!
//! | type | name | layout  | flags allowed         | payload                               |
//! |------|------|---------|-----------------------|---------------------------------------|
//! | 0x0  | DATA | data    | SYN TRIMMED UNORDERED | inner packet; required unless TRIMMED |
//! | 0x1  | RTS  | data    | SYN                   | none                                  |
//! | 0x8  | PULL | control | none                  | none                                  |
//! | 0x9  | ACK  | control | SYN CUMULATIVE        | none                                  |
//! | 0xA  | NACK | control | SYN                   | none                                  |
//! | 0xB  | RST  | control | none                  | none                                  |
//!
//! Bit 3 of the type selects the layout (0 data, 1 control), so hardware can branch on
//! a single bit. SYN-ACK and SYN-NACK (Appendix A) are ACK and NACK with SYN set.
//!
//! Flags (byte 1): `0x01` SYN, `0x02` TRIMMED, `0x04` UNORDERED, `0x08` CUMULATIVE
//! (a coalesced ACK covering every seq up to `ack_no`); `0xF0` is reserved.
//!
//! `next_proto` (data layout, byte 2): 0 none, 1 IPv4, 2 IPv6, 3 Ethernet (VXLAN-style
//! inner frames), the numbering VXLAN-GPE uses for the same three, and 0x80 native (a
//! payload an application handed to EQDS directly, with no inner header; the code sits
//! outside the range VXLAN-GPE assigns so the two never collide). DATA always names an
//! inner protocol; RTS, which carries nothing, always says none.
//!
//! # Decoding is strict
//!
//! Every reserved bit must be zero, every code must be known and every flag must be
//! valid for its type, so an accepted header has exactly one encoding:
//! `encode(decode(b))` gives back `b`. A later format change bumps the version rather
//! than giving meaning to bits old readers silently ignore. Malformed input is an
//! [`WireError`], never a panic: the daemon counts and drops it.
//!
//! A trimmed packet is a DATA packet a switch cut down and marked TRIMMED; every other
//! field is left as the sender wrote it, so `next_proto` still names the inner
//! protocol. Whatever survived of the inner packet (nothing, or its first headers when
//! the switch trims to a fixed size such as 64 bytes) is returned as the payload; the
//! receiver answers with a NACK and never delivers it.

use thiserror::Error;

/// Length in bytes of both the data and the control header.
pub const HEADER_LEN: usize = 16;

/// The format version this module reads and writes (high nibble of byte 0).
pub const VERSION: u8 = 1;

/// Bit offset of the epoch inside a sequence number: an epoch's first SYN has its
/// low 10 bits zero (paper Appendix A).
pub const EPOCH_SHIFT: u32 = 10;

/// Sequence numbers per epoch block: the initial window of an epoch must fit in it.
pub const EPOCH_BLOCK: u32 = 1 << EPOCH_SHIFT;

/// Width of an epoch: the bits of a 32-bit sequence number above the block.
pub const EPOCH_BITS: u32 = u32::BITS - EPOCH_SHIFT;

/// Byte offsets inside the 16-byte header.
mod field {
    /// `version:4 | type:4`, common to both layouts.
    pub const VERSION_TYPE: usize = 0;
    /// Flag bits, common to both layouts.
    pub const FLAGS: usize = 1;

    pub const NEXT_PROTO: usize = 2;
    pub const RESERVED: usize = 3;
    pub const SEQ: usize = 4;
    pub const PULL_TARGET: usize = 8;
    pub const PATH_ID: usize = 12;
    pub const DATA_SENDER_ID: usize = 14;

    pub const CONTROL_SENDER_ID: usize = 2;
    pub const ACK_NO: usize = 4;
    pub const PULL_NO: usize = 8;
    pub const BUSY_TIME: usize = 12;
}

/// Flag bits of byte 1. Private: callers see them as the `bool` fields of the headers.
mod flag {
    pub const SYN: u8 = 0x01;
    pub const TRIMMED: u8 = 0x02;
    pub const UNORDERED: u8 = 0x04;
    pub const CUMULATIVE: u8 = 0x08;
    /// Bits no version-1 packet may set.
    pub const RESERVED: u8 = 0xF0;
}

/// Why a buffer is not a well-formed EQDS packet, or a header cannot be encoded.
///
/// One variant per class of fault, so the daemon can count each class separately.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum WireError {
    /// The buffer is shorter than a header.
    #[error("packet of {len} bytes is shorter than the {HEADER_LEN}-byte EQDS header")]
    Truncated {
        /// Length of the buffer given to [`decode`].
        len: usize,
    },
    /// The output buffer cannot hold a header.
    #[error("output buffer of {len} bytes cannot hold the {HEADER_LEN}-byte EQDS header")]
    BufferTooSmall {
        /// Length of the buffer given to `encode`.
        len: usize,
    },
    /// The version nibble is not [`VERSION`].
    #[error("unsupported EQDS version {0}")]
    BadVersion(u8),
    /// The type nibble names no packet type.
    #[error("unknown packet type {0:#x}")]
    UnknownType(u8),
    /// The `next_proto` byte names no inner protocol.
    #[error("unknown next_proto {0}")]
    UnknownNextProto(u8),
    /// A reserved flag bit or the data header's reserved byte is not zero.
    #[error("reserved bits set")]
    ReservedBitsSet,
    /// A flag is set that this packet type may not carry.
    #[error("flags {flags:#04x} are not valid on packet type {type_code:#x}")]
    InvalidFlags {
        /// The packet type (low nibble of byte 0).
        type_code: u8,
        /// The offending flag bits only.
        flags: u8,
    },
    /// DATA without an inner protocol, or RTS with one.
    #[error("packet type {type_code:#x} cannot have next_proto {next_proto}")]
    NextProtoMismatch {
        /// The packet type (low nibble of byte 0).
        type_code: u8,
        /// The `next_proto` code it carried.
        next_proto: u8,
    },
    /// A control packet has bytes after its header.
    #[error("control packet carries {len} bytes of payload")]
    PayloadOnControl {
        /// Bytes after the header.
        len: usize,
    },
    /// An RTS has bytes after its header.
    #[error("RTS carries {len} bytes of payload")]
    PayloadOnRts {
        /// Bytes after the header.
        len: usize,
    },
    /// An untrimmed DATA packet has nothing after its header.
    #[error("untrimmed DATA packet has no payload")]
    MissingPayload,
}

/// The two packet types that use the data layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum DataKind {
    /// An encapsulated packet, possibly trimmed by a switch.
    Data = 0x0,
    /// Request to send (§4.1, §5; the encoding is ours): header only, asks for credit
    /// up to `pull_target` without consuming a sequence number.
    Rts = 0x1,
}

impl DataKind {
    fn from_code(code: u8) -> Option<Self> {
        match code {
            0x0 => Some(Self::Data),
            0x1 => Some(Self::Rts),
            _ => None,
        }
    }

    fn allowed_flags(self) -> u8 {
        match self {
            Self::Data => flag::SYN | flag::TRIMMED | flag::UNORDERED,
            Self::Rts => flag::SYN,
        }
    }
}

/// The packet types that use the control layout (receiver to sender).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ControlKind {
    /// One more MTU of credit: `pull_no` has gone up by one (§5).
    Pull = 0x8,
    /// `ack_no` arrived (§5). With SYN it is the SYN-ACK of Appendix A.
    Ack = 0x9,
    /// `ack_no` arrived trimmed and must be resent (§5). With SYN, a SYN-NACK.
    Nack = 0xA,
    /// The receiver holds no state for this tunnel (Appendix A).
    Rst = 0xB,
}

impl ControlKind {
    fn from_code(code: u8) -> Option<Self> {
        match code {
            0x8 => Some(Self::Pull),
            0x9 => Some(Self::Ack),
            0xA => Some(Self::Nack),
            0xB => Some(Self::Rst),
            _ => None,
        }
    }

    fn allowed_flags(self) -> u8 {
        match self {
            Self::Pull | Self::Rst => 0,
            Self::Ack => flag::SYN | flag::CUMULATIVE,
            Self::Nack => flag::SYN,
        }
    }
}

/// What a data-layout packet carries after its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum NextProto {
    /// Nothing: only an RTS says this.
    None = 0,
    /// An IPv4 packet.
    Ipv4 = 1,
    /// An IPv6 packet.
    Ipv6 = 2,
    /// An Ethernet frame (EQDS used as a stateful VXLAN, §5).
    Ethernet = 3,
    /// An application's own payload, handed to the EQIF through a native interface
    /// rather than as an IP packet (the daemon's native socket, `eqdsperf`).
    Native = 0x80,
}

impl NextProto {
    fn from_code(code: u8) -> Option<Self> {
        match code {
            0 => Some(Self::None),
            1 => Some(Self::Ipv4),
            2 => Some(Self::Ipv6),
            3 => Some(Self::Ethernet),
            0x80 => Some(Self::Native),
            _ => None,
        }
    }
}

/// A parsed data-layout header: DATA or RTS, sender to receiver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DataHeader {
    /// DATA or RTS.
    pub kind: DataKind,
    /// The tunnel is not yet established at the sender (Appendix A): the receiver may
    /// (re)create its state from this packet's epoch.
    pub syn: bool,
    /// A switch cut this packet to its headers (§5). DATA only.
    pub trimmed: bool,
    /// Deliver at once, bypassing the reorder queue (§5's unordered service, for the
    /// native EQIF; the flag is ours). DATA only.
    pub unordered: bool,
    /// The inner protocol: [`NextProto::None`] exactly when `kind` is RTS.
    pub next_proto: NextProto,
    /// Per-tunnel sequence number; its upper [`EPOCH_BITS`] are the epoch. An RTS
    /// carries the next seq to be sent and consumes none (our choice).
    pub seq: u32,
    /// The pull number the sender wants the receiver to reach, counted in MTUs and
    /// compared with serial arithmetic (§5).
    pub pull_target: u32,
    /// The path the sender chose for this packet; maps to outer entropy such as the
    /// UDP source port (Fig. 4 names the field; the mapping is ours).
    pub path_id: u16,
    /// Names the sending tunnel/EQIF at the source host (our reading of Fig. 4's
    /// sender ID).
    pub sender_id: u16,
}

impl DataHeader {
    /// Writes this header into the first [`HEADER_LEN`] bytes of `buf` and returns
    /// [`HEADER_LEN`]; the caller appends the payload.
    ///
    /// Fails, writing nothing, if the header breaks a rule [`decode`] enforces (so every
    /// header written can be read back) or if `buf` is too short.
    pub fn encode(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        check_flags(self.kind as u8, self.flags(), self.kind.allowed_flags())?;
        check_next_proto(self.kind, self.next_proto)?;
        let out = start_header(buf, self.kind as u8, self.flags())?;
        out[field::NEXT_PROTO] = self.next_proto as u8;
        out[field::RESERVED] = 0;
        write_u32(out, field::SEQ, self.seq);
        write_u32(out, field::PULL_TARGET, self.pull_target);
        write_u16(out, field::PATH_ID, self.path_id);
        write_u16(out, field::DATA_SENDER_ID, self.sender_id);
        Ok(HEADER_LEN)
    }

    fn flags(&self) -> u8 {
        let mut bits = 0;
        if self.syn {
            bits |= flag::SYN;
        }
        if self.trimmed {
            bits |= flag::TRIMMED;
        }
        if self.unordered {
            bits |= flag::UNORDERED;
        }
        bits
    }

    fn parse(
        kind: DataKind,
        hdr: &[u8; HEADER_LEN],
        payload_len: usize,
    ) -> Result<Self, WireError> {
        if hdr[field::RESERVED] != 0 {
            return Err(WireError::ReservedBitsSet);
        }
        let flags = hdr[field::FLAGS];
        check_flags(kind as u8, flags, kind.allowed_flags())?;
        let code = hdr[field::NEXT_PROTO];
        let next_proto = NextProto::from_code(code).ok_or(WireError::UnknownNextProto(code))?;
        check_next_proto(kind, next_proto)?;
        let header = Self {
            kind,
            syn: flags & flag::SYN != 0,
            trimmed: flags & flag::TRIMMED != 0,
            unordered: flags & flag::UNORDERED != 0,
            next_proto,
            seq: read_u32(hdr, field::SEQ),
            pull_target: read_u32(hdr, field::PULL_TARGET),
            path_id: read_u16(hdr, field::PATH_ID),
            sender_id: read_u16(hdr, field::DATA_SENDER_ID),
        };
        match kind {
            DataKind::Rts if payload_len != 0 => Err(WireError::PayloadOnRts { len: payload_len }),
            // A trimmed packet may have lost all of its payload; an intact one cannot
            // be empty, since there would be nothing to deliver.
            DataKind::Data if !header.trimmed && payload_len == 0 => Err(WireError::MissingPayload),
            _ => Ok(header),
        }
    }
}

/// Writes the two bytes both layouts share (version and type, flags) into `buf` and
/// returns the header's bytes for the rest; writes nothing if `buf` cannot hold a
/// header.
fn start_header(buf: &mut [u8], kind: u8, flags: u8) -> Result<&mut [u8; HEADER_LEN], WireError> {
    let len = buf.len();
    let out = buf
        .first_chunk_mut::<HEADER_LEN>()
        .ok_or(WireError::BufferTooSmall { len })?;
    out[field::VERSION_TYPE] = version_type(kind);
    out[field::FLAGS] = flags;
    Ok(out)
}

/// A parsed control-layout header: PULL, ACK, NACK or RST, receiver to sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ControlHeader {
    /// PULL, ACK, NACK or RST.
    pub kind: ControlKind,
    /// The receiver accepted a SYN for the epoch of `ack_no`: SYN-ACK or SYN-NACK.
    /// ACK and NACK only.
    pub syn: bool,
    /// The ACK covers every seq up to and including `ack_no` (deferred ACKs). ACK only.
    pub cumulative: bool,
    /// Echo of the data packets' `sender_id`, so the sender finds its tunnel directly.
    pub sender_id: u16,
    /// The seq an ACK or NACK refers to. Meaningless in PULL and RST, which send 0.
    pub ack_no: u32,
    /// The receiver's cumulative pull number for this tunnel (§5). Every type
    /// carries it and only a PULL advances it, so any control packet repairs lost
    /// PULLs (our encoding).
    pub pull_no: u32,
    /// How long the receiver's access link will stay saturated, in nanoseconds from
    /// when this packet was sent (§5). Nanoseconds rather than coarser units
    /// because 2^32 ns (4.29 s) is already far beyond any datacenter busy period.
    pub busy_time_ns: u32,
}

impl ControlHeader {
    /// Writes this header into the first [`HEADER_LEN`] bytes of `buf` and returns
    /// [`HEADER_LEN`]. Control packets carry nothing after the header.
    ///
    /// Fails, writing nothing, if a flag is not valid for `kind` or if `buf` is too
    /// short.
    pub fn encode(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        check_flags(self.kind as u8, self.flags(), self.kind.allowed_flags())?;
        let out = start_header(buf, self.kind as u8, self.flags())?;
        write_u16(out, field::CONTROL_SENDER_ID, self.sender_id);
        write_u32(out, field::ACK_NO, self.ack_no);
        write_u32(out, field::PULL_NO, self.pull_no);
        write_u32(out, field::BUSY_TIME, self.busy_time_ns);
        Ok(HEADER_LEN)
    }

    fn flags(&self) -> u8 {
        let mut bits = 0;
        if self.syn {
            bits |= flag::SYN;
        }
        if self.cumulative {
            bits |= flag::CUMULATIVE;
        }
        bits
    }

    fn parse(
        kind: ControlKind,
        hdr: &[u8; HEADER_LEN],
        payload_len: usize,
    ) -> Result<Self, WireError> {
        let flags = hdr[field::FLAGS];
        check_flags(kind as u8, flags, kind.allowed_flags())?;
        if payload_len != 0 {
            return Err(WireError::PayloadOnControl { len: payload_len });
        }
        Ok(Self {
            kind,
            syn: flags & flag::SYN != 0,
            cumulative: flags & flag::CUMULATIVE != 0,
            sender_id: read_u16(hdr, field::CONTROL_SENDER_ID),
            ack_no: read_u32(hdr, field::ACK_NO),
            pull_no: read_u32(hdr, field::PULL_NO),
            busy_time_ns: read_u32(hdr, field::BUSY_TIME),
        })
    }
}

/// Either EQDS header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Header {
    /// DATA or RTS.
    Data(DataHeader),
    /// PULL, ACK, NACK or RST.
    Control(ControlHeader),
}

impl Header {
    /// Writes the header into the start of `buf`; see [`DataHeader::encode`] and
    /// [`ControlHeader::encode`].
    pub fn encode(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        match self {
            Self::Data(h) => h.encode(buf),
            Self::Control(h) => h.encode(buf),
        }
    }
}

/// Parses one EQDS packet (a UDP payload) into its header and the bytes after it.
///
/// The payload of an intact DATA packet is the inner packet; that of a trimmed one is
/// whatever the switch left of it and must not be delivered. RTS and control packets
/// have an empty payload (anything else is an error).
pub fn decode(buf: &[u8]) -> Result<(Header, &[u8]), WireError> {
    let (hdr, payload) = buf
        .split_first_chunk::<HEADER_LEN>()
        .ok_or(WireError::Truncated { len: buf.len() })?;
    Ok((decode_header(hdr, payload.len())?, payload))
}

/// What a trimming switch does to an EQDS packet it cuts to its header: sets the
/// TRIMMED flag of a DATA header in place. Anything else is left alone, since
/// switches trim only data.
pub fn mark_trimmed(hdr: &mut [u8; HEADER_LEN]) {
    if DataKind::from_code(hdr[field::VERSION_TYPE] & 0x0F) == Some(DataKind::Data) {
        hdr[field::FLAGS] |= flag::TRIMMED;
    }
}

/// Parses an EQDS header followed by `payload_len` bytes that the caller keeps
/// elsewhere (a simulator that carries the header beside its packet), with exactly
/// the checks of [`decode`].
pub fn decode_header(hdr: &[u8; HEADER_LEN], payload_len: usize) -> Result<Header, WireError> {
    let version = hdr[field::VERSION_TYPE] >> 4;
    if version != VERSION {
        return Err(WireError::BadVersion(version));
    }
    let type_code = hdr[field::VERSION_TYPE] & 0x0F;
    let header = if let Some(kind) = DataKind::from_code(type_code) {
        Header::Data(DataHeader::parse(kind, hdr, payload_len)?)
    } else if let Some(kind) = ControlKind::from_code(type_code) {
        Header::Control(ControlHeader::parse(kind, hdr, payload_len)?)
    } else {
        return Err(WireError::UnknownType(type_code));
    };
    Ok(header)
}

/// The path id of an encoded DATA or RTS header (`None` for control headers, which
/// carry none, and for anything that is not a header of this version). For callers
/// that send each packet on its path's socket without decoding the whole header.
pub fn path_id_of(hdr: &[u8; HEADER_LEN]) -> Option<u16> {
    let version = hdr[field::VERSION_TYPE] >> 4;
    let type_code = hdr[field::VERSION_TYPE] & 0x0F;
    (version == VERSION && DataKind::from_code(type_code).is_some())
        .then(|| read_u16(hdr, field::PATH_ID))
}

/// Reserved bits first, so a packet from a later format reads as such rather than as
/// a misuse of today's flags.
fn check_flags(type_code: u8, flags: u8, allowed: u8) -> Result<(), WireError> {
    if flags & flag::RESERVED != 0 {
        return Err(WireError::ReservedBitsSet);
    }
    let invalid = flags & !allowed;
    if invalid != 0 {
        return Err(WireError::InvalidFlags {
            type_code,
            flags: invalid,
        });
    }
    Ok(())
}

fn check_next_proto(kind: DataKind, next_proto: NextProto) -> Result<(), WireError> {
    let header_only = next_proto == NextProto::None;
    if header_only != (kind == DataKind::Rts) {
        return Err(WireError::NextProtoMismatch {
            type_code: kind as u8,
            next_proto: next_proto as u8,
        });
    }
    Ok(())
}

fn version_type(type_code: u8) -> u8 {
    (VERSION << 4) | type_code
}

fn read_u16(hdr: &[u8; HEADER_LEN], at: usize) -> u16 {
    u16::from_be_bytes([hdr[at], hdr[at + 1]])
}

fn read_u32(hdr: &[u8; HEADER_LEN], at: usize) -> u32 {
    u32::from_be_bytes([hdr[at], hdr[at + 1], hdr[at + 2], hdr[at + 3]])
}

fn write_u16(hdr: &mut [u8; HEADER_LEN], at: usize, value: u16) {
    hdr[at..at + 2].copy_from_slice(&value.to_be_bytes());
}

fn write_u32(hdr: &mut [u8; HEADER_LEN], at: usize, value: u32) {
    hdr[at..at + 4].copy_from_slice(&value.to_be_bytes());
}

// Serial-number arithmetic (RFC 1982, SERIAL_BITS = 32). Sequence and pull numbers
// wrap modulo 2^32 and random epochs can start anywhere, so plain `<` is wrong near
// the wrap point.

/// Half the 32-bit number space: the farthest apart two serial numbers can be and
/// still compare.
const SERIAL_HALF: u32 = 1 << 31;

/// `a` comes before `b` in serial order (RFC 1982 §3.2).
///
/// Numbers exactly 2^31 apart are undefined in RFC 1982; here neither is less than the
/// other, so `seq_lt` never holds both ways.
pub const fn seq_lt(a: u32, b: u32) -> bool {
    a != b && b.wrapping_sub(a) < SERIAL_HALF
}

/// `a` equals `b` or comes before it in serial order.
pub const fn seq_le(a: u32, b: u32) -> bool {
    a == b || seq_lt(a, b)
}

/// The signed distance `a - b`: positive when `a` is after `b`.
///
/// Exact while the two are less than 2^31 apart; at exactly 2^31 it is `i32::MIN`.
pub const fn seq_diff(a: u32, b: u32) -> i32 {
    a.wrapping_sub(b) as i32
}

/// The epoch a sequence number belongs to: its upper [`EPOCH_BITS`] bits.
pub const fn epoch_of(seq: u32) -> u32 {
    seq >> EPOCH_SHIFT
}

/// The first sequence number of `epoch`: its low 10 bits are zero. Epoch bits above
/// [`EPOCH_BITS`] do not fit and are dropped, so epochs count modulo 2^22.
pub const fn isn_for_epoch(epoch: u32) -> u32 {
    epoch << EPOCH_SHIFT
}

/// Epoch `a` comes before epoch `b` in serial order over [`EPOCH_BITS`] bits.
///
/// Epochs wrap at 2^22, not 2^32, so [`seq_lt`] on raw epochs would misorder them near
/// the wrap; comparing their first sequence numbers gives the 22-bit order.
pub const fn epoch_lt(a: u32, b: u32) -> bool {
    seq_lt(isn_for_epoch(a), isn_for_epoch(b))
}

#[cfg(test)]
mod tests;
