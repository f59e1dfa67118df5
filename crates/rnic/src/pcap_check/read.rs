//! Reading capture files: classic pcap (either byte order, microsecond or nanosecond
//! timestamps) and pcapng (SHB, IDB, EPB and SPB; other blocks are passed over), one record at
//! a time: the reader's buffer holds the largest record (at most 16 MiB), whatever the file's
//! size. (The analysis behind it keeps figures per flow, so its memory grows with the flows
//! and with the requests of a flow that ask for an answer, not with the file as such.)
//!
//! The container formats are parsed by `pcap-parser` (rusticata's, already a dependency of the
//! workspace's tests); this module adds what an analysis needs on top: the format probe with a
//! message that names what was expected, pcapng interfaces (link type, snap length, timestamp
//! resolution and offset) tracked per section, timestamps in nanoseconds computed here because
//! the crate's helper rejects every power-of-two resolution and can overflow, and damage
//! (a record cut short, a corrupt block) reported with the frame number and byte offset
//! instead of ending the whole check.

use pcap_parser::pcapng::Block;
use pcap_parser::traits::PcapReaderIterator;
use pcap_parser::{LegacyPcapReader, PcapBlockOwned, PcapError, PcapNGReader};
use std::collections::BTreeMap;
use std::io::{Cursor, Read};

/// Link type of Ethernet frames (LINKTYPE_ETHERNET), the only one analysed.
pub const LINKTYPE_ETHERNET: u16 = 1;

/// Bytes read to probe the format; the first read of the parsers sees all of them.
const PROBE_BYTES: usize = 64 * 1024;
/// Initial buffer of the streaming parsers; it grows for larger records.
const BUFFER_BYTES: usize = 1 << 20;
/// No record is read into a buffer larger than this: a longer one is damage, not a frame
/// (the longest snap length any capture tool writes is 256 KiB).
const MAX_BUFFER_BYTES: usize = 16 << 20;
const NS_PER_S: u128 = 1_000_000_000;

/// One captured frame.
#[derive(Debug, Clone, Copy)]
pub struct Record<'a> {
    /// 1-based, as Wireshark numbers frames: every packet record of the file counts, whatever
    /// its interface or link type.
    pub number: u64,
    /// Capture time in nanoseconds since the Unix epoch (resolution as the file gives it).
    pub time_ns: u64,
    /// Whether the record carries a timestamp (a pcapng simple packet block has none).
    pub timestamped: bool,
    /// The captured bytes: the first `data.len()` of `orig_len`.
    pub data: &'a [u8],
    /// The frame's length on the wire, in bytes.
    pub orig_len: u32,
    /// LINKTYPE_* of the interface the frame was captured on.
    pub link_type: u16,
}

/// What the reader learnt about the file besides its records.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadSummary {
    /// The container and its variant, e.g. "pcap (little-endian, nanosecond timestamps)".
    pub format: String,
    /// Packet records read (the last frame number).
    pub records: u64,
    /// Why reading stopped before the end of the file, if it did: the file is cut short or a
    /// block is corrupt. Names the frame number and byte offset.
    pub damage: Option<String>,
    /// Packet records that name a pcapng interface no IDB described (not analysed).
    pub unknown_interface_records: u64,
    /// Odd but readable things in the container, each with how many records show it and the
    /// first of them (frame 0: the file header): noted, not failed, since the frames still
    /// read, but a tool that wrote them may have written other things wrong too.
    pub oddities: BTreeMap<&'static str, (u64, u64)>,
}

/// The file is not a capture this reader understands (exit status 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NotACapture(pub String);

/// A pcapng interface: what its packets need to be read.
#[derive(Debug, Clone, Copy)]
struct Interface {
    link_type: u16,
    /// 0 = no limit.
    snaplen: u32,
    /// Raw if_tsresol: 10^-n seconds, or 2^-n with the top bit set.
    tsresol: u8,
    /// if_tsoffset, seconds added to every timestamp.
    tsoffset_s: i64,
}

/// Reads every packet record of `input` (named `name` in messages) and hands it to `each`.
/// A file that is not pcap or pcapng is [`NotACapture`]; damage after a valid header ends the
/// reading and is reported in [`ReadSummary::damage`].
pub fn read_capture<R: Read>(
    mut input: R,
    name: &str,
    mut each: impl FnMut(Record<'_>),
) -> Result<ReadSummary, NotACapture> {
    let mut probe = Vec::with_capacity(PROBE_BYTES);
    (&mut input)
        .take(PROBE_BYTES as u64)
        .read_to_end(&mut probe)
        .map_err(|e| NotACapture(format!("cannot read {name}: {e}")))?;
    let expected = "expected a pcap file (magic a1b2c3d4 or a1b23c4d, either byte order) or a \
                    pcapng file (section header block 0a0d0d0a)";
    let Some(magic) = probe.get(..4) else {
        return Err(NotACapture(format!(
            "{name} is not a capture file: it has {} bytes, {expected}",
            probe.len()
        )));
    };
    let magic = [magic[0], magic[1], magic[2], magic[3]];
    let probed = probe.len();
    let stream = Cursor::new(probe).chain(input);
    let bad = |what: String| NotACapture(format!("{name} is not a readable capture: {what}"));
    match magic {
        [0x0a, 0x0d, 0x0d, 0x0a] => {
            let reader = PcapNGReader::new(BUFFER_BYTES, stream).map_err(|e| {
                bad(format!(
                    "its pcapng section header block is invalid: {}",
                    reason(&e, "section header block")
                ))
            })?;
            Ok(drive(Box::new(reader), "pcapng".to_string(), &mut each))
        }
        _ if pcap_magic(magic).is_some() => {
            let format = pcap_magic(magic).unwrap_or_default();
            let reader = LegacyPcapReader::new(BUFFER_BYTES, stream)
                .map_err(|e| bad(header_cut(&e, probed)))?;
            Ok(drive(Box::new(reader), format, &mut each))
        }
        _ => Err(NotACapture(format!(
            "{name} is not a capture file: it starts with {}, {expected}",
            magic.map(|b| format!("{b:02x}")).join("")
        ))),
    }
}

/// Why the 24-byte header of a classic pcap could not be read; `probed` bytes of the file
/// were read (all of it, when fewer than [`PROBE_BYTES`]).
fn header_cut<I>(e: &PcapError<I>, probed: usize) -> String {
    if probed < 24 {
        return format!("its 24-byte pcap header is cut short: the file has only {probed} bytes");
    }
    format!(
        "its 24-byte pcap header is invalid: {}",
        reason(e, "header")
    )
}

/// A reader error in words (the crate's own text shows Rust values, "Incomplete(2)"); `what`
/// names the structure being read.
fn reason<I>(e: &PcapError<I>, what: &str) -> String {
    match e {
        PcapError::Eof | PcapError::UnexpectedEof | PcapError::Incomplete(_) => {
            format!("the file ends inside the {what} (cut short)")
        }
        PcapError::BufferTooSmall => format!("the {what} is longer than any captured frame"),
        PcapError::ReadError => "reading the file failed".into(),
        // Past a pcap magic or a pcapng block type checked already: the byte-order magic of
        // a section header block.
        PcapError::HeaderNotRecognized => {
            format!("the {what}'s byte-order magic is neither 1a2b3c4d nor 4d3c2b1a")
        }
        PcapError::NomError(..) | PcapError::OwnedNomError(..) => {
            format!("its bytes are not a valid {what} (a length or type field is wrong)")
        }
    }
}

/// The description of a classic pcap magic number (as the file's first four bytes), or
/// `None`.
fn pcap_magic(m: [u8; 4]) -> Option<String> {
    let (order, resolution) = match m {
        [0xd4, 0xc3, 0xb2, 0xa1] => ("little-endian", "microsecond"),
        [0xa1, 0xb2, 0xc3, 0xd4] => ("big-endian", "microsecond"),
        [0x4d, 0x3c, 0xb2, 0xa1] => ("little-endian", "nanosecond"),
        [0xa1, 0xb2, 0x3c, 0x4d] => ("big-endian", "nanosecond"),
        _ => return None,
    };
    Some(format!("pcap ({order}, {resolution} timestamps)"))
}

/// Per-file state while the blocks stream by.
struct State {
    summary: ReadSummary,
    /// Classic pcap: its link type field and whether timestamps are nanoseconds.
    legacy: Option<(LinkField, bool)>,
    /// Classic pcap: the header's snap length (0: none stated).
    legacy_snaplen: u32,
    /// pcapng: the current section's interfaces, in IDB order.
    interfaces: Vec<Interface>,
    /// pcapng: the current section is big-endian (`None` in a classic pcap).
    ng_big_endian: Option<bool>,
}

/// Pulls blocks until the end or damage.
fn drive(
    mut reader: Box<dyn PcapReaderIterator + '_>,
    format: String,
    each: &mut dyn FnMut(Record<'_>),
) -> ReadSummary {
    let mut st = State {
        summary: ReadSummary {
            format,
            ..ReadSummary::default()
        },
        legacy: None,
        legacy_snaplen: 0,
        interfaces: Vec::new(),
        ng_big_endian: None,
    };
    let mut capacity = BUFFER_BYTES;
    loop {
        let offset = reader.consumed();
        let next = match reader.next() {
            Ok((len, block)) => {
                st.block(block, each);
                Ok(len)
            }
            Err(PcapError::Eof) => break,
            Err(PcapError::Incomplete(_)) => Err(None),
            Err(PcapError::BufferTooSmall) => Err(Some(false)),
            Err(PcapError::UnexpectedEof) => Err(Some(true)),
            Err(e) => {
                st.damage(
                    offset,
                    format!("the block there is corrupt: {}", reason(&e, "block")),
                );
                break;
            }
        };
        if let (Err(None | Some(true)), Some(len)) = (&next, st.whole_block(reader.data())) {
            st.damage(
                offset,
                format!("the block there is corrupt: {}", overrun(len)),
            );
            break;
        }
        match next {
            Ok(len) => reader.consume(len),
            // More bytes are needed: refill, or grow when the buffer is full.
            Err(None) => {
                let before = reader.data().len();
                if reader.refill().is_err() {
                    st.damage(offset, "reading the file failed".to_string());
                    break;
                }
                let stuck = reader.data().len() == before && !reader.reader_exhausted();
                if stuck && !grow(&mut *reader, &mut capacity) {
                    st.damage(offset, too_long());
                    break;
                }
            }
            Err(Some(false)) => {
                if !grow(&mut *reader, &mut capacity) {
                    st.damage(offset, too_long());
                    break;
                }
            }
            Err(Some(true)) => {
                st.damage(offset, "the file ends inside it (cut short)".to_string());
                break;
            }
        }
    }
    st.summary
}

/// A pcapng block of `len` bytes whose parser asks for more than that: a length inside it
/// (an enhanced packet block's captured length) runs past the block's end. Not the file's
/// end: the bytes after it are there.
fn overrun(len: u32) -> String {
    format!("a length inside it runs past the block's end (its own length is {len} bytes)")
}

fn too_long() -> String {
    format!(
        "it claims more than {} MiB, longer than any captured frame (corrupt)",
        MAX_BUFFER_BYTES >> 20
    )
}

/// Doubles the parser's buffer up to [`MAX_BUFFER_BYTES`]; false when it may not grow.
fn grow(reader: &mut dyn PcapReaderIterator, capacity: &mut usize) -> bool {
    if *capacity >= MAX_BUFFER_BYTES {
        return false;
    }
    *capacity = (*capacity * 2).min(MAX_BUFFER_BYTES);
    reader.grow(*capacity)
}

impl State {
    fn damage(&mut self, offset: usize, what: String) {
        self.summary.damage = Some(format!(
            "reading stopped at byte {offset}, the record after frame {}: {what}",
            self.summary.records
        ));
    }

    /// The length of the pcapng block at the start of `data` when all of it is there (by
    /// its own length field), `None` otherwise or in a classic pcap.
    fn whole_block(&self, data: &[u8]) -> Option<u32> {
        let field: [u8; 4] = data.get(4..8)?.try_into().ok()?;
        let len = if self.ng_big_endian? {
            u32::from_be_bytes(field)
        } else {
            u32::from_le_bytes(field)
        };
        (len >= 12 && data.len() >= len as usize).then_some(len)
    }

    /// Counts an oddity of `what`, seen at frame `number`.
    fn odd(&mut self, what: &'static str, number: u64) {
        let e = self.summary.oddities.entry(what).or_insert((0, number));
        e.0 += 1;
    }

    /// The oddities of a classic pcap record `number`.
    fn legacy_oddities(&mut self, number: u64, caplen: u32, origlen: u32, frac: u32, nanos: bool) {
        if caplen > origlen {
            self.odd("captured length above the length on the wire", number);
        }
        if self.legacy_snaplen != 0 && caplen > self.legacy_snaplen {
            self.odd("captured length above the header's snap length", number);
        }
        let limit = if nanos { 1_000_000_000 } else { 1_000_000 };
        if frac >= limit {
            self.odd(
                "timestamp fraction of a second of one second or more",
                number,
            );
        }
    }

    fn next_number(&mut self) -> u64 {
        self.summary.records += 1;
        self.summary.records
    }

    fn block(&mut self, block: PcapBlockOwned<'_>, each: &mut dyn FnMut(Record<'_>)) {
        match block {
            PcapBlockOwned::LegacyHeader(h) => {
                self.legacy = Some((LinkField(h.network.0 as u32), h.is_nanosecond_precision()));
                self.legacy_snaplen = h.snaplen;
                if (h.version_major, h.version_minor) != (2, 4) {
                    self.odd("pcap version other than 2.4", 0);
                }
            }
            PcapBlockOwned::Legacy(b) => {
                let (field, nanos) = self
                    .legacy
                    .unwrap_or((LinkField(LINKTYPE_ETHERNET.into()), false));
                let frac_ns = if nanos {
                    u64::from(b.ts_usec)
                } else {
                    u64::from(b.ts_usec) * 1_000
                };
                let number = self.next_number();
                self.legacy_oddities(number, b.caplen, b.origlen, b.ts_usec, nanos);
                let len = (b.caplen as usize).min(b.data.len());
                let (data, orig_len) = field.without_fcs(&b.data[..len], b.origlen);
                each(Record {
                    number,
                    time_ns: u64::from(b.ts_sec) * 1_000_000_000 + frac_ns,
                    timestamped: true,
                    data,
                    orig_len,
                    link_type: field.link_type(),
                });
            }
            PcapBlockOwned::NG(Block::SectionHeader(shb)) => {
                self.interfaces.clear();
                self.ng_big_endian = Some(shb.big_endian());
            }
            PcapBlockOwned::NG(Block::InterfaceDescription(idb)) => {
                self.interfaces.push(Interface {
                    link_type: u16::try_from(idb.linktype.0).unwrap_or(u16::MAX),
                    snaplen: idb.snaplen,
                    tsresol: idb.if_tsresol,
                    tsoffset_s: idb.if_tsoffset,
                });
            }
            PcapBlockOwned::NG(Block::EnhancedPacket(epb)) => {
                let number = self.next_number();
                let Some(iface) = self.interfaces.get(epb.if_id as usize).copied() else {
                    self.summary.unknown_interface_records += 1;
                    return;
                };
                if epb.caplen > epb.origlen {
                    self.odd("captured length above the length on the wire", number);
                }
                let ts = (u64::from(epb.ts_high) << 32) | u64::from(epb.ts_low);
                let len = (epb.caplen as usize).min(epb.data.len());
                each(Record {
                    number,
                    time_ns: ng_time_ns(ts, iface.tsresol, iface.tsoffset_s),
                    timestamped: true,
                    data: &epb.data[..len],
                    orig_len: epb.origlen,
                    link_type: iface.link_type,
                });
            }
            PcapBlockOwned::NG(Block::SimplePacket(spb)) => {
                let number = self.next_number();
                // An SPB belongs to the first interface and has no timestamp; its captured
                // length is the original length cut to that interface's snap length.
                let Some(iface) = self.interfaces.first().copied() else {
                    self.summary.unknown_interface_records += 1;
                    return;
                };
                let mut len = spb.origlen as usize;
                if iface.snaplen != 0 {
                    len = len.min(iface.snaplen as usize);
                }
                let len = len.min(spb.data.len());
                each(Record {
                    number,
                    time_ns: 0,
                    timestamped: false,
                    data: &spb.data[..len],
                    orig_len: spb.origlen,
                    link_type: iface.link_type,
                });
            }
            // Name resolution, statistics, custom and unknown blocks carry no frames.
            PcapBlockOwned::NG(_) => {}
        }
    }
}

/// The 32-bit link type field of a classic pcap header: the link type in its low 16 bits and,
/// above them, whether each frame ends in a frame check sequence and how long it is (libpcap's
/// LT_LINKTYPE, LT_FCS_LENGTH_PRESENT and LT_FCS_LENGTH). Read whole, Ethernet with an FCS
/// would be no link type at all.
#[derive(Debug, Clone, Copy)]
struct LinkField(u32);

impl LinkField {
    fn link_type(self) -> u16 {
        (self.0 & 0xFFFF) as u16
    }

    /// Bytes of FCS at the end of every frame: the field's count of 16-bit words, when its
    /// "FCS length present" bit is set.
    fn fcs_bytes(self) -> u32 {
        if self.0 & 0x0400_0000 == 0 {
            return 0;
        }
        (self.0 >> 28) * 2
    }

    /// The frame `data` (of `orig_len` bytes on the wire) without its FCS: the ICRC is
    /// checked at the end of the IP packet, and a frame captured whole would otherwise read
    /// as longer than its IP packet. A frame cut before its FCS keeps its bytes.
    fn without_fcs(self, data: &[u8], orig_len: u32) -> (&[u8], u32) {
        let fcs = self.fcs_bytes();
        let whole = data.len() as u64 == u64::from(orig_len);
        if fcs == 0 || orig_len < fcs {
            return (data, orig_len);
        }
        let orig_len = orig_len - fcs;
        let kept = if whole {
            orig_len as usize
        } else {
            data.len().min(orig_len as usize)
        };
        (&data[..kept], orig_len)
    }
}

/// A pcapng timestamp in nanoseconds since the epoch: `ts` units of the resolution `tsresol`
/// (10^-n s, or 2^-n s with the top bit set) plus `tsoffset_s` seconds; saturates instead of
/// overflowing, and an impossible resolution reads as microseconds (the pcapng default).
pub(crate) fn ng_time_ns(ts: u64, tsresol: u8, tsoffset_s: i64) -> u64 {
    let n = u32::from(tsresol & 0x7f);
    let ts = u128::from(ts);
    let ns = if tsresol & 0x80 == 0 {
        if n <= 9 {
            ts * 10u128.pow(9 - n)
        } else if n <= 38 {
            ts / 10u128.pow(n - 9)
        } else {
            ts * 1_000
        }
    } else if n <= 63 {
        (ts * NS_PER_S) >> n
    } else {
        ts * 1_000
    };
    let with_offset =
        i128::try_from(ns).unwrap_or(i128::MAX) + i128::from(tsoffset_s) * 1_000_000_000;
    u64::try_from(with_offset.max(0)).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_in_every_resolution() {
        assert_eq!(ng_time_ns(1_500_000, 6, 0), 1_500_000_000);
        assert_eq!(ng_time_ns(1_500_000_123, 9, 0), 1_500_000_123);
        assert_eq!(ng_time_ns(15, 1, 10), 11_500_000_000);
        assert_eq!(ng_time_ns(3, 0x80 | 1, 0), 1_500_000_000);
        assert_eq!(ng_time_ns(u64::MAX, 0, i64::MAX), u64::MAX);
        assert_eq!(ng_time_ns(1, 6, -5), 0);
        assert_eq!(ng_time_ns(7, 0xff, 0), 7_000);
    }

    #[test]
    fn magics() {
        assert!(pcap_magic([0x4d, 0x3c, 0xb2, 0xa1])
            .unwrap()
            .contains("little-endian, nanosecond"));
        assert!(pcap_magic([0xa1, 0xb2, 0xc3, 0xd4])
            .unwrap()
            .contains("big-endian, microsecond"));
        assert_eq!(pcap_magic(*b"PK\x03\x04"), None);
    }
}
