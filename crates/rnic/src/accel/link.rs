//! The emulated long link: the host kernel has no netem, so the accelerator's far port
//! delays every frame by a fixed one-way time and loses a fraction of them, in each
//! direction, deterministically for a seed (the n-th frame's fate in a direction depends on
//! the seed, the direction and n only).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// `DELAY,LOSS`: one-way delay and loss probability.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkSpec {
    /// One-way delay.
    pub delay: Duration,
    /// Probability that a frame is lost, 0 to 1.
    pub loss: f64,
}

impl LinkSpec {
    /// Parses `5ms,1%` (delay with unit us, ms or s; loss in percent, optional).
    pub fn parse(s: &str) -> Result<LinkSpec, String> {
        let (d, l) = s.split_once(',').unwrap_or((s, "0%"));
        let delay = parse_delay(d.trim())?;
        let l = l.trim();
        let pct: f64 = l
            .strip_suffix('%')
            .ok_or_else(|| format!("loss `{l}` needs a % sign (e.g. 1%)"))?
            .parse()
            .map_err(|_| format!("loss `{l}` is not a number of percent"))?;
        if !(0.0..100.0).contains(&pct) {
            return Err(format!("loss {pct}% is outside [0%, 100%)"));
        }
        Ok(LinkSpec {
            delay,
            loss: pct / 100.0,
        })
    }
}

fn parse_delay(d: &str) -> Result<Duration, String> {
    let (num, unit_s) = if let Some(n) = d.strip_suffix("us") {
        (n, 1e-6)
    } else if let Some(n) = d.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = d.strip_suffix('s') {
        (n, 1.0)
    } else {
        return Err(format!("delay `{d}` needs a unit: us, ms or s (e.g. 5ms)"));
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("delay `{d}` is not a number"))?;
    if !(0.0..=60.0).contains(&(v * unit_s)) {
        return Err(format!("delay `{d}` is outside 0 to 60 s"));
    }
    Ok(Duration::from_secs_f64(v * unit_s))
}

/// One direction of the emulated link: frames in, frames out after the delay, some lost.
#[derive(Debug)]
pub struct LinkDirection {
    spec: LinkSpec,
    /// SplitMix64 state: the seed, mixed with the direction.
    state: u64,
    queue: VecDeque<(Instant, Vec<u8>)>,
    /// Frames lost.
    pub lost: u64,
    /// Frames carried.
    pub carried: u64,
}

impl LinkDirection {
    /// A direction of a link; `stream` tells the directions apart.
    pub fn new(spec: LinkSpec, seed: u64, stream: u64) -> LinkDirection {
        LinkDirection {
            spec,
            state: seed ^ stream.wrapping_mul(0xA076_1D64_78BD_642F),
            queue: VecDeque::new(),
            lost: 0,
            carried: 0,
        }
    }

    fn next_unit(&mut self) -> f64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A frame enters the link at `now`.
    pub fn push(&mut self, now: Instant, frame: Vec<u8>) {
        if self.next_unit() < self.spec.loss {
            self.lost += 1;
            return;
        }
        self.queue.push_back((now + self.spec.delay, frame));
    }

    /// The next frame that has crossed by `now`.
    pub fn pop_due(&mut self, now: Instant) -> Option<Vec<u8>> {
        if self.queue.front()?.0 > now {
            return None;
        }
        self.carried += 1;
        self.queue.pop_front().map(|(_, f)| f)
    }

    /// When the next frame comes out.
    pub fn next_due(&self) -> Option<Instant> {
        self.queue.front().map(|(t, _)| *t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_specs_parse_or_name_the_field() {
        let s = LinkSpec::parse("5ms,1%").unwrap();
        assert_eq!(s.delay, Duration::from_millis(5));
        assert!((s.loss - 0.01).abs() < 1e-12);
        assert_eq!(LinkSpec::parse("250us").unwrap().loss, 0.0);
        for bad in ["5", "5ms,1", "x ms,1%", "5ms,100%", "5ms,-1%"] {
            assert!(LinkSpec::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_same_seed_loses_the_same_frames_and_the_rate_is_near_the_loss() {
        let spec = LinkSpec::parse("0ms,10%").unwrap();
        let lost = |seed| {
            let mut d = LinkDirection::new(spec, seed, 0);
            let now = Instant::now();
            (0..10_000)
                .map(|i| {
                    let before = d.lost;
                    d.push(now, vec![i as u8]);
                    d.lost > before
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(lost(7), lost(7));
        assert_ne!(lost(7), lost(8));
        let n = lost(7).iter().filter(|l| **l).count();
        assert!((900..1100).contains(&n), "{n} of 10000 lost at 10%");
    }
}
