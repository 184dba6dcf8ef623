//! Starvation: two clients loop a ~16 KB gzip body that inflates to a 16 MiB JSON echo
//! (an 8.4M-element array), which kept both async workers of a 2-core machine busy
//! parsing. A bystander's pings must all be answered meanwhile, and the server's peak
//! RSS stay bounded. Latency is not asserted (the machine is noisy): see
//! benches/hostile_latency.sh for the figures.

use crate::common::hostile::*;
use crate::common::*;
use std::time::Duration;

/// Echos each attacker sends (bounded attack).
const ROUNDS: usize = 4;

/// Peak RSS bound with two 16 MiB echos at a time: twice the one-echo bound of
/// tests/hostile/memory.rs (768 MiB). The unfixed server peaked at 1.24 GB for one and
/// ~2 GiB for two (release); at ed5c801 two take ~870 MiB (debug), 1,040-1,310 MiB
/// (release, where the two overlap more).
const TWO_ECHOS_PEAK_MIB: u64 = 1536;

#[test]
fn bystander_is_answered_while_two_clients_loop_16_mib_gzip_echos() {
    let mut srv = Server::start_limited(&[]);
    let req = echo_ones_request(16 * MIB - 64, 1);
    let body = std::sync::Arc::new(gzip(&req));
    eprintln!(
        "attack body: {} bytes of gzip, {} inflated",
        body.len(),
        req.len()
    );
    let want_len = req.len() - 64;
    drop(req);

    let bystander = Bystander::start(ping_http, srv.addr, Duration::from_millis(100), 2000);
    let attackers: Vec<_> = (0..2)
        .map(|_| {
            let (addr, body) = (srv.addr, body.clone());
            std::thread::spawn(move || -> Result<usize, String> {
                for round in 0..ROUNDS {
                    let r = post_within(
                        addr,
                        &[JSON, GZIP],
                        &body,
                        20 * MIB,
                        Duration::from_secs(60),
                    )
                    .map_err(|e| format!("round {round}: {e}"))?;
                    if r.status != 200 || r.body.len() < want_len {
                        return Err(format!(
                            "round {round}: {} {}",
                            r.status,
                            excerpt(&r.body, 200)
                        ));
                    }
                }
                Ok(ROUNDS)
            })
        })
        .collect();
    let results: Vec<_> = attackers.into_iter().map(|h| join(h, "attacker")).collect();
    let seen = bystander.finish();
    assert_alive(&mut srv, "two looping 16 MiB echos");
    let mut lat = seen.latencies.clone();
    lat.sort();
    if !lat.is_empty() {
        eprintln!(
            "bystander ping latency (debug build, not asserted): p50 {:?}, max {:?}, {} pings",
            lat[lat.len() / 2],
            lat[lat.len() - 1],
            lat.len()
        );
    }
    assert_all_answered(&seen, 5, "bystander while two clients loop 16 MiB echos");
    for (i, r) in results.iter().enumerate() {
        assert!(
            r.is_ok(),
            "attacker {i} (its echos should be answered too): {}",
            r.as_ref().unwrap_err()
        );
    }
    assert_peak_rss(
        &mut srv,
        TWO_ECHOS_PEAK_MIB,
        "two clients looping 16 MiB echos",
    );
}

/// One client (127.0.0.2) parks requests larger than the whole process budget
/// (`max_total_in_flight_bytes`, 32 MiB) in `sleep` calls: three raw-TCP connections,
/// each one 12 MiB batch `[sleep(20000), echo("xxx...")]`. The budget exists to bound
/// memory; it must not become a switch one client can flip to stall everyone else's
/// small calls for as long as its own calls run. A bystander from 127.0.0.1 pings over
/// raw TCP and HTTP meanwhile; every ping must be answered.
#[test]
fn a_client_spending_the_process_budget_does_not_stall_other_clients() {
    let mut srv = Server::start_limited(&[]);
    let attacker = std::net::IpAddr::from([127, 0, 0, 2]);
    let big = "x".repeat(12 * MIB);
    let frame = format!(
        "[{{\"jsonrpc\":\"2.0\",\"method\":\"sleep\",\"params\":[20000],\"id\":\"s\"}},{{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[\"{big}\"],\"id\":\"e\"}}]\n"
    );
    drop(big);
    let mut held = Vec::new();
    for i in 0..3 {
        let s = dial_from(attacker, srv.addr, ANSWER_TIMEOUT)
            .unwrap_or_else(|e| panic!("attacker connection {i}: {e}"));
        let mut l = Lines::over(s);
        l.send(frame.as_bytes())
            .unwrap_or_else(|e| panic!("attacker frame {i}: {e}"));
        held.push(l);
    }
    drop(frame);
    // Let the server read and start all three (36 MiB held for 20 s).
    std::thread::sleep(Duration::from_secs(2));
    let tcp = Bystander::start(ping_tcp, srv.addr, Duration::from_millis(200), 15);
    let http = Bystander::start(ping_http, srv.addr, Duration::from_millis(200), 15);
    let (tcp, http) = (
        tcp.finish_after(Duration::from_secs(8)),
        http.finish_after(Duration::from_secs(8)),
    );
    assert_alive(&mut srv, "budget held by one client");
    drop(held);
    eprintln!(
        "HTTP bystander: {} answered, {} failed; raw TCP: {} answered, {} failed",
        http.ok,
        http.failed.len(),
        tcp.ok,
        tcp.failed.len()
    );
    assert_all_answered(
        &tcp,
        3,
        "raw-TCP bystander while another client holds the budget",
    );
    assert_all_answered(
        &http,
        3,
        "HTTP bystander while another client holds the budget",
    );
}
