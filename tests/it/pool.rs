//! A pool of OpenAI-compatible endpoints (stand-in servers on 127.0.0.1 with a modelled
//! delay): every endpoint stays within its concurrency, the player's requests go first, work
//! moves off an endpoint that fails or slows and back when it recovers, and a resident's
//! requests stay on one endpoint while it has room.

use bevy::prelude::Entity;
use simulacra::bench::serve::standin::{StandIn, ThroughputModel};
use simulacra::llm::backend::{EndpointStatus, WorkKind};
use simulacra::llm::config::{BackendConfig, LlmConfig, OpenAiConfig};
use simulacra::llm::runtime::{LlmRuntime, Reply, ReplySource, Submission};
use simulacra::llm::{ChatMessage, OutputShape, Priority, Sampling};
use std::sync::atomic::Ordering;
use std::time::Duration;

fn model(seconds: f32, batch: usize) -> ThroughputModel {
    ThroughputModel {
        tokens_per_s: 1000.0,
        batch,
        ttft_s: seconds,
        prefix_cache: 0,
    }
}

fn pool(servers: &[&StandIn], concurrency: u32, affinity: bool) -> LlmRuntime {
    let cfg = LlmConfig {
        backends: vec![BackendConfig::OpenAi(OpenAiConfig {
            name: "pool".into(),
            endpoints: servers.iter().map(|s| s.url.clone()).collect(),
            model: "stand-in".into(),
            concurrency,
            affinity,
            ..Default::default()
        })],
        embedding_backend: None,
        cache: false,
        timeout_s: 10.0,
        backoff_ms: 20,
        probe_after_s: 0.3,
        ..Default::default()
    };
    LlmRuntime::start(&cfg)
}

/// Submits a shaped request (the prompt names the resident) and returns its id.
fn ask(rt: &LlmRuntime, resident: u32, priority: Priority) -> u64 {
    let id = rt.next_id();
    rt.submit(Submission {
        id,
        agent: Entity::from_raw_u32(resident + 1),
        purpose: "importance".into(),
        kind: std::sync::Arc::new(WorkKind::Chat {
            messages: vec![ChatMessage::user(format!(
                "resident {resident}: how poignant is request {id}?"
            ))],
            shape: OutputShape::Integer { min: 1, max: 10 },
            sampling: Sampling::default(),
        }),
        priority,
        fallback: None,
    });
    id
}

fn replies(rt: &LlmRuntime, n: usize) -> Vec<Reply> {
    (0..n)
        .map(|_| {
            rt.recv_timeout(Duration::from_secs(30))
                .expect("every request gets a reply")
        })
        .collect()
}

fn endpoints(rt: &LlmRuntime) -> Vec<EndpointStatus> {
    rt.status.lock().unwrap().backends[0].endpoints.clone()
}

#[test]
fn pool_every_endpoint_stays_within_its_concurrency_and_all_share_the_work() {
    let servers: Vec<StandIn> = (0..3)
        .map(|_| StandIn::start(model(0.05, 64)).unwrap())
        .collect();
    let rt = pool(&servers.iter().collect::<Vec<_>>(), 2, false);
    for i in 0..60 {
        ask(&rt, i, Priority::Normal);
    }
    let got = replies(&rt, 60);
    assert!(
        got.iter()
            .all(|r| matches!(r.source, ReplySource::Model(_)))
    );
    for s in &servers {
        let peak = s.state.peak_open.load(Ordering::SeqCst);
        let answered = s.state.answered.load(Ordering::SeqCst);
        assert!(
            peak <= 2,
            "an endpoint had {peak} requests open at once, over its 2"
        );
        assert_eq!(peak, 2, "every endpoint was used to its limit");
        assert!(
            answered >= 12,
            "each of 3 endpoints takes a share: {answered} of 60"
        );
    }
}

#[test]
fn pool_the_players_request_goes_ahead_of_background_work() {
    let server = StandIn::start(model(0.05, 64)).unwrap();
    let rt = pool(&[&server], 1, false);
    for i in 0..12 {
        ask(&rt, i, Priority::Background);
    }
    std::thread::sleep(Duration::from_millis(20));
    let player = ask(&rt, 99, Priority::Interactive);
    let order: Vec<u64> = replies(&rt, 13).iter().map(|r| r.id).collect();
    let at = order.iter().position(|id| *id == player).unwrap();
    assert!(
        at <= 2,
        "the player's request was answered {at}th of 13 (only what had already started may go first)"
    );
}

#[test]
fn pool_work_moves_off_a_failing_endpoint_and_back_when_it_recovers() {
    let (a, b) = (
        StandIn::start(model(0.01, 64)).unwrap(),
        StandIn::start(model(0.01, 64)).unwrap(),
    );
    let rt = pool(&[&a, &b], 4, false);
    b.state.failing.store(true, Ordering::SeqCst);
    for i in 0..40 {
        ask(&rt, i, Priority::Normal);
    }
    let got = replies(&rt, 40);
    let fell_back = got.iter().filter(|r| r.is_fallback()).count();
    assert_eq!(fell_back, 0, "retries went to the endpoint that answers");
    let st = endpoints(&rt);
    assert!(!st[1].up, "the failing endpoint rests: {st:?}");
    assert_eq!(b.state.answered.load(Ordering::SeqCst), 0);
    // It recovers: after its rest a probe goes through and it takes its share again.
    b.state.failing.store(false, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(400));
    // Rounds of 20 until it has taken 20 (on a loaded machine its first answers after the rest
    // may be slow enough that it sheds for a while), at most 12.
    let mut rounds = 0;
    while rounds < 12 && b.state.answered.load(Ordering::SeqCst) < 20 {
        for i in 0..20 {
            ask(&rt, 100 * rounds + i, Priority::Normal);
        }
        replies(&rt, 20);
        rounds += 1;
    }
    let back = b.state.answered.load(Ordering::SeqCst);
    assert!(
        back >= 20,
        "the recovered endpoint took {back} of {}",
        20 * rounds
    );
    assert!(endpoints(&rt)[1].up);
}

#[test]
fn pool_a_slow_endpoint_sheds_its_share_and_takes_it_back_when_fast_again() {
    let (a, b) = (
        StandIn::start(model(0.02, 64)).unwrap(),
        StandIn::start(model(0.02, 64)).unwrap(),
    );
    let rt = pool(&[&a, &b], 8, false);
    b.state.slowness.store(1000, Ordering::SeqCst); // ten times slower
    let run = |from: u32| {
        for i in 0..64 {
            ask(&rt, from + i, Priority::Normal);
        }
        replies(&rt, 64);
    };
    run(0);
    run(100);
    let st = endpoints(&rt);
    assert_eq!(
        st[1].limit, 2,
        "the slow endpoint is given a quarter: {st:?}"
    );
    let (fast, slow) = (
        a.state.answered.load(Ordering::SeqCst),
        b.state.answered.load(Ordering::SeqCst),
    );
    assert!(
        fast > 3 * slow,
        "the fast endpoint took {fast}, the slow one {slow}"
    );
    b.state.slowness.store(100, Ordering::SeqCst);
    for k in 0..6 {
        run(1000 + 100 * k);
    }
    let st = endpoints(&rt);
    assert_eq!(st[1].limit, 8, "fast again, it has its full share: {st:?}");
}

#[test]
fn pool_a_resident_stays_on_one_endpoint_while_it_has_room() {
    let servers: Vec<StandIn> = (0..4)
        .map(|_| {
            let s = StandIn::start(model(0.01, 64)).unwrap();
            s.state.keep_prompts.store(true, Ordering::SeqCst);
            s
        })
        .collect();
    let rt = pool(&servers.iter().collect::<Vec<_>>(), 16, true);
    // Twelve residents, five requests each, a few at a time: there is always room.
    for _ in 0..5 {
        for r in 0..12 {
            ask(&rt, r, Priority::Normal);
        }
        replies(&rt, 12);
    }
    let mut homes = std::collections::BTreeMap::<u32, std::collections::BTreeSet<usize>>::new();
    for (i, s) in servers.iter().enumerate() {
        for p in s.state.prompts.lock().unwrap().iter() {
            let at = p.find("resident ").unwrap() + "resident ".len();
            let r: u32 = p[at..at + p[at..].find(':').unwrap()].parse().unwrap();
            homes.entry(r).or_default().insert(i);
        }
    }
    assert_eq!(homes.len(), 12);
    for (r, eps) in &homes {
        assert_eq!(eps.len(), 1, "resident {r} went to endpoints {eps:?}");
    }
    let used: std::collections::BTreeSet<usize> = homes.values().flatten().copied().collect();
    assert!(
        used.len() >= 3,
        "residents spread over the endpoints: {used:?}"
    );
    let st = endpoints(&rt);
    assert_eq!(st.iter().map(|e| e.affinity_hits).sum::<u64>(), 60);
    assert_eq!(st.iter().map(|e| e.affinity_misses).sum::<u64>(), 0);
}
