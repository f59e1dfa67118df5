//! Why each paper's profile differs from `baseline`: every parameter a profile sets to
//! something other than baseline's value, with the paper's sentence that sets it, or marked
//! as rnic's choice (or a calibration) with why. `docs/claims.md` prints them; a test
//! derives the differing parameters from the profiles themselves ([`differing`]) and fails
//! when a profile gains (or loses) one that this list does not explain.

use crate::model::config::profiles::profile_table;
use crate::model::config::schema::{get_path, leaf_paths, short_value};
use std::fmt::Write as _;

/// Where a profile's value comes from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Basis {
    /// The paper's words that set it.
    Paper(&'static str),
    /// rnic's choice where the paper says nothing (or not enough), and why.
    Ours(&'static str),
    /// Set from one of the paper's results, which its claim then checks (a calibration).
    Calibrated(&'static str),
}

impl Basis {
    fn markdown(self) -> String {
        match self {
            Basis::Paper(s) => format!("paper: {s}"),
            Basis::Ours(s) => format!("*rnic's choice*: {s}"),
            Basis::Calibrated(s) => format!("*calibrated*: {s}"),
        }
    }
}

/// One parameter a profile sets away from baseline.
#[derive(Debug, Clone, Copy)]
pub struct ProfileParam {
    pub profile: &'static str,
    /// The configuration field.
    pub key: &'static str,
    pub basis: Basis,
}

const fn p(profile: &'static str, key: &'static str, basis: Basis) -> ProfileParam {
    ProfileParam {
        profile,
        key,
        basis,
    }
}

use Basis::{Calibrated, Ours, Paper};

/// Every parameter each profile sets away from baseline, profile by profile.
pub const PROFILE_PARAMS: &[ProfileParam] = &[
    // csRNA, §5.1 unless said.
    p(
        "csrna",
        "nic.qpc_manager",
        Paper(
            "\"we then combine a non-blocking connection requester and connection context \
         management module to process prepared connections first\" (§1, §4)",
        ),
    ),
    p(
        "csrna",
        "nic.latency_hiding",
        Paper(
            "\"we deploy a latency-hiding connection context scheduling strategy, maintaining low \
         latency when the number of connections increases\" (§1)",
        ),
    ),
    p(
        "csrna",
        "net.clients",
        Paper(
            "\"we use a single server that connects to 10 clients via a 100Gbps Ethernet \
         switch\"",
        ),
    ),
    // TX isolation (slides).
    p(
        "isolation",
        "nic.tx_isolation",
        Paper(
            "the optimized-v2 architecture (\"Optimized-v2: Isolated Backpressure for BS \
         Tenants\", \"Optimized-v2: Adaptive WRR for BS Tenants\"); each experiment sets the \
         arm it compares (baseline, v1, v2)",
        ),
    ),
    p(
        "isolation",
        "nic.iso_shared_fifo_depth",
        Paper(
            "16: the baseline the paper's figures compare against is the authors' RTL, whose \
         WQE cache is one FIFO of 16 that every QP shares; it is almost full at 15, and that \
         flag stops the WQE read scheduler for every QP until the transport starts a WQE \
         (rnic's default, 0, leaves the shared FIFO unbounded; it was unbounded here before)",
        ),
    ),
    p(
        "isolation",
        "qp.pmtu",
        Ours(
            "the slides state no PMTU for their runs; their WRR example uses 1 KB and 2 KB, and \
         rnic runs 1 KB unless an experiment states otherwise",
        ),
    ),
    p(
        "isolation",
        "net.clients",
        Ours(
            "up to 8 BS tenants and the LS tenant each on its own client node, so that no \
         receiver is shared: the paper isolates the transmit side only",
        ),
    ),
    // Resource prefetching.
    p(
        "prefetch",
        "nic.qpc_manager",
        Ours(
            "the requester and responder keep the non-blocking manager's indices, so that the \
         misses no prefetcher can predict (received packets, ACKs) do not block the others; \
         the paper's NIC is csRNA's authors' platform, the paper does not describe it",
        ),
    ),
    p(
        "prefetch",
        "nic.descriptor_fetch",
        Paper(
            "\"The fetch module then pops the QP number out and retrieves the QP context and \
         communication descriptors\" (§III-A): one QP at a time, waiting for its context, \
         the wait the prefetcher hides. Set after window0-low was measured to miss \
         (3c2717e; see the disclosures below)",
        ),
    ),
    p(
        "prefetch",
        "nic.prefetch",
        Paper(
            "\"In the heavy-loaded scenario, the prefetching is triggered by the scheduling \
         module, while in the light-loaded scenario, it is triggered by the software\" \
         (§III); prefetch-light turns the software trigger on as its arm. The scheduler \
         trigger alone was chosen after prefetch-scale was measured (30e8270; see the \
         disclosures below)",
        ),
    ),
    p(
        "prefetch",
        "nic.prefetch_window",
        Paper(
            "the paper's condition chunk_size / BW x wnd >= n x delay_fetch (§III-A) with its \
         own inputs: n = 4 resources (QPC, WQEs, MPT, MTT) of 500 ns (its PCIe round trip), \
         BW = 100 Gb/s and the profile's 3,584 B chunk: wnd >= 6.98, so 7, the paper's knee \
         (a calculation; it was 17 from the model's own 8-WQE visit before a4db878)",
        ),
    ),
    p(
        "prefetch",
        "nic.chunk_bytes",
        Calibrated(
            "from the paper's knee through its window condition, no run involved: window 7 is \
         the smallest meeting it with n = 4 and 500 ns at 100 Gb/s, so 3,571 <= chunk < \
         4,167 B, and 56 x 64 B WQEs = 3,584 B (a4db878; csRNA keeps its 1 KiB, \
         \"at the KB level\", its §5.3: the two papers' NICs differ here)",
        ),
    ),
    p(
        "prefetch",
        "nic.wqes_per_fetch",
        Calibrated("one visit reads its 56 WQEs (the chunk above) in one fetch (a4db878)"),
    ),
    p(
        "prefetch",
        "nic.wqe_cache_entries",
        Ours(
            "the paper's \"WQE buffer\" has no stated size: the window's QPs and the visit in \
         progress, 8 x 56 WQEs, rounded to 512",
        ),
    ),
    p(
        "prefetch",
        "host.wqe_prep_ns",
        Ours(
            "the paper: preparing WQEs \"takes at least several hundreds of nanoseconds according \
         to our experiment\" (§III-B); rnic takes the lower end, 300 ns (the light-load \
         verdict flips below about 210 ns: 30 % of the rise removed at 100 ns, 49 % at 200, \
         67 % at 300, 101 % at 500)",
        ),
    ),
    p(
        "prefetch",
        "host.cores",
        Ours(
            "the paper states no core count; 32 cores let the hosts post at its ~70 Mop/s peak \
         at 350 ns a post (70 M x 350 ns = 24.5 cores). Both prefetch-memory arms run on \
         this profile (since a4db878; the csRNA arm had run under the `csrna` profile's 10 \
         cores)",
        ),
    ),
    // ORNIC.
    p(
        "ornic",
        "nic.page_bytes",
        Ours(
            "buffers in 2 MB pages (huge pages): the paper does not say how its buffers are \
         mapped; each out-of-order packet translates only its own page, so 4 KB pages cost \
         little (4 MB WRITEs: 11,590 against 11,627 MB/s)",
        ),
    ),
    p(
        "ornic",
        "net.topology",
        Paper("\"The testbed consisted of two servers and a network emulator\" (Sec. 4)"),
    ),
    p(
        "ornic",
        "qp.reliability",
        Paper(
            "ORNIC's out-of-order packet direct write (the paper's method), for the RDMA WRITE \
         WQEs it measures",
        ),
    ),
    // Long-distance RDMA.
    p(
        "wan",
        "qp.window_psns",
        Calibrated(
            "the standard NIC's queue depth, which the article does not state: 85 packets, the \
         value whose largest relative error over its three standard-RDMA numbers (25, 3 and \
         0.3 Gbit/s at 10, 100 and 1000 km) is smallest; wan-standard's claims check the fit",
        ),
    ),
    p(
        "wan",
        "net.topology",
        Paper(
            "Local and Remote joined by a long link, with the accelerator's site beside Local \
         (§2.2, Fig. 5)",
        ),
    ),
    p(
        "wan",
        "net.wan_accel_frame_ns",
        Calibrated(
            "the software accelerator's time per frame, which the article does not state: \
         175 ns, so that 512 B WRITEs through it at 100 km run 35 times standard RDMA, the \
         article's one number for it; wan-accel/x35-at-512 checks the fit",
        ),
    ),
];

/// The parameters `profile` sets away from baseline: (key, baseline's value, its value).
pub fn differing(profile: &str) -> anyhow::Result<Vec<(String, String, String)>> {
    let base = profile_table("baseline")?;
    let own = profile_table(profile)?;
    let mut keys = leaf_paths(&own);
    keys.extend(leaf_paths(&base));
    keys.sort();
    keys.dedup();
    let shown = |t, k: &str| get_path(t, k).map_or("unset".to_string(), short_value);
    Ok(keys
        .into_iter()
        .filter(|k| get_path(&own, k) != get_path(&base, k))
        .map(|k| {
            let (b, o) = (shown(&base, &k), shown(&own, &k));
            (k, b, o)
        })
        .collect())
}

/// The docs' section: per profile, each differing parameter, baseline's value, the
/// profile's, and why. Fails when the list and the profiles disagree.
pub fn markdown() -> anyhow::Result<String> {
    let mut s = String::from(
        "## Profiles: what each sets away from baseline, and why\n\n\
         Every parameter a paper's profile sets to something other than `baseline` \
         (derived from the profiles; a test fails when one is not explained here), with \
         the paper's sentence that sets it, or marked as rnic's choice or a calibration. \
         `rnic config show --profile NAME` prints a whole profile.\n\n",
    );
    for def in crate::model::config::PROFILES.iter().skip(1) {
        let _ = writeln!(s, "### `{}`\n", def.name);
        s.push_str("| parameter | baseline | profile | why |\n|---|---|---|---|\n");
        for (key, base, own) in differing(def.name)? {
            let basis = explained(def.name, &key)?;
            let _ = writeln!(
                s,
                "| `{key}` | {base} | {own} | {} |",
                basis.markdown().replace('|', "\\|")
            );
        }
        s.push('\n');
    }
    Ok(s)
}

fn explained(profile: &str, key: &str) -> anyhow::Result<Basis> {
    PROFILE_PARAMS
        .iter()
        .find(|p| p.profile == profile && p.key == key)
        .map(|p| p.basis)
        .ok_or_else(|| {
            anyhow::anyhow!(
                "profile `{profile}` sets `{key}` away from baseline, and \
                 repro/profile_params.rs does not say why"
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every differing parameter is explained, and every explanation is of one that differs.
    #[test]
    fn every_profile_parameter_away_from_baseline_is_explained() {
        for def in crate::model::config::PROFILES.iter().skip(1) {
            for (key, _, _) in differing(def.name).unwrap() {
                explained(def.name, &key).unwrap();
            }
        }
        for p in PROFILE_PARAMS {
            let keys: Vec<String> = differing(p.profile)
                .unwrap()
                .into_iter()
                .map(|d| d.0)
                .collect();
            assert!(
                keys.iter().any(|k| k == p.key),
                "{} {}: explained but equal to baseline",
                p.profile,
                p.key
            );
        }
    }
}
