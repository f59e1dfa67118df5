//! perftest's verifiers `-w/--limit_bw` and `-y/--limit_msgrate`: floors a bandwidth run's
//! figures must reach, checked after the report is printed and written, so that a script
//! (a CI job) can fail on a slow run. As perftest's, a run passes when any size's average
//! reaches the floor (perftest ORs its verdict over the sizes of `-a`), and the bandwidth
//! is in the table's units: MB/s (2^20 bytes), or Gb/s with `--report_gbits`.

use anyhow::bail;
use rnic_model::result::SizeResult;

use super::report::LiveResult;
use super::LiveTest;
use crate::UsageError;

/// The floors of a run; `None` where not asked.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Floors {
    /// `-w`: average bandwidth, in the table's units.
    pub bw: Option<f64>,
    /// `-y`: average message rate, Mpps.
    pub msg_rate_mpps: Option<f64>,
}

impl Floors {
    /// `-w` and `-y` as given: the bandwidth tests only, as perftest offers them, and not
    /// negative.
    pub fn of(
        bw: Option<f64>,
        msg_rate: Option<f64>,
        test: LiveTest,
    ) -> Result<Floors, UsageError> {
        for (flag, v) in [("-w/--limit_bw", bw), ("-y/--limit_msgrate", msg_rate)] {
            let Some(v) = v else { continue };
            if !(v.is_finite() && v >= 0.0) {
                return Err(UsageError(format!("{flag} {v}: must be 0 or more")));
            }
            if !test.is_bandwidth() {
                return Err(UsageError(format!(
                    "{flag} {v}: the bandwidth tests have it, not {}",
                    test.name()
                )));
            }
        }
        Ok(Floors {
            bw,
            msg_rate_mpps: msg_rate,
        })
    }

    /// Fails when a floor is asked and no size of `r` reaches it, as perftest's "BW result
    /// is below bw limit" (exit 1).
    pub fn check(&self, r: &LiveResult, report_gbits: bool) -> anyhow::Result<()> {
        let rows: Vec<&SizeResult> = if r.per_size.is_empty() {
            vec![&r.row]
        } else {
            r.per_size.iter().collect()
        };
        if let Some(floor) = self.bw {
            let best = rows
                .iter()
                .map(|s| bw_avg(s, report_gbits))
                .fold(0.0, f64::max);
            if best < floor {
                let units = if report_gbits { "Gb/s" } else { "MB/s" };
                bail!("BW result is below bw limit: {best:.2} {units}, -w/--limit_bw {floor}");
            }
        }
        if let Some(floor) = self.msg_rate_mpps {
            let best = rows.iter().map(|s| s.msg_rate_mops).fold(0.0, f64::max);
            if best < floor {
                bail!(
                    "Msg rate is below msg_rate limit: {best:.6} Mpps, -y/--limit_msgrate {floor}"
                );
            }
        }
        Ok(())
    }
}

/// A row's average bandwidth as the table prints it.
fn bw_avg(r: &SizeResult, report_gbits: bool) -> f64 {
    if report_gbits {
        r.bw_avg_mb_s * 1_048_576.0 * 8.0 / 1e9
    } else {
        r.bw_avg_mb_s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(rows: &[(f64, f64)]) -> LiveResult {
        let mut r = LiveResult::bandwidth("write-bw", 4096, 100, 1.0);
        r.per_size = rows
            .iter()
            .map(|&(bw_avg_mb_s, msg_rate_mops)| SizeResult {
                bw_avg_mb_s,
                msg_rate_mops,
                ..SizeResult::default()
            })
            .collect();
        r
    }

    #[test]
    fn a_run_passes_when_any_size_reaches_the_floor_as_perftests() {
        let r = result(&[(50.0, 0.8), (120.0, 0.03)]);
        let floors = |bw, mr| Floors {
            bw,
            msg_rate_mpps: mr,
        };
        assert!(floors(Some(100.0), Some(0.5)).check(&r, false).is_ok());
        let e = floors(Some(130.0), None).check(&r, false).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("BW result is below bw limit: 120.00 MB/s"),
            "{e}"
        );
        let e = floors(None, Some(1.0)).check(&r, false).unwrap_err();
        assert!(e.to_string().contains("-y/--limit_msgrate 1"), "{e}");
        // 120 MiB/s is 1.007 Gb/s: in the table's units with --report_gbits.
        assert!(floors(Some(1.0), None).check(&r, true).is_ok());
        assert!(floors(Some(1.1), None).check(&r, true).is_err());
        assert!(Floors::default().check(&r, false).is_ok());
    }

    #[test]
    fn the_floors_are_the_bandwidth_tests_and_not_negative() {
        assert!(Floors::of(Some(1.0), None, LiveTest::SendBw).is_ok());
        let e = Floors::of(Some(1.0), None, LiveTest::WriteLat)
            .unwrap_err()
            .0;
        assert!(e.starts_with("-w/--limit_bw 1: the bandwidth tests"), "{e}");
        let e = Floors::of(None, Some(-1.0), LiveTest::ReadBw)
            .unwrap_err()
            .0;
        assert!(
            e.starts_with("-y/--limit_msgrate -1: must be 0 or more"),
            "{e}"
        );
    }
}
