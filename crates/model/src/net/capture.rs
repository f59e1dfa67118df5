//! The capture of one node's port (`--pcap`, node 0's unless `--pcap-node` names another),
//! written in the order the frames were on the wire.
//!
//! A frame the NIC hands its port is captured with the time it starts on the wire, which is
//! later than the moment it is handed over when the port is still sending earlier frames;
//! frames received in the meantime are captured as they arrive. Written as they came, the
//! file went back in time (a 2 KB-MTU WRITE stream: 95 of 503 records), where a sniffer
//! writes in time order and Wireshark numbers frames and computes deltas, RTTs and graphs
//! in file order. So frames wait here, ordered by time, until the simulation's clock has
//! passed them: nothing captured after an event can be earlier than that event's time.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufWriter};

use rnic_sim::TimePs;
use rnic_wire::PcapWriter;

/// A pcap writer behind a buffer that releases frames in time order.
#[derive(Debug)]
pub struct Capture {
    /// The node whose port is captured.
    pub node: usize,
    writer: PcapWriter<BufWriter<File>>,
    /// Frames not yet written, by (time, order captured): equal times keep their order.
    pending: BTreeMap<(TimePs, u64), Vec<u8>>,
    captured: u64,
}

impl Capture {
    /// A capture of `node`'s port writing to `writer` (its file header already written).
    pub fn new(node: usize, writer: PcapWriter<BufWriter<File>>) -> Self {
        Capture {
            node,
            writer,
            pending: BTreeMap::new(),
            captured: 0,
        }
    }

    /// Captures `frame`, on the wire at `t`.
    pub fn record(&mut self, t: TimePs, frame: &[u8]) {
        self.pending.insert((t, self.captured), frame.to_vec());
        self.captured += 1;
    }

    /// Writes every frame on the wire at `now` or before: the simulation has reached `now`,
    /// so no frame captured from here on is earlier.
    pub fn write_until(&mut self, now: TimePs) -> io::Result<()> {
        while let Some(entry) = self.pending.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let ((t, _), frame) = entry.remove_entry();
            self.writer.write_packet(t, &frame)?;
        }
        Ok(())
    }

    /// Writes every frame still waiting and flushes the file: the run has ended.
    pub fn finish(&mut self) -> io::Result<()> {
        self.write_until(TimePs::MAX)?;
        self.writer.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_written_in_time_order_once_the_clock_has_passed_them() {
        let path = std::env::temp_dir().join(format!("rnic-capture-{}.pcap", std::process::id()));
        let f = BufWriter::new(File::create(&path).unwrap());
        let mut c = Capture::new(0, PcapWriter::new(f).unwrap());
        // A frame queued behind the port's backlog, then two received before it starts.
        c.record(5_000, &[3]);
        c.record(2_000, &[1]);
        c.write_until(2_000).unwrap();
        assert_eq!(c.pending.len(), 1, "the queued frame waits for its time");
        c.record(4_000, &[2]);
        c.record(4_000, &[22]);
        c.finish().unwrap();
        let b = std::fs::read(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        // 24-byte file header, then 16-byte record headers each before one byte.
        let bytes: Vec<u8> = (0..4).map(|k| b[24 + k * 17 + 16]).collect();
        assert_eq!(bytes, [1, 2, 22, 3]);
    }
}
