//! The OpenAI-compatible backend against a fake server on 127.0.0.1: a normal reply, HTTP 500s,
//! a hang past the timeout, malformed JSON, and an endpoint going down and coming back. The
//! caller always gets its reply or its fail-safe; nothing panics.

use simulacra::llm::backend::{Health, WorkKind};
use simulacra::llm::config::{BackendConfig, LlmConfig, OpenAiConfig};
use simulacra::llm::runtime::{LlmRuntime, Reply, ReplySource, Submission};
use simulacra::llm::{ChatMessage, LlmValue, OutputShape, Priority, Sampling};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU32, Ordering};
use std::time::{Duration, Instant};

const OK: u8 = 0;
const FAIL_500: u8 = 1;
const HANG: u8 = 2;
const MALFORMED: u8 = 3;
const REFUSE: u8 = 4;

/// A fake OpenAI-compatible server whose behaviour the test switches.
struct FakeServer {
    url: String,
    mode: Arc<AtomicU8>,
    hits: Arc<AtomicU32>,
    last_body: Arc<std::sync::Mutex<String>>,
}

impl FakeServer {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let mode = Arc::new(AtomicU8::new(OK));
        let hits = Arc::new(AtomicU32::new(0));
        let last_body = Arc::new(std::sync::Mutex::new(String::new()));
        let (m, h, lb) = (mode.clone(), hits.clone(), last_body.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().take(500) {
                let Ok(stream) = stream else { continue };
                let (m, h, lb) = (m.clone(), h.clone(), lb.clone());
                std::thread::spawn(move || serve(stream, &m, &h, &lb));
            }
        });
        Self {
            url,
            mode,
            hits,
            last_body,
        }
    }
    fn set(&self, mode: u8) {
        self.mode.store(mode, Ordering::SeqCst);
    }
}

fn serve(
    mut stream: TcpStream,
    mode: &AtomicU8,
    hits: &AtomicU32,
    last_body: &std::sync::Mutex<String>,
) {
    let mode = mode.load(Ordering::SeqCst);
    if mode == REFUSE {
        return; // close at once: the client sees a broken connection
    }
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut len = 0usize;
    let mut path = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        if path.is_empty() {
            path = line
                .split_whitespace()
                .nth(1)
                .unwrap_or_default()
                .to_string();
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().unwrap_or(0);
        }
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0u8; len];
    let _ = reader.read_exact(&mut body);
    hits.fetch_add(1, Ordering::SeqCst);
    *last_body.lock().unwrap() = String::from_utf8_lossy(&body).to_string();
    let (status, payload) = match mode {
        FAIL_500 => (
            "500 Internal Server Error",
            "{\"error\":\"boom\"}".to_string(),
        ),
        HANG => {
            std::thread::sleep(Duration::from_secs(3));
            ("200 OK", String::new())
        }
        MALFORMED => ("200 OK", "{\"choices\": [ this is not json".to_string()),
        _ if path.ends_with("/embeddings") => (
            "200 OK",
            "{\"data\":[{\"embedding\":[3.0,4.0]}],\"usage\":{\"prompt_tokens\":2}}".to_string(),
        ),
        _ => {
            // Answer the schema's wrapped form, as a server enforcing it would.
            let content = if String::from_utf8_lossy(&body).contains("json_schema") {
                "{\"value\": 7}"
            } else {
                "7"
            };
            ("200 OK", serde_json::json!({"choices":[{"message":{"role":"assistant","content":content}}],"usage":{"prompt_tokens":12,"completion_tokens":3}}).to_string())
        }
    };
    let resp = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{payload}",
        payload.len()
    );
    let _ = stream.write_all(resp.as_bytes());
}

fn config(urls: Vec<String>) -> LlmConfig {
    LlmConfig {
        backends: vec![BackendConfig::OpenAi(OpenAiConfig {
            name: "fake".into(),
            endpoints: urls,
            model: "test".into(),
            concurrency: 4,
            ..Default::default()
        })],
        timeout_s: 0.5,
        retries: 2,
        backoff_ms: 20,
        down_after: 3,
        probe_after_s: 0.3,
        cache: false,
        ..Default::default()
    }
}

fn importance(rt: &LlmRuntime) -> Reply {
    let id = rt.next_id();
    rt.submit(Submission {
        id,
        agent: None,
        purpose: "importance".into(),
        kind: WorkKind::Chat {
            messages: vec![ChatMessage::user("How poignant? ")],
            shape: OutputShape::Integer { min: 1, max: 10 },
            sampling: Sampling::default(),
        },
        priority: Priority::Normal,
        fallback: Some(LlmValue::Integer(4)),
    });
    let r = rt
        .recv_timeout(Duration::from_secs(20))
        .expect("every request gets a reply or its fail-safe");
    assert_eq!(r.id, id);
    r
}

#[test]
fn normal_reply_with_a_json_schema() {
    let server = FakeServer::start();
    let rt = LlmRuntime::start(&config(vec![server.url.clone()]));
    let r = importance(&rt);
    assert_eq!(r.value, LlmValue::Integer(7));
    assert_eq!(r.source, ReplySource::Model("fake".into()));
    let body = server.last_body.lock().unwrap().clone();
    assert!(
        body.contains("\"response_format\"") && body.contains("\"maximum\":10"),
        "{body}"
    );
    let st = rt.stats.lock().unwrap().by_purpose["importance"].clone();
    assert_eq!((st.prompt_tokens, st.gen_tokens), (12, 3));
    // Embeddings come back normalised, with the model recorded.
    let id = rt.next_id();
    rt.submit(Submission {
        id,
        agent: None,
        purpose: "embed".into(),
        kind: WorkKind::Embed {
            text: "hello".into(),
        },
        priority: Priority::Normal,
        fallback: None,
    });
    let r = rt.recv_timeout(Duration::from_secs(5)).unwrap();
    let LlmValue::Embedding(e) = r.value else {
        panic!()
    };
    assert_eq!(e.vector, vec![0.6, 0.8]);
    assert_eq!(e.model, "openai:test");
}

#[test]
fn http_500s_are_retried_then_answered_with_the_fail_safe() {
    let server = FakeServer::start();
    server.set(FAIL_500);
    let rt = LlmRuntime::start(&config(vec![server.url.clone()]));
    let r = importance(&rt);
    assert_eq!(r.value, LlmValue::Integer(4));
    assert!(
        matches!(r.source, ReplySource::Fallback(ref why) if why.contains("500")),
        "{:?}",
        r.source
    );
    assert_eq!(
        server.hits.load(Ordering::SeqCst),
        3,
        "one try and two retries"
    );
    let st = rt.stats.lock().unwrap().by_purpose["importance"].clone();
    assert_eq!((st.failures, st.retries, st.fallbacks), (3, 2, 1));
}

#[test]
fn a_hang_past_the_timeout_falls_back() {
    let server = FakeServer::start();
    server.set(HANG);
    let rt = LlmRuntime::start(&LlmConfig {
        retries: 0,
        ..config(vec![server.url.clone()])
    });
    let t = Instant::now();
    let r = importance(&rt);
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "the timeout (0.5 s) must cut the hang (3 s): {:?}",
        t.elapsed()
    );
    assert!(
        matches!(r.source, ReplySource::Fallback(ref why) if why.contains("no answer")),
        "{:?}",
        r.source
    );
}

#[test]
fn malformed_json_is_retried_then_falls_back() {
    let server = FakeServer::start();
    server.set(MALFORMED);
    let rt = LlmRuntime::start(&config(vec![server.url.clone()]));
    let r = importance(&rt);
    assert!(
        matches!(r.source, ReplySource::Fallback(ref why) if why.contains("not JSON")),
        "{:?}",
        r.source
    );
    // The server recovers; after its rest (0.3 s) the endpoint is probed and answers normally.
    server.set(OK);
    std::thread::sleep(Duration::from_millis(400));
    let r = importance(&rt);
    assert_eq!(r.value, LlmValue::Integer(7));
}

#[test]
fn an_endpoint_goes_down_and_comes_back() {
    let server = FakeServer::start();
    let rt = LlmRuntime::start(&config(vec![server.url.clone()]));
    assert_eq!(importance(&rt).value, LlmValue::Integer(7));
    server.set(REFUSE);
    // Three failures mark it down; after that requests fall back without waiting.
    let r = importance(&rt);
    assert!(r.is_fallback());
    let t = Instant::now();
    let r = importance(&rt);
    assert!(r.is_fallback());
    assert!(
        t.elapsed() < Duration::from_millis(900),
        "a down endpoint must not make callers wait: {:?}",
        t.elapsed()
    );
    let health = |rt: &LlmRuntime| rt.status.lock().unwrap().backends[0].health;
    assert_eq!(health(&rt), Health::Down);
    // It comes back: after the rest (0.3 s) a probe succeeds and it is up again.
    server.set(OK);
    std::thread::sleep(Duration::from_millis(400));
    let r = importance(&rt);
    assert_eq!(r.source, ReplySource::Model("fake".into()));
    std::thread::sleep(Duration::from_millis(250));
    assert_eq!(health(&rt), Health::Ok);
}

#[test]
fn requests_spread_over_several_endpoints_and_survive_one_failing() {
    let a = FakeServer::start();
    let b = FakeServer::start();
    b.set(FAIL_500);
    let rt = LlmRuntime::start(&config(vec![a.url.clone(), b.url.clone()]));
    for _ in 0..8 {
        let r = importance(&rt);
        assert_eq!(r.value, LlmValue::Integer(7), "{:?}", r.source);
    }
    assert!(a.hits.load(Ordering::SeqCst) >= 5);
    assert!(
        b.hits.load(Ordering::SeqCst) >= 1,
        "the second endpoint was tried"
    );
    b.set(OK);
    std::thread::sleep(Duration::from_millis(400));
    for _ in 0..6 {
        importance(&rt);
    }
    assert!(
        b.hits.load(Ordering::SeqCst) >= 4,
        "the recovered endpoint takes work again"
    );
}
