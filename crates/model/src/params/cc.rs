//! Congestion control's parameters, resolved from `net.cc` and `[net.dcqcn]`.

use rnic_sim::TimePs;

use crate::config::{CcKind, Config};

/// DCQCN's parameters in the model's units (ps, bytes, Mb/s).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DcqcnParams {
    /// At most one CNP per QP in this interval, ps.
    pub cnp_interval_ps: TimePs,
    /// Gain of the alpha estimate.
    pub g: f64,
    /// Alpha update period, ps.
    pub alpha_period_ps: TimePs,
    /// Rate-increase timer period, ps.
    pub increase_period_ps: TimePs,
    /// Byte counter: bytes sent per increase event.
    pub byte_counter_bytes: u64,
    /// Increase events of fast recovery.
    pub fast_recovery_steps: u32,
    /// Additive increase, Mb/s.
    pub rate_ai_mbps: f64,
    /// Hyper increase, Mb/s.
    pub rate_hai_mbps: f64,
    /// Lowest rate, Mb/s.
    pub min_rate_mbps: f64,
    /// Every cut sets the target to the current rate (else only a cut after an increase).
    pub clamp_target_rate: bool,
    /// 0: a CNP cuts when it arrives; else the rate-decrease check's period, ps (a CNP
    /// flags the QP; a check cuts once if flagged).
    pub rate_decrease_interval_ps: TimePs,
    /// The rate trace's sampling interval (`net.trace_interval_us`, the queue trace's
    /// clock), ps; 0: no trace.
    pub trace_interval_ps: TimePs,
}

/// The congestion control the NICs run.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum CcParams {
    /// None.
    #[default]
    None,
    /// DCQCN with these parameters.
    Dcqcn(DcqcnParams),
}

/// Picoseconds of `us` microseconds.
fn us_to_ps(us: f64) -> TimePs {
    (us * 1e6).round() as TimePs
}

impl CcParams {
    /// What `net.cc` and `[net.dcqcn]` select.
    pub fn from_config(cfg: &Config) -> Self {
        let d = &cfg.net.dcqcn;
        match cfg.net.cc {
            CcKind::None => CcParams::None,
            CcKind::Dcqcn => CcParams::Dcqcn(DcqcnParams {
                cnp_interval_ps: us_to_ps(d.cnp_interval_us),
                g: d.g,
                alpha_period_ps: us_to_ps(d.alpha_period_us),
                increase_period_ps: us_to_ps(d.increase_period_us),
                byte_counter_bytes: d.byte_counter_bytes,
                fast_recovery_steps: d.fast_recovery_steps,
                rate_ai_mbps: d.rate_ai_mbps,
                rate_hai_mbps: d.rate_hai_mbps,
                min_rate_mbps: d.min_rate_mbps,
                clamp_target_rate: d.clamp_target_rate,
                rate_decrease_interval_ps: us_to_ps(d.rate_decrease_interval_us),
                trace_interval_ps: rnic_sim::ns(cfg.net.trace_interval_us * 1000.0),
            }),
        }
    }
}

impl CcParams {
    /// DCQCN's parameters, if it runs.
    pub fn dcqcn(&self) -> Option<DcqcnParams> {
        match self {
            CcParams::Dcqcn(d) => Some(*d),
            CcParams::None => None,
        }
    }
}
