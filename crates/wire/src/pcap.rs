//! Classic libpcap capture writer (nanosecond timestamps, Ethernet link type), so simulated
//! traffic opens in Wireshark/tshark. Frames are written without FCS.

use std::io::{self, Write};

/// Magic number of nanosecond-resolution pcap files.
const MAGIC_NS: u32 = 0xA1B2_3C4D;
const VERSION_MAJOR: u16 = 2;
const VERSION_MINOR: u16 = 4;
/// Largest frame length stored; longer frames are cut (the original length is still recorded).
pub const SNAPLEN: u32 = 65535;
const LINKTYPE_ETHERNET: u32 = 1;
const PS_PER_NS: u64 = 1_000;
const NS_PER_S: u64 = 1_000_000_000;

/// Writes a pcap stream: the global header on creation, then one record per frame.
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    out: W,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the 24-byte global header (little-endian, as libpcap writes on x86).
    pub fn new(mut out: W) -> io::Result<PcapWriter<W>> {
        let mut h = [0u8; 24];
        h[0..4].copy_from_slice(&MAGIC_NS.to_le_bytes());
        h[4..6].copy_from_slice(&VERSION_MAJOR.to_le_bytes());
        h[6..8].copy_from_slice(&VERSION_MINOR.to_le_bytes());
        // 8..16: thiszone and sigfigs, both 0.
        h[16..20].copy_from_slice(&SNAPLEN.to_le_bytes());
        h[20..24].copy_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        out.write_all(&h)?;
        Ok(PcapWriter { out })
    }

    /// Appends one frame seen at simulated time `time_ps` (stored with nanosecond resolution).
    pub fn write_packet(&mut self, time_ps: u64, frame: &[u8]) -> io::Result<()> {
        let time_ns = time_ps / PS_PER_NS;
        let secs = u32::try_from(time_ns / NS_PER_S).unwrap_or(u32::MAX);
        let nanos = (time_ns % NS_PER_S) as u32;
        let orig_len = u32::try_from(frame.len()).unwrap_or(u32::MAX);
        let incl_len = orig_len.min(SNAPLEN);
        let mut h = [0u8; 16];
        h[0..4].copy_from_slice(&secs.to_le_bytes());
        h[4..8].copy_from_slice(&nanos.to_le_bytes());
        h[8..12].copy_from_slice(&incl_len.to_le_bytes());
        h[12..16].copy_from_slice(&orig_len.to_le_bytes());
        self.out.write_all(&h)?;
        self.out
            .write_all(frame.get(..incl_len as usize).unwrap_or(frame))
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    pub fn get_ref(&self) -> &W {
        &self.out
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn global_header_and_record() {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        w.write_packet(3_000_000_123_456, &[0xAB; 60]).unwrap();
        let b = w.into_inner();
        assert_eq!(
            &b[..24],
            &[
                0x4d, 0x3c, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 1, 0,
                0, 0
            ]
        );
        // 3_000_000_123_456 ps = 3 s + 123 ns (the 456 ps are below the resolution).
        assert_eq!(
            &b[24..40],
            &[3, 0, 0, 0, 123, 0, 0, 0, 60, 0, 0, 0, 60, 0, 0, 0]
        );
        assert_eq!(b.len(), 24 + 16 + 60);
        assert!(b[40..].iter().all(|&x| x == 0xAB));
    }

    #[test]
    fn long_frames_are_cut_to_snaplen() {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        w.write_packet(0, &vec![0u8; 70_000]).unwrap();
        let b = w.into_inner();
        assert_eq!(&b[32..40], &[0xff, 0xff, 0, 0, 0x70, 0x11, 0x01, 0]);
        assert_eq!(b.len(), 24 + 16 + 65535);
    }
}
