//! `rnic run` with `[[flow]]` tables: the committed example (its latency flow waits longer
//! beside the streams than alone, every byte verified, the same JSON twice) and a one-flow
//! scenario that gives the numbers of `rnic perf` with the same flags.

mod common;
use common::rnic_at_root as rnic;

fn json(args: &[&str]) -> serde_json::Value {
    let (code, out, err) = rnic(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    let mut v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    v["wall_seconds"] = 0.into();
    v
}

const EXAMPLE: &str = "scenarios/flows/ls-beside-3-bs.toml";

#[test]
fn the_example_latency_flow_waits_beside_three_streams() {
    let v = json(&["run", EXAMPLE, "--json", "-"]);
    let flows = v["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 4);
    for f in flows {
        assert_eq!(f["status"], "ok", "{f}");
        assert_eq!(f["bytes_verified"], true, "{f}");
    }
    assert_eq!(flows[0]["class"], "ls");
    assert_eq!(flows[1]["size_bytes"], 1 << 20);
    let shared = flows[0]["latency_us"]["p50"].as_f64().unwrap();
    let alone = json(&["perf", "write-lat", "-s", "64", "-D", "0.02", "--json", "-"]);
    let alone = alone["latency_us"]["p50"].as_f64().unwrap();
    assert!(
        shared > 10.0 * alone,
        "shared {shared} µs, alone {alone} µs"
    );
    assert_eq!(v, json(&["run", EXAMPLE, "--json", "-"]));
    // The text table: a line per flow and the total.
    let (_, text, _) = rnic(&["run", EXAMPLE]);
    for name in ["ls ", "bs1", "bs2", "bs3", "total"] {
        assert!(text.lines().any(|l| l.starts_with(name)), "{text}");
    }
}

#[test]
fn one_flow_gives_the_numbers_of_rnic_perf() {
    let dir = std::env::temp_dir().join(format!("rnic-flows-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("one.toml");
    std::fs::write(
        &file,
        "seed = 3\n[set]\nnet.clients = 2\nhost.cores = 1\n[[flow]]\ntest = \"send-bw\"\n\
         size = 2048\nqp = 4\niters = 50\ntx_depth = 16\nmtu = 1024\n",
    )
    .unwrap();
    let flows = json(&["run", file.to_str().unwrap(), "--json", "-"]);
    let perf = json(&[
        "perf",
        "send-bw",
        "-s",
        "2048",
        "-q",
        "4",
        "-n",
        "50",
        "-t",
        "16",
        "-m",
        "1024",
        "--clients",
        "2",
        "--seed",
        "3",
        "--set",
        "host.cores=1",
        "--json",
        "-",
    ]);
    let f = &flows["flows"][0];
    assert_flow_is_the_perf_run(f, &perf);
    assert_eq!(flows["events"], perf["events"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `rnic perf`'s one flow has every core of each node (`host.cores`, 10); a `[[flow]]` has
/// `cores`, default 1. With `cores = 10` the flow gives perf's numbers; on one core its 30
/// QPs wait for that core to post (14.28 Mops against 54.68), which the chapter said
/// nothing of ("the same numbers").
#[test]
fn one_flow_on_every_core_gives_the_numbers_of_rnic_perf() {
    let dir = std::env::temp_dir().join(format!("rnic-flows-cores-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let perf = json(&[
        "perf",
        "write-bw",
        "-s",
        "64",
        "-n",
        "200",
        "-q",
        "30",
        "--clients",
        "10",
        "--json",
        "-",
    ]);
    let flow = |cores: &str| {
        let file = dir.join(format!("cores{}.toml", cores.len()));
        std::fs::write(
            &file,
            format!(
                "[set]\nnet.clients = 10\n[[flow]]\ntest = \"write-bw\"\nsize = 64\n\
                 iters = 200\nqp = 30\n{cores}"
            ),
        )
        .unwrap();
        json(&["run", file.to_str().unwrap(), "--json", "-"])
    };
    let every = flow("cores = 10\n");
    let f = &every["flows"][0];
    assert_flow_is_the_perf_run(f, &perf);
    assert_eq!(every["events"], perf["events"]);
    let one = flow("");
    let rate = |v: &serde_json::Value| format!("{:.2}", v.as_f64().unwrap());
    assert_eq!(rate(&perf["msg_rate_mops"]), "54.68");
    assert_eq!(rate(&one["flows"][0]["msg_rate_mops"]), "14.28");
    let chapter = std::fs::read_to_string(common::repo_root().join("docs/book/src/flows.md"))
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        chapter.contains(
            "`rnic perf write-bw -s 64 -n 200 -q 30 --clients 10` gives 54.68 Mops; the same \
             flow (`size = 64`, `iters = 200`, `qp = 30`, `net.clients = 10`) 14.28 Mops on its \
             default one core, 54.68 with `cores = 10`"
        ),
        "flows.md no longer says a flow needs every core for perf's numbers"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_flow_files_exit_2_naming_the_field() {
    let dir = std::env::temp_dir().join(format!("rnic-flows-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (src, want) in [
        (
            "[[flow]]\ntest = \"write-bw\"\nclients = [5]\n",
            "flow[0].clients names node 5",
        ),
        ("[[flow]]\ntest = \"write-bw\"\nqps = 2\n", "flow[0].qps"),
        // A size listed twice is named as the size list's, not as two flows' names (it said
        // "`flow[0].name` = \"flow0-64B\" is also flow[0]'s name", a key the file lacks).
        (
            "[[flow]]\ntest = \"send-bw\"\nsize = [64, 4096, 64]\n",
            "`flow[0].size[2]` = 64 is not accepted: must be a size not listed before",
        ),
        (
            "[[flow]]\ntest = \"write-bw\"\nsize = 64\nqp = 2\nmrs = 3\n",
            "flow[0].mrs = 3",
        ),
        (
            "[perf]\ntest = \"write-bw\"\n[[flow]]\ntest = \"write-bw\"\n",
            "not both",
        ),
        // A window too short is named by the flow's own key, in µs, with the least that
        // measures (perftest's -D and -n are no keys of a flow).
        (
            "[[flow]]\ntest = \"write-bw\"\nsize = 4096\nduration_us = 0.001\n",
            "`flow[0].duration_us` = 0.001 µs is too short",
        ),
        (
            "[[flow]]\ntest = \"write-bw\"\nsize = 4096\nduration_us = 0.001\n",
            "use duration_us = 33.552 or more, or iters",
        ),
        (
            "[[flow]]\ntest = \"write-lat\"\nsize = 64\nduration_us = 5\n",
            "`flow[0].duration_us` = 5 µs is too short to measure write-lat",
        ),
        // --procs's rules, named by the flow's keys: the cores are the flow's own, not
        // host.cores (which it said was 1 while it was 10).
        (
            "[[flow]]\ntest = \"write-lat\"\nprocs = 4\nqp = 4\n",
            "`flow[0].procs` = 4 needs a core per process, but `flow[0].cores` = 1",
        ),
        (
            "[[flow]]\ntest = \"write-lat\"\nprocs = 4\ncores = 4\n",
            "`flow[0].procs` = 4 needs at least one QP per process, but `flow[0].qp` = 1",
        ),
        (
            "[[flow]]\ntest = \"write-bw\"\nprocs = 2\n",
            "`flow[0].procs` applies to write-lat, read-lat and atomic-lat flows, not write-bw",
        ),
        // The QP service's rules, named by the flow's keys (a flow has no -c, -s or -m).
        (
            "[set]\nqp.transport = \"ud\"\n[[flow]]\ntest = \"write-bw\"\n",
            "`flow[0].test` = write-bw needs an RC QP: qp.transport = \"ud\" carries send-bw \
             and send-lat",
        ),
        (
            "[set]\nqp.transport = \"ud\"\n[[flow]]\ntest = \"send-bw\"\nsize = 8192\n\
             mtu = 2048\n",
            "`flow[0].size` = 8192: a UD message is one packet, at most the path MTU \
             (`flow[0].mtu` = 2048)",
        ),
    ] {
        let file = dir.join("bad.toml");
        std::fs::write(&file, src).unwrap();
        let (code, _, err) = rnic(&["run", file.to_str().unwrap()]);
        assert_eq!(code, 2, "{src}: {err}");
        assert!(err.contains(want), "{src}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The committed size-mix example: both flows verify, the storage flow's JSON carries its
/// mix, its bytes lie between all-4 KB and all-1 MB, and the table marks the size as a mix.
#[test]
fn the_size_mix_example_verifies_its_drawn_sizes() {
    let file = "scenarios/flows/size-mix.toml";
    let v = json(&["run", file, "--json", "-"]);
    let flows = v["flows"].as_array().unwrap();
    for f in flows {
        assert_eq!(f["status"], "ok", "{f}");
        assert_eq!(f["bytes_verified"], true, "{f}");
    }
    let s = &flows[1];
    assert_eq!(s["size_mix"]["values"], serde_json::json!([4096, 1048576]));
    assert_eq!(s["size_mix"]["weights"], serde_json::json!([9, 1]));
    let bytes = s["verified_bytes"].as_u64().unwrap();
    let ops = s["ops_completed"].as_u64().unwrap();
    assert!(
        bytes > ops * 4096 && bytes < ops * 1048576,
        "{bytes} B in {ops} ops"
    );
    let (_, text, _) = rnic(&["run", file]);
    assert!(
        text.lines()
            .any(|l| l.starts_with("storage") && l.contains("<=1048576")),
        "{text}"
    );
}

/// The capture holds node 0's port: a flow between two other nodes never crosses it, and
/// the run says so instead of writing a capture that silently lacks that flow.
#[test]
fn a_flow_that_does_not_cross_node_0_is_named_when_capturing() {
    let dir = std::env::temp_dir().join(format!("rnic-flows-pcap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("away.toml");
    std::fs::write(
        &file,
        "[set]\nnet.clients = 3\n\
         [[flow]]\nname = \"near\"\ntest = \"write-bw\"\nsize = 1024\niters = 20\nclients = [1]\n\
         [[flow]]\nname = \"away\"\ntest = \"write-bw\"\nsize = 1024\niters = 20\nserver = 2\n\
         clients = [3]\n",
    )
    .unwrap();
    let pcap = dir.join("away.pcap");
    let (code, _, err) = rnic(&[
        "run",
        file.to_str().unwrap(),
        "--pcap",
        pcap.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("flow away (node 2 with node 3) does not cross node 0's port"),
        "{err}"
    );
    assert!(!err.contains("flow near"), "{err}");
    // Without a capture there is nothing to say.
    let (code, _, err) = rnic(&["run", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("node 0's port"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--pcap-node N` captures node N's port instead of node 0's (a flow between two clients on
/// a fabric is otherwise out of reach): the capture holds that flow's frames and no other's,
/// the note names the flow left out, and `[output] pcap_node` does the same. A node the
/// network lacks, or a node without a capture file, is refused before anything runs.
#[test]
fn pcap_node_captures_another_nodes_port() {
    let dir = std::env::temp_dir().join(format!("rnic-flows-pcap-node-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let flows = "[set]\nnet.clients = 3\n\
         [[flow]]\nname = \"near\"\ntest = \"write-bw\"\nsize = 1024\niters = 20\nclients = [1]\n\
         [[flow]]\nname = \"away\"\ntest = \"write-bw\"\nsize = 1024\niters = 20\nserver = 2\n\
         clients = [3]\n";
    let file = dir.join("away.toml");
    std::fs::write(&file, flows).unwrap();
    let (file, pcap) = (file.to_str().unwrap(), dir.join("node2.pcap"));
    let (code, err) = run_capturing(file, &pcap, "2");
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("flow near (node 0 with node 1) does not cross node 2's port"),
        "{err}"
    );
    assert!(!err.contains("flow away"), "{err}");
    // Node i is 10.0.0.(i + 1): the capture has nodes 2 and 3, not nodes 0 and 1.
    let (code, text, err) = rnic(&["pcap", "check", pcap.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        text.contains("10.0.0.3") && text.contains("10.0.0.4"),
        "{text}"
    );
    assert!(
        !text.contains("10.0.0.1 ") && !text.contains("10.0.0.2 "),
        "{text}"
    );

    // The scenario's [output] says the same.
    let in_file = dir.join("in-file.toml");
    let from_file = dir.join("from-file.pcap");
    std::fs::write(
        &in_file,
        format!("{flows}[output]\npcap = {from_file:?}\npcap_node = 2\n"),
    )
    .unwrap();
    let (code, _, err) = rnic(&["run", in_file.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        std::fs::read(&from_file).unwrap(),
        std::fs::read(&pcap).unwrap()
    );

    // Refused: a node the network lacks (no file made), and a node without a file.
    let missing = dir.join("missing.pcap");
    let (code, err) = run_capturing(file, &missing, "4");
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--pcap-node (output.pcap_node) = 4: the network has nodes 0 to 3"),
        "{err}"
    );
    assert!(!err.contains("note"), "{err}");
    assert!(!missing.exists());
    let (code, _, err) = rnic(&["run", file, "--pcap-node", "2"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("without a capture: give the file with --pcap FILE"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `rnic run FILE --pcap PCAP --pcap-node NODE`: its exit status and standard error.
fn run_capturing(file: &str, pcap: &std::path::Path, node: &str) -> (i32, String) {
    let args = [
        "run",
        file,
        "--pcap",
        pcap.to_str().unwrap(),
        "--pcap-node",
        node,
    ];
    let (code, _, err) = rnic(&args);
    (code, err)
}

/// A workload's hundreds of flows are counted in one note, not listed one a line.
#[test]
fn many_uncaptured_flows_are_one_note() {
    let dir = std::env::temp_dir().join(format!("rnic-flows-pcap-many-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut src = String::from("[set]\nnet.clients = 3\n");
    for i in 0..10 {
        src += &format!(
            "[[flow]]\nname = \"f{i}\"\ntest = \"write-bw\"\nsize = 64\niters = 5\nserver = 2\nclients = [3]\n"
        );
    }
    let file = dir.join("many.toml");
    std::fs::write(&file, src).unwrap();
    // Node 0 named is node 0 by default.
    let (code, err) = run_capturing(file.to_str().unwrap(), &dir.join("many.pcap"), "0");
    assert_eq!(code, 0, "{err}");
    let notes: Vec<&str> = err.lines().filter(|l| l.contains("note")).collect();
    assert_eq!(notes.len(), 1, "{err}");
    assert!(
        notes[0].contains("10 of 10 flows (f0, f1, f2, ...) do not cross node 0's port"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A run of flows over UD says what it lost, as `rnic perf` does: the line on standard
/// error and `unreliable` in the JSON, and its verified bytes are what arrived.
#[test]
fn an_unreliable_run_of_flows_says_what_it_lost() {
    let dir = std::env::temp_dir().join(format!("rnic-flows-ud-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("ud.toml");
    std::fs::write(
        &file,
        "[set]\nqp.transport = \"ud\"\nnet.impair.loss = 0.1\n\
         [[flow]]\ntest = \"send-bw\"\nsize = 1024\nqp = 2\niters = 500\n",
    )
    .unwrap();
    let (code, out, err) = rnic(&["run", file.to_str().unwrap(), "--json", "-"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("rnic: UD: 1000 messages sent, "), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let u = &v["unreliable"];
    let (sent, received) = (
        u["messages_sent"].as_u64().unwrap(),
        u["messages_received"].as_u64().unwrap(),
    );
    assert_eq!(sent, 1000, "{u}");
    assert!(received < sent, "{u}");
    assert_eq!(u["messages_lost"].as_u64().unwrap(), sent - received);
    assert_eq!(
        v["total"]["verified_bytes"].as_u64().unwrap(),
        received * 1024
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The total counts the operations the flows completed: a UC ping-pong iteration given up
/// (its ping or pong lost) completed nothing and moved no message whole, so it is in neither
/// the flow's row nor the total (the total counted every iteration: 300 operations where the
/// rows held 200 + 57).
#[test]
fn the_total_of_unreliable_flows_leaves_out_given_up_iterations() {
    let dir = std::env::temp_dir().join(format!("rnic-flows-uc-total-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("uc.toml");
    std::fs::write(
        &file,
        "[set]\nnet.clients = 2\nqp.transport = \"uc\"\nnet.impair.loss = 0.2\nqp.timeout = 4\n\
         [[flow]]\nname = \"w\"\ntest = \"write-bw\"\nsize = 8192\niters = 200\nclients = [1]\n\
         [[flow]]\nname = \"s\"\ntest = \"send-lat\"\nsize = 64\niters = 100\nclients = [2]\n",
    )
    .unwrap();
    let (code, out, err) = rnic(&["run", file.to_str().unwrap(), "--json", "-"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let given_up = v["unreliable"]["iterations_given_up"].as_u64().unwrap();
    assert!(given_up > 0, "{}", v["unreliable"]);
    let flows = v["flows"].as_array().unwrap();
    let ops: Vec<u64> = flows
        .iter()
        .map(|f| f["ops_completed"].as_u64().unwrap())
        .collect();
    assert_eq!(ops, [200, 100 - given_up], "{flows:?}");
    let total = &v["total"];
    assert_eq!(
        total["ops_completed"].as_u64().unwrap(),
        ops.iter().sum::<u64>(),
        "{total}"
    );
    // Payload over the span: the WRITEs' and the completed iterations' (one way each).
    let bits = ((200 * 8192 + ops[1] * 64) * 8) as f64;
    let gbps = bits / (total["measured_us"].as_f64().unwrap() * 1e3);
    let got = total["goodput_gbps"].as_f64().unwrap();
    assert!(
        (got - gbps).abs() <= 1e-9 * gbps,
        "{got} vs {gbps}: {total}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A flow's row against `rnic perf`'s JSON of the same run: every figure the two share.
fn assert_flow_is_the_perf_run(flow: &serde_json::Value, perf: &serde_json::Value) {
    for (a, b) in [
        ("ops_completed", "ops_completed"),
        ("measured_us", "simulated_time_us"),
        ("msg_rate_mops", "msg_rate_mops"),
        ("goodput_gbps", "goodput_gbps"),
        ("latency_us", "latency_us"),
        ("verified_bytes", "verified_bytes"),
        ("retransmissions", "retransmissions"),
    ] {
        assert_eq!(flow[a], perf[b], "{a}");
    }
}
