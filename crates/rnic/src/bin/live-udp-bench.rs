//! The raw baseline `rnic live` is measured against: the same datagrams through the same
//! socket calls ([`rnic::live::net::RoceSocket`]: `sendmmsg` of up to [`BATCH`] datagrams,
//! `recvmmsg` into [`BATCH`] buffers), with no RoCE work at either end.
//!
//! `live-udp-bench blast [-m MTU] [--secs S]`: one thread sends MTU-sized RoCEv2 datagrams
//! from the peer address to the bound one as fast as the socket takes them, [`BATCH`] per
//! call, another counts what arrives, waiting in the socket, for S seconds (a decimal);
//! prints the payload goodput that arrived (Gbit/s).
//! `live-udp-bench ping [-n ITERS] [--block]`: 2-byte-payload datagrams bounce between the
//! two addresses, each side spinning on non-blocking receives as `rnic live`'s latency
//! tests do (`--block`: waiting in the socket instead); prints half the median round trip
//! (µs), as perftest's latency. `--ack`: each side sends a bare ACK datagram before each
//! message, both in one `sendmmsg`, and waits for both of the peer's, as an RC WRITE
//! ping-pong's answering side sends the ACK of the message it got with its own (the
//! like-for-like baseline of `rnic live write-lat`).
//! A flag the command does not take is refused, naming it.
//! Both take `--bind IP` (the measuring end: blast's receiver, ping's timing side; default
//! 127.0.0.1, `rnic live`'s flag for its own address) and `--peer IP` (the other end;
//! default 127.0.0.2), two different IPv4 addresses of this machine.
//! Needs root (raw sockets), as `rnic live`.

use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rnic::live::net::{RoceSocket, BATCH};
use rnic_wire::{BthRepr, FrameAddr, FrameRepr, Opcode, RoceRepr};

/// `--bind`'s and `--peer`'s defaults.
const A: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 1);
const B: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);

/// A RoCEv2 WRITE MIDDLE datagram from `src` to `dst` with `payload` bytes.
fn datagram(src: Ipv4Addr, dst: Ipv4Addr, payload: usize) -> Vec<u8> {
    let bytes = vec![0x5A; payload];
    let bth = BthRepr {
        opcode: Opcode::RcWriteMiddle,
        solicited: false,
        mig_req: false,
        pad_count: 0,
        tver: 0,
        pkey: 0xFFFF,
        fecn: false,
        becn: false,
        dest_qp: 0x11,
        ack_req: false,
        psn: 0,
    };
    let mut frame = Vec::new();
    FrameRepr {
        addr: FrameAddr {
            src_ip: src.octets(),
            dst_ip: dst.octets(),
            udp_src_port: 0xC011,
            ttl: 64,
            ..FrameAddr::default()
        },
        ip_ident: 1,
        roce: RoceRepr::new(bth, &bytes),
    }
    .emit(&mut frame);
    frame
}

/// The value after `flag`, if the flag is given; the flag without a value is an error
/// naming it and what it takes.
fn value<'a>(args: &'a [String], flag: &str, takes: &str) -> anyhow::Result<Option<&'a str>> {
    match args.iter().position(|a| a == flag) {
        None => Ok(None),
        Some(i) => match args.get(i + 1) {
            Some(v) => Ok(Some(v)),
            None => anyhow::bail!("{flag} takes {takes}; none given"),
        },
    }
}

/// The positive integer after `flag`, or `default` without the flag; a missing, malformed
/// or zero value is an error naming the flag.
fn arg(args: &[String], flag: &str, default: u64) -> anyhow::Result<u64> {
    let takes = "a positive integer";
    match value(args, flag, takes)? {
        None => Ok(default),
        Some(v) => match v.parse::<u64>() {
            Ok(n) if n > 0 => Ok(n),
            _ => anyhow::bail!("{flag} takes {takes}, not {v:?}"),
        },
    }
}

/// `--secs`: a positive number of seconds, decimals allowed (2 without the flag).
fn secs(args: &[String]) -> anyhow::Result<Duration> {
    let takes = "a positive number of seconds";
    let Some(v) = value(args, "--secs", takes)? else {
        return Ok(Duration::from_secs(2));
    };
    match v.parse::<f64>().map(Duration::try_from_secs_f64) {
        Ok(Ok(d)) if !d.is_zero() => Ok(d),
        _ => anyhow::bail!("--secs takes {takes}, not {v:?}"),
    }
}

/// The two ends: `--bind` (the measuring end) and `--peer`, different IPv4 addresses.
fn ends(args: &[String]) -> anyhow::Result<(Ipv4Addr, Ipv4Addr)> {
    let ip = |flag: &str, default: Ipv4Addr| -> anyhow::Result<Ipv4Addr> {
        let Some(v) = value(args, flag, "an IPv4 address")? else {
            return Ok(default);
        };
        match v.parse::<std::net::IpAddr>() {
            Ok(std::net::IpAddr::V4(ip)) => Ok(ip),
            Ok(std::net::IpAddr::V6(_)) => {
                anyhow::bail!("{flag} {v}: IPv6 is not supported (RoCEv2 datagrams over IPv4)")
            }
            Err(_) => anyhow::bail!("{flag} {v:?} is not an IPv4 address"),
        }
    };
    let (bind, peer) = (ip("--bind", A)?, ip("--peer", B)?);
    if bind == peer {
        anyhow::bail!("--bind and --peer are both {bind}: the two ends need two addresses");
    }
    Ok((bind, peer))
}

fn blast(args: &[String]) -> anyhow::Result<()> {
    let mtu = arg(args, "-m", 1024)? as usize;
    let secs = secs(args)?;
    let (a, b) = ends(args)?;
    let rx = RoceSocket::open(a)?;
    let tx = RoceSocket::open(b)?;
    let stop = Arc::new(AtomicBool::new(false));
    let stop_tx = stop.clone();
    let sender = std::thread::spawn(move || -> anyhow::Result<u64> {
        let mut frames = vec![datagram(b, a, mtu); BATCH];
        let mut sent = 0u64;
        while !stop_tx.load(Ordering::Relaxed) {
            tx.send_batch(&mut frames)?;
            sent += BATCH as u64;
        }
        Ok(sent)
    });
    let (mut bufs, mut lens) = (vec![vec![0u8; 9000]; BATCH], [0; BATCH]);
    let (mut got, start) = (0u64, Instant::now());
    while start.elapsed() < secs {
        got += rx.recv_batch(&mut bufs, &mut lens, Duration::from_millis(10))? as u64;
    }
    let elapsed = start.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let sent = sender.join().expect("the sender thread")?;
    let gbps = got as f64 * mtu as f64 * 8.0 / elapsed / 1e9;
    println!("raw datagrams: {mtu}-byte payloads, {got} of {sent} arrived in {elapsed:.2} s: {gbps:.3} Gbit/s payload");
    Ok(())
}

fn ping(args: &[String]) -> anyhow::Result<()> {
    let iters = arg(args, "-n", 10_000)? as usize;
    let wait = if args.iter().any(|a| a == "--block") {
        Duration::from_secs(5)
    } else {
        Duration::ZERO
    };
    let with_ack = args.iter().any(|a| a == "--ack");
    let (a_ip, b_ip) = ends(args)?;
    let a = RoceSocket::open(a_ip)?;
    let b = RoceSocket::open(b_ip)?;
    let echo = std::thread::spawn(move || -> anyhow::Result<()> {
        let (mut bufs, mut lens) = (vec![vec![0u8; 2048]; BATCH], [0; BATCH]);
        let mut reply = turn(b_ip, a_ip, with_ack);
        for _ in 0..iters {
            receive(&b, reply.len(), &mut bufs, &mut lens, wait)?;
            b.send_batch(&mut reply)?;
        }
        Ok(())
    });
    let (mut bufs, mut lens) = (vec![vec![0u8; 2048]; BATCH], [0; BATCH]);
    let mut msg = turn(a_ip, b_ip, with_ack);
    let mut half_rtt_us = Vec::with_capacity(iters);
    for _ in 0..iters {
        let t = Instant::now();
        a.send_batch(&mut msg)?;
        receive(&a, msg.len(), &mut bufs, &mut lens, wait)?;
        half_rtt_us.push(t.elapsed().as_secs_f64() * 1e6 / 2.0);
    }
    echo.join().expect("the echo thread")?;
    half_rtt_us.sort_by(f64::total_cmp);
    println!(
        "raw ping-pong: 2-byte payloads, {iters} round trips: half round trip median {:.2} us, min {:.2} us",
        half_rtt_us[iters / 2],
        half_rtt_us[0]
    );
    Ok(())
}

/// What one side sends per turn: its 2-byte message, after a bare ACK with `with_ack`.
fn turn(src: Ipv4Addr, dst: Ipv4Addr, with_ack: bool) -> Vec<Vec<u8>> {
    let msg = datagram(src, dst, 2);
    if with_ack {
        vec![datagram(src, dst, 0), msg]
    } else {
        vec![msg]
    }
}

/// Waits until `count` datagrams came.
fn receive(
    s: &RoceSocket,
    count: usize,
    bufs: &mut [Vec<u8>],
    lens: &mut [usize],
    wait: Duration,
) -> anyhow::Result<()> {
    let mut got = 0;
    while got < count {
        got += s.recv_batch(bufs, lens, wait)?;
    }
    Ok(())
}

const USAGE: &str = "usage: live-udp-bench blast [-m MTU] [--secs S] | ping [-n ITERS] \
                     [--block] [--ack] (either: [--bind IP] [--peer IP])";

/// Refuses a flag the command does not take (a typo such as `--sec 0.2` would otherwise run
/// with the default), naming it. `valued` flags take the next argument as their value.
fn only_known(args: &[String], valued: &[&str], switches: &[&str]) -> anyhow::Result<()> {
    let mut rest = args.iter().skip(1);
    while let Some(a) = rest.next() {
        if valued.contains(&a.as_str()) {
            rest.next();
        } else if !switches.contains(&a.as_str()) {
            anyhow::bail!("{} does not take {a:?}; {USAGE}", args[0]);
        }
    }
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("blast") => {
            only_known(&args, &["-m", "--secs", "--bind", "--peer"], &[])?;
            blast(&args)
        }
        Some("ping") => {
            only_known(&args, &["-n", "--bind", "--peer"], &["--block", "--ack"])?;
            ping(&args)
        }
        _ => anyhow::bail!("{USAGE}"),
    }
}
