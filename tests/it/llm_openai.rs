//! The OpenAI-compatible backend against a fake server on 127.0.0.1: a normal reply, HTTP 500s,
//! a hang past the timeout, malformed JSON, and an endpoint going down and coming back. The
//! caller always gets its reply or its fail-safe; nothing panics.

use simulacra::bench::serve::http::{HttpServer, Options};
use simulacra::llm::backend::{Health, WorkKind};
use simulacra::llm::config::{BackendConfig, LlmConfig};
use simulacra::llm::runtime::{LlmRuntime, Reply, ReplySource, Submission};
use simulacra::llm::{ChatMessage, LlmValue, OutputShape, Priority, Sampling};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
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
    server: ScriptedServer,
}

impl FakeServer {
    fn start() -> Self {
        let mode = Arc::new(AtomicU8::new(OK));
        let m = mode.clone();
        let server = ScriptedServer::start_raw(move |path, body| {
            Some(match m.load(Ordering::SeqCst) {
                REFUSE => return None,
                FAIL_500 => (500, "{\"error\":\"boom\"}".to_string()),
                HANG => {
                    std::thread::sleep(Duration::from_secs(3));
                    (200, String::new())
                }
                MALFORMED => (200, "{\"choices\": [ this is not json".to_string()),
                _ if path.ends_with("/embeddings") => (
                    200,
                    "{\"data\":[{\"embedding\":[3.0,4.0]}],\"usage\":{\"prompt_tokens\":2}}"
                        .to_string(),
                ),
                // Answer the schema's wrapped form, as a server enforcing it would.
                _ => {
                    let content = if body.contains("json_schema") {
                        "{\"value\": 7}"
                    } else {
                        "7"
                    };
                    (200, serde_json::json!({"choices":[{"message":{"role":"assistant","content":content}}],"usage":{"prompt_tokens":12,"completion_tokens":3}}).to_string())
                }
            })
        });
        Self {
            url: server.url.clone(),
            mode,
            server,
        }
    }
    fn set(&self, mode: u8) {
        self.mode.store(mode, Ordering::SeqCst);
    }
    /// Requests answered (or hung up on).
    fn hits(&self) -> usize {
        self.server.requests.lock().unwrap().len()
    }
    fn last_body(&self) -> String {
        let r = self.server.requests.lock().unwrap();
        r.last().map(|(_, b)| b.clone()).unwrap_or_default()
    }
}

/// Fast rests and timeouts for the fake servers above.
fn config(urls: Vec<String>) -> LlmConfig {
    let mut cfg = server_config(&urls[0]);
    if let BackendConfig::OpenAi(o) = &mut cfg.backends[0] {
        o.endpoints = urls;
    }
    LlmConfig {
        timeout_s: 0.5,
        backoff_ms: 20,
        probe_after_s: 0.3,
        ..cfg
    }
}

fn importance(rt: &LlmRuntime) -> Reply {
    let id = rt.next_id();
    rt.submit(Submission {
        id,
        agent: None,
        purpose: "importance".into(),
        kind: std::sync::Arc::new(WorkKind::Chat {
            messages: vec![ChatMessage::user("How poignant? ")],
            shape: OutputShape::Integer { min: 1, max: 10 },
            sampling: Sampling::default(),
        }),
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
    let body = server.last_body();
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
        kind: std::sync::Arc::new(WorkKind::Embed {
            text: "hello".into(),
        }),
        priority: Priority::Normal,
        fallback: None,
    });
    let r = rt.recv_timeout(Duration::from_secs(5)).unwrap();
    let LlmValue::Embedding(e) = r.value else {
        panic!()
    };
    assert_eq!(*e.vector, [0.6, 0.8]);
    assert_eq!(&*e.model, "openai:test");
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
    assert_eq!(server.hits(), 3, "one try and two retries");
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
    assert!(a.hits() >= 5);
    assert!(b.hits() >= 1, "the second endpoint was tried");
    b.set(OK);
    std::thread::sleep(Duration::from_millis(400));
    for _ in 0..6 {
        importance(&rt);
    }
    assert!(b.hits() >= 4, "the recovered endpoint takes work again");
}

/// A fake server whose answers a closure writes from the path and body; it keeps every request.
/// It is the program's own server for stand-ins (`simulacra::bench::serve::http`), each answer
/// closing its connection.
struct ScriptedServer {
    url: String,
    requests: Arc<std::sync::Mutex<Vec<(String, String)>>>,
    _server: HttpServer,
}

impl ScriptedServer {
    fn start(handler: impl Fn(&str, &str) -> (u16, String) + Send + Sync + 'static) -> Self {
        Self::start_raw(move |path, body| Some(handler(path, body)))
    }
    /// `None` from the handler hangs up without an answer.
    fn start_raw(
        handler: impl Fn(&str, &str) -> Option<(u16, String)> + Send + Sync + 'static,
    ) -> Self {
        let requests = Arc::new(std::sync::Mutex::new(Vec::new()));
        let reqs = requests.clone();
        let server = HttpServer::start(
            Arc::new(move |path: &str, body: &[u8]| {
                let body = String::from_utf8_lossy(body).to_string();
                reqs.lock().unwrap().push((path.to_string(), body.clone()));
                handler(path, &body)
            }),
            Options::default(),
        )
        .unwrap();
        Self {
            url: server.url(false),
            requests,
            _server: server,
        }
    }
    /// Requests whose path ends so.
    fn hits(&self, path_end: &str) -> Vec<String> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .filter(|(p, _)| p.ends_with(path_end))
            .map(|(_, b)| b.clone())
            .collect()
    }
}

fn chat_answer(content: &str) -> (u16, String) {
    (
        200,
        serde_json::json!({"choices":[{"message":{"role":"assistant","content":content},"finish_reason":"stop"}],
            "usage":{"prompt_tokens":10,"completion_tokens":2}})
        .to_string(),
    )
}

/// What llama-cpp-python 0.3.36 answers `response_format: {"type": "json_schema"}` with.
const LLAMA_CPP_PYTHON_500: &str = r#"{"error":{"message":"1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', 'ctx': {'expected': \"'text' or 'json_object'\"}}\n\n  File \"llama_cpp/server/app.py\", line 376, in create_chat_completion\n    POST /v1/chat/completions","type":"internal_server_error","param":null,"code":null}}"#;

/// A server like llama-cpp-python's: `json_schema` refused with HTTP 500, a GBNF `grammar`
/// honoured, embeddings one vector per token.
fn like_llama_cpp_python() -> ScriptedServer {
    ScriptedServer::start(|path, body| {
        if path.ends_with("/embeddings") {
            return (200, r#"{"object":"list","data":[{"object":"embedding","index":0,"embedding":[[1.0,4.0],[5.0,4.0]]}],"usage":{"prompt_tokens":2,"total_tokens":2}}"#.into());
        }
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        if v["response_format"]["type"] == "json_schema" {
            return (500, LLAMA_CPP_PYTHON_500.into());
        }
        if let Some(g) = v["grammar"].as_str() {
            return chat_answer(if g.contains("\"yes\"") { "yes" } else { "7" });
        }
        chat_answer("Seven, I think, or maybe eight.")
    })
}

/// The benchmark's configuration for one server (an `OpenAi` backend with default settings,
/// cache off), named and timed for these tests.
fn server_config(url: &str) -> LlmConfig {
    let mut cfg = simulacra::bench::server::server_config(url);
    if let BackendConfig::OpenAi(o) = &mut cfg.backends[0] {
        o.name = "fake".into();
        o.model = "test".into();
        o.concurrency = 4;
    }
    LlmConfig {
        timeout_s: 2.0,
        retries: 2,
        backoff_ms: 10,
        down_after: 3,
        probe_after_s: 30.0,
        ..cfg
    }
}

fn ask(rt: &LlmRuntime, shape: OutputShape) -> Reply {
    let id = rt.next_id();
    rt.submit(Submission {
        id,
        agent: None,
        purpose: "test".into(),
        kind: std::sync::Arc::new(WorkKind::Chat {
            messages: vec![ChatMessage::user("How poignant, 1 to 10?")],
            shape,
            sampling: Sampling::default(),
        }),
        priority: Priority::Normal,
        fallback: None,
    });
    let r = rt.recv_timeout(Duration::from_secs(20)).expect("a reply");
    assert_eq!(r.id, id);
    r
}

fn embed_one(rt: &LlmRuntime, text: &str) -> Reply {
    crate::embed_reply(rt, text, Duration::from_secs(20))
}

fn status(rt: &LlmRuntime) -> simulacra::llm::runtime::BackendStatus {
    // The router publishes its status on its next turn.
    std::thread::sleep(Duration::from_millis(250));
    rt.status.lock().unwrap().backends[0].clone()
}

#[test]
fn dialect_a_server_that_refuses_json_schema_is_asked_with_the_embedded_grammar() {
    let server = like_llama_cpp_python();
    let rt = LlmRuntime::start(&server_config(&server.url));
    let r = ask(&rt, OutputShape::Integer { min: 1, max: 10 });
    assert_eq!(r.value, LlmValue::Integer(7));
    assert_eq!(r.source, ReplySource::Model("fake".into()));
    let chats = server.hits("/chat/completions");
    assert_eq!(chats.len(), 2, "json_schema refused, then grammar at once");
    let second: serde_json::Value = serde_json::from_str(&chats[1]).unwrap();
    assert_eq!(
        second["grammar"].as_str(),
        simulacra::llm::shape::grammar(&OutputShape::Integer { min: 1, max: 10 })
            .unwrap()
            .as_deref(),
        "the very grammar the embedded backend samples with"
    );
    // Remembered: later shaped requests go in the grammar at once; plain text has no form.
    for _ in 0..4 {
        assert_eq!(
            ask(&rt, OutputShape::YesNo).source,
            ReplySource::Model("fake".into())
        );
    }
    assert_eq!(server.hits("/chat/completions").len(), 6);
    let text = ask(&rt, OutputShape::Text);
    assert_eq!(
        text.value,
        LlmValue::Text("Seven, I think, or maybe eight.".into())
    );
    let last: serde_json::Value =
        serde_json::from_str(server.hits("/chat/completions").last().unwrap()).unwrap();
    assert!(last.get("grammar").is_none() && last.get("response_format").is_none());
    let st = rt.stats.lock().unwrap().total();
    assert_eq!((st.failures, st.retries, st.fallbacks), (0, 0, 0));
    let b = status(&rt);
    assert_eq!(b.health, Health::Ok);
    assert_eq!(b.note.as_deref(), Some("grammar (GBNF)"));
    assert!(
        b.detail
            .contains("ruled out json_schema: Input should be 'text' or 'json_object'"),
        "{}",
        b.detail
    );
    // Per-token embeddings are mean-pooled, normalised, and say so in their identity.
    let r = embed_one(&rt, "hello");
    let LlmValue::Embedding(e) = r.value else {
        panic!("{:?}", r.source)
    };
    assert_eq!(*e.vector, [0.6, 0.8]);
    assert_eq!(&*e.model, "openai:test (mean of token vectors)");
    assert_eq!(*rt.embedding_model.lock().unwrap(), *e.model);
}

#[test]
fn dialect_refusals_of_the_form_never_mark_the_endpoint_down() {
    // Every form refused (HTTP 400 naming the field, as OpenAI does) but plain prompts answered.
    let server = ScriptedServer::start(|path, body| {
        let v: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
        let field = [
            "response_format",
            "grammar",
            "structured_outputs",
            "guided_grammar",
            "guided_json",
        ]
        .into_iter()
        .find(|f| v.get(*f).is_some());
        match field {
            Some(f) => (
                400,
                format!(
                    r#"{{"error":{{"message":"Unrecognized request argument supplied: {f}","type":"invalid_request_error"}}}}"#
                ),
            ),
            None if path.ends_with("/api/chat") => (404, "404 page not found".into()),
            None => chat_answer("yes"),
        }
    });
    let rt = LlmRuntime::start(&server_config(&server.url));
    for _ in 0..5 {
        let r = ask(&rt, OutputShape::YesNo);
        assert_eq!(r.value, LlmValue::Bool(true), "{:?}", r.source);
    }
    let b = status(&rt);
    assert_eq!(b.health, Health::Ok);
    assert_eq!(b.note.as_deref(), Some("prompt only"));
    // The first request went down the list once; the others asked in words at once.
    assert_eq!(server.hits("/chat/completions").len(), 5 + 5);
    assert_eq!(server.hits("/api/chat").len(), 1);
    let prompt: serde_json::Value =
        serde_json::from_str(server.hits("/chat/completions").last().unwrap()).unwrap();
    assert!(
        prompt["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("yes or no")
    );
}

#[test]
fn dialect_a_pinned_form_that_is_refused_fails_that_request_alone() {
    let server = ScriptedServer::start(|_, body| {
        if body.contains("\"grammar\"") {
            (
                400,
                r#"{"error":{"message":"Unrecognized request argument supplied: grammar"}}"#.into(),
            )
        } else {
            chat_answer("fine")
        }
    });
    let mut cfg = server_config(&server.url);
    if let BackendConfig::OpenAi(o) = &mut cfg.backends[0] {
        o.dialect = simulacra::llm::config::Dialect::Grammar;
    }
    let rt = LlmRuntime::start(&cfg);
    for _ in 0..4 {
        let r = ask(&rt, OutputShape::YesNo);
        assert!(
            matches!(r.source, ReplySource::Fallback(ref why) if why.contains("pinned dialect grammar")),
            "{:?}",
            r.source
        );
    }
    assert_eq!(
        server.hits("/chat/completions").len(),
        4,
        "no retries of a refused form"
    );
    // Free text still goes through: the server is not down.
    assert_eq!(
        ask(&rt, OutputShape::Text).value,
        LlmValue::Text("fine".into())
    );
    assert_eq!(status(&rt).health, Health::Ok);
}

#[test]
fn dialect_a_form_the_server_ignores_is_dropped_after_a_few_invalid_answers() {
    // Takes every field and ignores all but vLLM's old guided_grammar (as vLLM ≥ 0.12 would
    // ignore that one too, and Ollama ignores unknown forms): 200s with unconstrained text.
    let server = ScriptedServer::start(|_, body| {
        if body.contains("\"guided_grammar\"") {
            chat_answer("yes")
        } else {
            chat_answer("Well, it depends on the day.")
        }
    });
    let rt = LlmRuntime::start(&server_config(&server.url));
    let mut fallbacks = 0;
    for _ in 0..8 {
        if ask(&rt, OutputShape::YesNo).is_fallback() {
            fallbacks += 1;
        }
    }
    let b = status(&rt);
    assert_eq!(
        b.note.as_deref(),
        Some("vllm guided_grammar"),
        "{}",
        b.detail
    );
    assert_eq!(
        b.health,
        Health::Ok,
        "ignored forms are no sign the server is down"
    );
    assert!(b.detail.contains("seems to ignore it"), "{}", b.detail);
    // 4 forms × 3 invalid answers before the one honoured; each request tries 3 times.
    assert!(fallbacks <= 4, "{fallbacks}");
    for _ in 0..4 {
        assert_eq!(ask(&rt, OutputShape::YesNo).value, LlmValue::Bool(true));
    }
}

#[test]
fn dialect_an_endpoint_that_answers_404_to_everything_is_marked_down_with_its_error() {
    // A base URL without its /v1: no route is there, whatever the form.
    let server = ScriptedServer::start(|_, _| (404, r#"{"detail":"Not Found"}"#.into()));
    let rt = LlmRuntime::start(&server_config(&server.url));
    let r = ask(&rt, OutputShape::Integer { min: 1, max: 10 });
    assert!(r.is_fallback(), "{:?}", r.source);
    // One try and two retries, each a failure of the endpoint: down after three.
    assert_eq!(server.hits("/chat/completions").len(), 3);
    let b = status(&rt);
    assert_eq!(b.health, Health::Down, "{}", b.detail);
    assert!(
        b.detail.contains("0/1 endpoints up")
            && b.detail.contains("last error")
            && b.detail.contains("HTTP 404: Not Found"),
        "{}",
        b.detail
    );
    // Resting: the next request is not sent.
    assert!(ask(&rt, OutputShape::YesNo).is_fallback());
    assert_eq!(server.hits("/chat/completions").len(), 3);
}

#[test]
fn dialect_a_request_refused_for_its_length_fails_alone_and_its_error_is_shown() {
    let server = ScriptedServer::start(|_, _| {
        (
            400,
            r#"{"error":{"message":"This model's maximum context length is 2048 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}"#.into(),
        )
    });
    let rt = LlmRuntime::start(&server_config(&server.url));
    for _ in 0..5 {
        assert!(ask(&rt, OutputShape::YesNo).is_fallback());
    }
    assert_eq!(
        server.hits("/chat/completions").len(),
        5,
        "a refused request is not retried"
    );
    let b = status(&rt);
    assert_eq!(b.health, Health::Ok, "{}", b.detail);
    assert!(
        b.detail.contains("1 endpoint(s) up")
            && b.detail.contains("last error")
            && b.detail.contains("maximum context length"),
        "{}",
        b.detail
    );
}

#[test]
fn embeddings_an_endpoint_without_them_says_so_once_and_the_local_embedder_takes_over() {
    let server = ScriptedServer::start(|path, _| {
        if path.ends_with("/embeddings") {
            (500, r#"{"error":{"message":"Llama model must be created with embedding=True to call this method","type":"internal_server_error"}}"#.into())
        } else {
            chat_answer("7")
        }
    });
    let mut cfg = server_config(&server.url);
    cfg.backends
        .push(BackendConfig::Scripted(Default::default()));
    if let BackendConfig::Scripted(s) = &mut cfg.backends[1] {
        s.name = "local".into();
    }
    cfg.embedding_backend = Some("fake".into());
    let rt = LlmRuntime::start(&cfg);
    assert_eq!(*rt.embedding_model.lock().unwrap(), "openai:test");
    for text in ["a party at the cafe", "the election", "a lost cat"] {
        let r = embed_one(&rt, text);
        let LlmValue::Embedding(e) = &r.value else {
            panic!()
        };
        assert_eq!(
            r.source,
            ReplySource::Model("local".into()),
            "{:?}",
            r.source
        );
        assert!(!e.vector.is_empty());
        assert_eq!(*e.model, *rt.embedding_model.lock().unwrap());
    }
    assert!(rt.embedding_model.lock().unwrap().starts_with("scripted:"));
    assert_eq!(server.hits("/embeddings").len(), 1, "asked once");
    let st = rt.stats.lock().unwrap().total();
    assert_eq!((st.failures, st.fallbacks), (0, 0));
    // Chat still goes to the server, which is up.
    assert_eq!(
        ask(&rt, OutputShape::Integer { min: 1, max: 10 }).source,
        ReplySource::Model("fake".into())
    );
    let b = status(&rt);
    assert_eq!(b.health, Health::Ok);
    assert!(b.detail.contains("embeddings no (HTTP 500"), "{}", b.detail);
}

/// The transport error of a GET of `{base}/models` by a client that trusts only the system's
/// certificates (a request that must fail before any answer).
fn transport_error(base: &str) -> String {
    let client =
        simulacra::llm::backend::openai::http_client(Duration::from_secs(2), None).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let err = rt
        .block_on(simulacra::llm::backend::openai::send(
            &client,
            &format!("{base}/models"),
            None,
            None,
        ))
        .unwrap_err();
    let simulacra::llm::backend::openai::HttpError::Transport(msg) = err else {
        panic!("{err:?}")
    };
    msg
}

#[test]
fn https_is_built_in() {
    // A plain-HTTP server behind an https:// URL: the client speaks TLS to it (and fails the
    // handshake) rather than refusing the scheme, so https:// servers are reachable.
    let server = FakeServer::start();
    let https = server.url.replace("http://", "https://");
    let msg = transport_error(&https);
    assert!(
        !msg.contains("scheme") && !msg.to_lowercase().contains("builder"),
        "{msg}"
    );
    assert!(
        msg.to_lowercase().contains("tls")
            || msg.contains("corrupt")
            || msg.contains("InvalidContentType")
            || msg.contains("handshake"),
        "a TLS failure: {msg}"
    );
}

#[test]
fn an_answer_too_large_a_vector_too_long_and_control_characters_are_not_taken() {
    let huge = format!("\"{}\"", "7".repeat(20 * 1024 * 1024));
    let server = ScriptedServer::start(move |path, body| {
        if path.ends_with("/embeddings") {
            let v = vec!["0.5"; 20_000].join(",");
            return (200, format!("{{\"data\":[{{\"embedding\":[{v}]}}]}}"));
        }
        if body.contains("huge") {
            return (200, huge.clone());
        }
        chat_answer("\u{1b}]0;owned\u{7}Hello\u{1b}[2J there")
    });
    let mut cfg = server_config(&server.url);
    cfg.retries = 0;
    let rt = LlmRuntime::start(&cfg);
    // A 20 MB answer is not read.
    let id = rt.next_id();
    rt.submit(Submission {
        id,
        agent: None,
        purpose: "test".into(),
        kind: Arc::new(WorkKind::Chat {
            messages: vec![ChatMessage::user("a huge answer please")],
            shape: OutputShape::Text,
            sampling: Sampling::default(),
        }),
        priority: Priority::Normal,
        fallback: None,
    });
    let r = rt.recv_timeout(Duration::from_secs(20)).expect("a reply");
    match &r.source {
        ReplySource::Fallback(why) => assert!(why.contains("larger than"), "{why}"),
        other => panic!("a 20 MB answer was taken: {other:?}"),
    }
    // A vector of 20,000 numbers is no embedding.
    let r = embed_one(&rt, "hello");
    if let LlmValue::Embedding(e) = &r.value {
        assert!(e.vector.len() < 20_000, "{} numbers taken", e.vector.len());
    }
    // Escape sequences from the server reach neither the value nor the text.
    let r = ask(&rt, OutputShape::Text);
    assert!(!r.is_fallback(), "{:?}", r.source);
    assert!(!r.text.chars().any(|c| c.is_control()), "{:?}", r.text);
    match &r.value {
        LlmValue::Text(t) => {
            assert!(!t.chars().any(|c| c.is_control()), "{t:?}");
            assert!(t.contains("Hello") && t.contains("there"), "{t:?}");
        }
        other => panic!("{other:?}"),
    }
}

/// A certificate for 127.0.0.1 and localhost that the test makes (Debian's `openssl`, which
/// `ca-certificates` brings), with its key: (cert.pem, key.pem).
fn make_certificate(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    std::fs::create_dir_all(dir).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let made = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
        ])
        .args(["-nodes", "-days", "2", "-subj", "/CN=localhost"])
        .args(["-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
        .args(["-addext", "basicConstraints=critical,CA:FALSE"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl runs (./scripts/setup.sh test installs it)");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    (cert, key)
}

/// An OpenAI-compatible server speaking TLS with the certificate given, answering every chat
/// request "7" (the program's own server for stand-ins, over rustls).
fn tls_server(cert: &std::path::Path, key: &std::path::Path) -> HttpServer {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    simulacra::llm::backend::openai::install_crypto_provider();
    let chain: Vec<CertificateDer> = CertificateDer::pem_file_iter(cert)
        .unwrap()
        .map(|c| c.unwrap())
        .collect();
    let key = PrivateKeyDer::from_pem_file(key).unwrap();
    let config = Arc::new(
        rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .unwrap(),
    );
    HttpServer::start(
        Arc::new(|_: &str, _: &[u8]| Some(chat_answer("7"))),
        Options {
            tls: Some(config),
            ..Options::default()
        },
    )
    .unwrap()
}

#[test]
fn https_to_a_local_server_with_its_own_certificate() {
    let dir = crate::temp_dir("tls");
    let (cert, key) = make_certificate(&dir);
    let server = tls_server(&cert, &key);
    let url = server.url(true);
    // Trusted through the backend's ca_file: a real handshake, a request and its answer.
    let mut cfg = server_config(&url);
    cfg.retries = 0;
    if let BackendConfig::OpenAi(o) = &mut cfg.backends[0] {
        o.dialect = simulacra::llm::config::Dialect::PromptOnly;
        o.ca_file = Some(cert.display().to_string());
    }
    let rt = LlmRuntime::start(&cfg);
    let r = ask(&rt, OutputShape::Integer { min: 1, max: 10 });
    assert_eq!(
        r.source,
        ReplySource::Model("fake".into()),
        "{:?}",
        r.source
    );
    assert_eq!(r.value, LlmValue::Integer(7));
    drop(rt);
    // Not trusted (no ca_file): the handshake fails, and the error says the way out.
    let msg = transport_error(&url);
    assert!(
        msg.contains("UnknownIssuer") || msg.contains("invalid peer certificate"),
        "{msg}"
    );
    assert!(
        msg.contains("ca_file"),
        "the error names the way out: {msg}"
    );
    // Through the runtime, the request falls back saying so.
    let mut cfg = server_config(&url);
    cfg.retries = 0;
    let rt = LlmRuntime::start(&cfg);
    let r = ask(&rt, OutputShape::Integer { min: 1, max: 10 });
    match &r.source {
        ReplySource::Fallback(why) => assert!(why.contains("ca_file"), "{why}"),
        other => panic!("an untrusted server was believed: {other:?}"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_model_the_server_does_not_list_is_named_with_the_ones_it_does() {
    let server = ScriptedServer::start(|path, _| {
        if path.ends_with("/models") {
            return (
                200,
                r#"{"data":[{"id":"qwen2.5:7b"},{"id":"llama3.1:8b"}]}"#.into(),
            );
        }
        chat_answer("7")
    });
    let mut cfg = server_config(&server.url);
    if let BackendConfig::OpenAi(o) = &mut cfg.backends[0] {
        o.model = "qwen2.5:7".into();
    }
    let (report, _) = simulacra::llm::probe::probe(&cfg);
    assert!(
        report.contains("\"qwen2.5:7\" is not among them")
            && report
                .contains("set the backend's `model` to one of \"qwen2.5:7b\", \"llama3.1:8b\""),
        "{report}"
    );
}

#[test]
fn a_servers_escapes_reach_neither_the_probe_nor_the_run_summary() {
    // Model ids and error text are a server's words: a terminal's escape sequences in them
    // (here: clear the screen, set the window title) must not be printed or kept.
    let server = ScriptedServer::start(|path, _| {
        if path.ends_with("/models") {
            return (
                200,
                r#"{"data":[{"id":"good\u001b[2J"},{"id":"title\u001b]0;pwned\u0007"}]}"#.into(),
            );
        }
        (
            500,
            r#"{"error":{"message":"boom \u001b[31mred\u001b[0m \u0007"}}"#.into(),
        )
    });
    let bad = |t: &str| t.chars().any(|c| c.is_control() && c != '\n' && c != '\t');
    let mut cfg = server_config(&server.url);
    cfg.retries = 0;
    let (report, _) = simulacra::llm::probe::probe(&cfg);
    assert!(
        report.contains("good[2J") && report.contains("boom [31mred"),
        "{report}"
    );
    assert!(!bad(&report), "{report:?}");
    let rt = LlmRuntime::start(&cfg);
    let r = ask(&rt, OutputShape::Integer { min: 1, max: 10 });
    match &r.source {
        ReplySource::Fallback(why) => assert!(!bad(why), "{why:?}"),
        other => panic!("a server error was believed: {other:?}"),
    }
    let summary = rt.stats.lock().unwrap().per_agent_hour(1, 1.0);
    assert!(
        summary.contains("failed attempt(s), the last:"),
        "{summary}"
    );
    assert!(!bad(&summary), "{summary:?}");
}
