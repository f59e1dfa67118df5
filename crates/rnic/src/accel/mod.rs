//! `rnic accel`: the long-distance paper's pseudo-ACK accelerator as a real bump in the
//! wire. Two interfaces (toward Local, the requesters; toward Remote, across the long link)
//! carry raw Ethernet frames through AF_PACKET sockets ([`packet`]); every frame goes
//! through the simulator's own accelerator state machine
//! ([`rnic_model::net::wan_accel::Accel`]) on the real monotonic clock, and passes on
//! byte for byte unless the accelerator absorbs it. Its own frames (pseudo-ACKs toward
//! Local, go-back-N resends toward Remote) go out of the matching interface. No address
//! is rewritten, so the ICRC of every passing frame stays valid. Optionally the far port
//! emulates the long link ([`link`]): a delay and a loss rate each way.

pub mod link;
pub mod packet;

use std::io::Write;
use std::time::{Duration, Instant};

use rnic_model::net::port::Port;
use rnic_model::net::wan_accel::{Accel, AccelConfig, Direction, Emit};
use rnic_model::params::ModelParams;
use rnic_sim::TimePs;

use crate::cli::args::AccelCmd;
use crate::UsageError;
use link::{LinkDirection, LinkSpec};
use packet::PacketSocket;

/// The largest frame handled: a virtio-net header and a TCP super-frame of up to 64 KiB
/// (veth hands segmentation over to the sending socket, see [`packet`]).
const FRAME_BUF_BYTES: usize = packet::VNET_HDR_BYTES + (64 << 10) + 1024;

/// Runs the accelerator until `--idle-exit-ms` passes without a frame (else forever), then
/// prints its counters as JSON.
pub fn run(c: &AccelCmd, out: &mut dyn Write) -> anyhow::Result<()> {
    let link = match &c.emulate_link {
        Some(s) => {
            Some(LinkSpec::parse(s).map_err(|e| UsageError(format!("--emulate-link: {e}")))?)
        }
        None => None,
    };
    let learn_at_setup = match c.learn.as_str() {
        "setup" => true,
        "traffic" => false,
        other => {
            return Err(
                UsageError(format!("--learn: `{other}` is neither setup nor traffic")).into(),
            )
        }
    };
    if c.local == c.remote {
        return Err(UsageError("--local and --remote name the same interface".into()).into());
    }
    let timeout = match (c.timeout_ms, link) {
        (Some(ms), _) if !(ms > 0.0 && ms <= 60_000.0) => {
            return Err(UsageError(format!("--timeout-ms: {ms} is outside (0, 60000]")).into())
        }
        (Some(ms), _) => Duration::from_secs_f64(ms / 1000.0),
        // Two round trips of the emulated link and a millisecond, as the simulator's
        // default (twice the long round trip and 100 us) scaled to a software box.
        (None, Some(l)) => 4 * l.delay + Duration::from_millis(1),
        (None, None) => Duration::from_millis(100),
    };
    let open =
        |i: &str| PacketSocket::open(i).map_err(|e| UsageError(format!("interface {i}: {e}")));
    let mut bump = Bump {
        local: open(&c.local)?,
        remote: open(&c.remote)?,
        accel: (!c.off).then(|| {
            Accel::new(AccelConfig {
                buffer_bytes: c.buffer_bytes,
                // A real core's time is spent, not modelled: frames leave as handled.
                frame_ps: 0,
                latency_ps: 0,
                timeout_ps: duration_ps(timeout),
                // Resends are paced at the baseline port's line rate.
                long_link: Port::new(ModelParams::baseline().eth),
                learn_at_setup,
            })
        }),
        link: link.map(|l| {
            (
                LinkDirection::new(l, c.seed, 0),
                LinkDirection::new(l, c.seed, 1),
            )
        }),
        start: Instant::now(),
        passed: [0; 2],
    };
    bump.run(c.idle_exit_ms.map(Duration::from_millis))?;
    writeln!(out, "{}", serde_json::to_string(&bump.summary())?)?;
    Ok(())
}

fn duration_ps(d: Duration) -> TimePs {
    d.as_nanos() as TimePs * 1000
}

/// The running box.
struct Bump {
    local: PacketSocket,
    remote: PacketSocket,
    /// `None` with `--off`: frames only pass (and cross the emulated link).
    accel: Option<Accel>,
    /// (toward Remote, from Remote).
    link: Option<(LinkDirection, LinkDirection)>,
    start: Instant,
    /// Frames passed on, (toward Remote, toward Local).
    passed: [u64; 2],
}

impl Bump {
    fn now_ps(&self, now: Instant) -> TimePs {
        duration_ps(now - self.start)
    }

    fn run(&mut self, idle_exit: Option<Duration>) -> anyhow::Result<()> {
        let mut buf = vec![0u8; FRAME_BUF_BYTES];
        let mut last_frame = Instant::now();
        loop {
            let now = Instant::now();
            if idle_exit.is_some_and(|i| now - last_frame >= i) && self.link_empty() {
                return Ok(());
            }
            let wait = self.next_due().map(|t| t.saturating_duration_since(now));
            let wait = match (wait, idle_exit) {
                (Some(w), _) => w,
                (None, Some(i)) => i.saturating_sub(now - last_frame),
                (None, None) => Duration::from_secs(1),
            };
            // Round up so a due time is not polled for again and again.
            let ms = (wait.as_micros().div_ceil(1000)).min(1000) as i32;
            let ready = packet::wait_readable(&[&self.local, &self.remote], ms)?;
            if ready[0] {
                while let Some(n) = self.local.recv(&mut buf)? {
                    last_frame = Instant::now();
                    self.on_local_frame(&buf[..n])?;
                }
            }
            if ready[1] {
                while let Some(n) = self.remote.recv(&mut buf)? {
                    last_frame = Instant::now();
                    let f = buf[..n].to_vec();
                    match &mut self.link {
                        Some((_, from_remote)) => from_remote.push(last_frame, f),
                        None => self.on_remote_frame(&f)?,
                    }
                }
            }
            self.due_work()?;
        }
    }

    fn link_empty(&self) -> bool {
        self.link
            .as_ref()
            .is_none_or(|(a, b)| a.next_due().is_none() && b.next_due().is_none())
    }

    /// The earliest of the accelerator's timer and the link's next frame out.
    fn next_due(&self) -> Option<Instant> {
        let accel = self
            .accel
            .as_ref()
            .and_then(|a| a.poll_timeout())
            .map(|ps| self.start + Duration::from_nanos(ps / 1000));
        let link = self
            .link
            .as_ref()
            .and_then(|(a, b)| [a.next_due(), b.next_due()].into_iter().flatten().min());
        [accel, link].into_iter().flatten().min()
    }

    /// Frames that crossed the emulated link, and the accelerator's timer.
    fn due_work(&mut self) -> anyhow::Result<()> {
        let now = Instant::now();
        if let Some((to_remote, _)) = &mut self.link {
            while let Some(f) = to_remote.pop_due(now) {
                self.remote.send(&f)?;
            }
        }
        while let Some(f) = self.link.as_mut().and_then(|(_, r)| r.pop_due(now)) {
            self.on_remote_frame(&f)?;
        }
        let now_ps = self.now_ps(now);
        let Some(a) = &mut self.accel else {
            return Ok(());
        };
        let mut emits = Vec::new();
        while a.poll_timeout().is_some_and(|t| t <= now_ps) {
            let before = emits.len();
            a.handle_timeout(now_ps, &mut emits);
            if emits.len() == before && a.poll_timeout().is_some_and(|t| t <= now_ps) {
                // A round with nothing left to send: its deadline moves on by itself.
                break;
            }
        }
        self.emit(emits)
    }

    fn on_local_frame(&mut self, frame: &[u8]) -> anyhow::Result<()> {
        self.handle(Direction::LocalToRemote, frame)
    }

    fn on_remote_frame(&mut self, frame: &[u8]) -> anyhow::Result<()> {
        self.handle(Direction::RemoteToLocal, frame)
    }

    /// `packet`: a virtio-net header and the frame; the accelerator reads the frame, and a
    /// frame that passes keeps its header (what the kernel still has to do for it).
    fn handle(&mut self, direction: Direction, packet: &[u8]) -> anyhow::Result<()> {
        let now_ps = self.now_ps(Instant::now());
        let mut emits = Vec::new();
        let frame = packet.get(packet::VNET_HDR_BYTES..).unwrap_or_default();
        let drop = match &mut self.accel {
            Some(a) => a.handle(now_ps, direction, frame, &mut emits).drop,
            None => false,
        };
        if !drop {
            self.send(direction, packet.to_vec())?;
        }
        self.emit(emits)
    }

    /// The accelerator's own frames, complete as built: an all-zero virtio-net header.
    fn emit(&mut self, emits: Vec<Emit>) -> anyhow::Result<()> {
        for e in emits {
            let mut packet = vec![0u8; packet::VNET_HDR_BYTES];
            packet.extend_from_slice(&e.bytes);
            self.send(e.direction, packet)?;
        }
        Ok(())
    }

    /// Sends a packet (virtio-net header and frame) on in `direction`: toward Remote through
    /// the emulated link if any.
    fn send(&mut self, direction: Direction, frame: Vec<u8>) -> anyhow::Result<()> {
        match direction {
            Direction::RemoteToLocal => {
                self.passed[1] += 1;
                self.local.send(&frame)?;
            }
            Direction::LocalToRemote => {
                self.passed[0] += 1;
                match &mut self.link {
                    Some((to_remote, _)) => to_remote.push(Instant::now(), frame),
                    None => self.remote.send(&frame)?,
                }
            }
        }
        Ok(())
    }

    fn summary(&self) -> serde_json::Value {
        let a = self.accel.as_ref();
        serde_json::json!({
            "accelerated": a.is_some(),
            "accel": a.map(|a| a.stats()),
            "connections": a.map(|a| a.connections()),
            "held_bytes": a.map(|a| a.held_bytes()),
            "sent_toward_remote": self.passed[0],
            "sent_toward_local": self.passed[1],
            "link_lost": self.link.as_ref().map(|(t, f)| [t.lost, f.lost]),
        })
    }
}
