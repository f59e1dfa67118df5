//! `net.cc` and `[net.dcqcn]`: end-to-end congestion control in the NICs. Off by default
//! (`net.cc = "none"`), so no existing result moves.
//!
//! Each DCQCN default names its published source: the DCQCN paper ("Congestion Control for
//! Large-Scale RDMA Deployments", SIGCOMM '15), or the ns-3 HPCC simulator's `rdma-hw`
//! defaults where the paper gives no number.

use super::declare::{config_enum, config_section};
use super::schema::{float, uint, Kind};

config_enum! {
    /// The congestion control the NICs run.
    pub enum CcKind {
        /// None: QPs send as fast as the NIC and the link let them (and PFC, if on, stops them).
        None = "none",
        /// DCQCN: the receiving NIC answers CE-marked data with CNPs, the sending NIC cuts and
        /// recovers each QP's rate (the DCQCN paper).
        Dcqcn = "dcqcn",
    }
}

config_section! {
    /// DCQCN's parameters (with net.cc = "dcqcn").
    pub struct DcqcnConfig in "net.dcqcn" {
        /// Notification point: at most one CNP per QP in this interval, however many CE-marked
        /// packets arrive (50 µs: the DCQCN paper's N)
        cnp_interval_us: f64 = 50.0; "µs", float(0.1, 1e6);
        /// Reaction point: gain g of the alpha estimate, alpha <- (1 - g) alpha + g per period
        /// with a CNP, (1 - g) alpha without (1/256: the DCQCN paper)
        g: f64 = 0.00390625; "gain", float(1e-6, 1.0);
        /// Period of the alpha update (55 µs: the DCQCN paper's K, also the ns-3 HPCC
        /// simulator's rdma-hw AlphaResumInterval)
        alpha_period_us: f64 = 55.0; "µs", float(0.1, 1e6);
        /// Rate-increase timer: one increase event each period without a CNP (55 µs: the
        /// DCQCN paper's T)
        increase_period_us: f64 = 55.0; "µs", float(0.1, 1e6);
        /// Byte counter: one increase event each time the QP has sent this many bytes without
        /// a CNP (10 MB: the DCQCN paper's B); 0 = no byte counter, the timer's events alone
        /// set the stage (fast recovery, then additive, then hyper increase), as the Mellanox
        /// DCQCN of the ns-3 HPCC simulator runs
        byte_counter_bytes: u64 = 10_000_000; "bytes", uint(0, 1 << 40);
        /// Increase events of fast recovery (current <- (target + current) / 2) before
        /// additive increase (5: the DCQCN paper's F, also rdma-hw's FastRecoveryTimes)
        fast_recovery_steps: u32 = 5; "events", uint(1, 1 << 20);
        /// Additive increase of the target rate per event (40 Mb/s: the DCQCN paper's R_AI)
        rate_ai_mbps: f64 = 40.0; "Mb/s", float(0.0, 1e7);
        /// Hyper increase of the target rate per event, once both the timer and the byte
        /// counter are past fast recovery (50 Mb/s: rdma-hw's RateHAI; the paper gives none)
        rate_hai_mbps: f64 = 50.0; "Mb/s", float(0.0, 1e7);
        /// The lowest rate a QP is cut to (100 Mb/s: rdma-hw's MinRate)
        min_rate_mbps: f64 = 100.0; "Mb/s", float(1.0, 1e7);
        /// Whether every cut sets the target rate to the current rate (true: the DCQCN
        /// paper's RP algorithm), or only a cut after an increase event since the last cut
        /// (false: rdma-hw's ClampTargetRate default and the CLAMP_TARGET_RATE 0 of the ns-3
        /// HPCC simulator's DCQCN runs, as ConnectX firmware's clamp_tgt_rate 0). With true,
        /// CNPs that come faster than the increase timer fires ratchet the target down with
        /// the rate, and a QP recovers to a fraction of the rate it had before the queue built
        clamp_target_rate: bool = false; "switch", Kind::Bool;
        /// Reaction point: 0 = a CNP cuts the rate as it arrives (the DCQCN paper's RP);
        /// above 0 = a CNP only flags the QP and the rate is cut at most once per this
        /// interval, on a check that the QP's first CNP starts one interval later and that
        /// cuts if a CNP came since the last check (the Mellanox DCQCN of the ns-3 HPCC
        /// simulator, rdma-hw's RateDecreaseInterval, 4 µs in its DCQCN runs; its receiver
        /// flags the ACK of every marked packet, so pair it with a short cnp_interval_us)
        rate_decrease_interval_us: f64 = 0.0; "µs", float(0.0, 1e6);
    }
}

/// DCQCN needs ECN-capable data (the switches mark only ECT frames), switches that mark
/// (`net.ecn.enabled`: without it DCQCN is silently `none`, so it is refused rather than
/// run) and a minimum rate below the line rate.
pub fn check_cc(cfg: &super::Config) -> Result<(), super::ConfigError> {
    if cfg.net.cc != CcKind::Dcqcn {
        return Ok(());
    }
    let bad = |m: String| Err(super::ConfigError::Inconsistent(m));
    if cfg.qp.traffic_class & 0b11 == 0 {
        return bad(format!(
            "net.cc = \"dcqcn\" needs ECN-capable packets, and qp.traffic_class = {} is \
             Not-ECT (its low two bits are 0): switches would never mark them; e.g. --set \
             qp.traffic_class={}",
            cfg.qp.traffic_class,
            cfg.qp.traffic_class | 0b10
        ));
    }
    if !cfg.net.ecn.enabled {
        return bad(
            "net.cc = \"dcqcn\" needs ECN marking, and net.ecn.enabled = false: no switch \
             would mark a packet, no CNP would go out, and DCQCN would never act; e.g. --set \
             net.ecn.enabled=true"
                .to_string(),
        );
    }
    let line_mbps = cfg.eth.gbps * 1000.0;
    if cfg.net.dcqcn.min_rate_mbps >= line_mbps {
        return bad(format!(
            "net.dcqcn.min_rate_mbps = {} must be below the line rate, eth.gbps = {} ({} Mb/s)",
            cfg.net.dcqcn.min_rate_mbps, cfg.eth.gbps, line_mbps
        ));
    }
    Ok(())
}
