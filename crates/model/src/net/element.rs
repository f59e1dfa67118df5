//! Link elements: what sits on a link direction and sees every frame crossing it, after the
//! link's propagation delay. One trait for all of them — the impairment element today, a
//! reordering emulator, a packet sprayer or a WAN accelerator tomorrow: a frame's bytes and
//! time in; forward it (with added delay), drop it, and emit extra frames (copies, or frames
//! of the element's own such as a pseudo-ACK) in either direction.

use rnic_sim::TimePs;

/// A frame an element adds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Emitted {
    /// The frame's bytes.
    pub bytes: Vec<u8>,
    /// Delay after the time the element saw the triggering frame, ps.
    pub delay_ps: TimePs,
    /// Sent back toward the frame's sender (else onward, behind the frame).
    pub back: bool,
}

/// What happens to one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Fate {
    /// The frame is lost.
    pub drop: bool,
    /// Extra delay of the frame, ps.
    pub delay_ps: TimePs,
}

/// Counters every element reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ElementStats {
    /// Frames seen.
    pub frames: u64,
    /// Frames lost (an impairment's drop).
    pub dropped: u64,
    /// Frames taken off the link on purpose, not lost: consumed or held to be sent again
    /// later (the WAN accelerator's absorbed ACKs, duplicates it answered itself, packets it
    /// held behind a go-back-N round).
    pub absorbed: u64,
    /// Frames emitted (duplicates included).
    pub emitted: u64,
    /// Frames delayed (held back for reordering).
    pub delayed: u64,
    /// Frames whose bytes were changed.
    pub corrupted: u64,
}

/// An element on one direction of a link.
pub trait LinkElement: std::fmt::Debug + AsAny {
    /// Frame `frame` reaches the element at `now`: decide its fate; it may change the bytes
    /// and push frames to emit.
    fn on_frame(&mut self, now: TimePs, frame: &mut Vec<u8>, emit: &mut Vec<Emitted>) -> Fate;
    /// The element's counters.
    fn stats(&self) -> ElementStats;
    /// When the element wants [`LinkElement::on_wake`] called (a timer of its own), if ever.
    fn wake_at(&self) -> Option<TimePs> {
        None
    }
    /// Its timer is due at `now`: it may push frames to emit (`back` is toward the sender
    /// of the link direction it sits on).
    fn on_wake(&mut self, _now: TimePs, _emit: &mut Vec<Emitted>) {}
    /// It still owes frames to the network (a run does not end while any element does).
    fn holds_frames(&self) -> bool {
        false
    }
}

/// Any element as `Any`, so the network can read a concrete element's own counters (the
/// WAN accelerator's) without the generic trait naming any element.
pub trait AsAny {
    /// `self` as `Any`.
    fn as_any(&self) -> &dyn std::any::Any;
}

impl<T: std::any::Any> AsAny for T {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
