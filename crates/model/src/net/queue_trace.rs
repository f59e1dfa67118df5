//! The queue trace (`net.trace_interval_us`): every interval, the queue of each switch
//! output port and whether it, and each NIC's transmitter, is paused by PFC, as a CSV file
//! (`rnic run`/`rnic perf --json FILE` write FILE-queues.csv).

use rnic_sim::TimePs;

use super::graph::Network;

/// One column of the trace: a switch output port, or a NIC's transmitter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceSeries {
    /// `switchS` or `nodeN`.
    pub device: String,
    /// The output port (0 for a NIC).
    pub port: u32,
    /// The queue at each sample, bytes (`None` for a NIC, whose queue is not a switch's).
    pub queue_bytes: Option<Vec<u64>>,
    /// Whether its transmitter is paused at each sample.
    pub paused: Vec<bool>,
}

/// The trace of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueTrace {
    /// The sampling interval, ps.
    pub interval_ps: TimePs,
    /// Samples per series.
    pub samples: usize,
    /// Every switch output port, then every NIC.
    pub series: Vec<TraceSeries>,
    /// The trace stopped at its share of the row budget before the run ended
    /// ([`crate::params::trace::TRACE_ROW_BUDGET`]).
    pub cut: bool,
}

/// Whether a time inside one of `pauses` (`[from, until)`, in time order), at each of
/// `samples` multiples of `interval_ps`.
fn paused_at(pauses: &[(TimePs, TimePs)], interval_ps: TimePs, samples: usize) -> Vec<bool> {
    let mut i = 0;
    (0..samples as u64)
        .map(|k| {
            let t = k * interval_ps;
            while pauses.get(i).is_some_and(|&(_, until)| until <= t) {
                i += 1;
            }
            pauses.get(i).is_some_and(|&(from, _)| from <= t)
        })
        .collect()
}

impl QueueTrace {
    /// The CSV file: `time_us,device,port,queue_bytes,paused`, one line per series per
    /// sample, in time order (`queue_bytes` empty for a NIC; `paused` 0 or 1).
    pub fn to_csv(&self) -> String {
        let mut out = String::from("time_us,device,port,queue_bytes,paused\n");
        for k in 0..self.samples {
            let t_us = (k as u64 * self.interval_ps) as f64 / 1e6;
            for s in &self.series {
                let q = s
                    .queue_bytes
                    .as_ref()
                    .map_or(String::new(), |q| q[k].to_string());
                out.push_str(&format!(
                    "{t_us},{},{},{q},{}\n",
                    s.device,
                    s.port,
                    u8::from(s.paused[k])
                ));
            }
        }
        out
    }
}

impl Network {
    /// The trace of a run that has ended (queues finished, pauses ended), if one was asked
    /// for.
    pub fn queue_trace(&self) -> Option<QueueTrace> {
        let queues = self.queues.as_ref()?;
        let interval_ps = queues.interval_ps?;
        let samples = queues
            .ports
            .iter()
            .flatten()
            .map(|q| q.samples().len())
            .max()
            .unwrap_or(0);
        let pauses = |link: usize| {
            let p = self.pfc.as_ref().map_or(&[][..], |p| p.pauses_of(link));
            paused_at(p, interval_ps, samples)
        };
        let mut series = Vec::new();
        for (s, (sw, qs)) in self.switches.iter().zip(&queues.ports).enumerate() {
            for (out, q) in qs.iter().enumerate() {
                let mut levels = q.samples().to_vec();
                levels.resize(samples, levels.last().copied().unwrap_or(0));
                series.push(TraceSeries {
                    device: format!("switch{s}"),
                    port: out as u32,
                    queue_bytes: Some(levels),
                    paused: pauses(sw.out_link[out]),
                });
            }
        }
        for (n, &link) in self.uplink.iter().enumerate() {
            series.push(TraceSeries {
                device: format!("node{n}"),
                port: 0,
                queue_bytes: None,
                paused: pauses(link),
            });
        }
        Some(QueueTrace {
            interval_ps,
            samples,
            series,
            cut: queues.ports.iter().flatten().any(|q| q.cut()),
        })
    }

    /// The run ended at `end`: every queue's time runs on to it (before its statistics or
    /// trace are read).
    pub fn end_queues(&mut self, end: TimePs) {
        if let Some(q) = self.queues.as_mut() {
            q.finish(end);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_is_paused_inside_a_pause_only() {
        let got = paused_at(&[(5, 15), (30, 31)], 10, 5);
        assert_eq!(got, vec![false, true, false, true, false]);
        assert_eq!(paused_at(&[], 10, 2), vec![false, false]);
    }

    #[test]
    fn the_csv_has_a_line_per_series_per_sample() {
        let t = QueueTrace {
            interval_ps: 1_000_000,
            samples: 2,
            cut: false,
            series: vec![
                TraceSeries {
                    device: "switch0".into(),
                    port: 1,
                    queue_bytes: Some(vec![0, 4096]),
                    paused: vec![false, true],
                },
                TraceSeries {
                    device: "node2".into(),
                    port: 0,
                    queue_bytes: None,
                    paused: vec![true, false],
                },
            ],
        };
        assert_eq!(
            t.to_csv(),
            "time_us,device,port,queue_bytes,paused\n0,switch0,1,0,0\n0,node2,0,,1\n\
             1,switch0,1,4096,1\n1,node2,0,,0\n"
        );
    }
}
