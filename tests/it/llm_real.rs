//! The real default model (SmolLM2-135M-Instruct, fetched by set-up) through the runtime:
//! shapes hold by construction, embeddings make sense, concurrent replies reach their callers,
//! and the headless game keeps stepping while the model works.

use simulacra::llm::backend::WorkKind;
use simulacra::llm::config::{BackendConfig, LlamaConfig, LlmConfig};
use simulacra::llm::runtime::{LlmRuntime, Reply, Submission};
use simulacra::llm::shape::validate_schema;
use simulacra::llm::{ChatMessage, LlmValue, OutputShape, Priority, Sampling};
use std::time::Duration;

fn llama(slots: u32) -> LlmConfig {
    LlmConfig {
        backends: vec![BackendConfig::Llama(LlamaConfig {
            model: crate::model_path().to_string_lossy().into(),
            slots,
            context: 8192,
            threads: Some(2),
            ..Default::default()
        })],
        embedding_backend: None,
        timeout_s: 300.0,
        ..Default::default()
    }
}

/// [`llama`] answering every request from the model once (no answer cache, no retries), with
/// the text shapes force written (`write_forced`) or sampled.
fn asked_once(slots: u32, write_forced: bool) -> LlmConfig {
    let mut cfg = llama(slots);
    cfg.cache = false;
    cfg.retries = 0;
    if let BackendConfig::Llama(l) = &mut cfg.backends[0] {
        l.write_forced = write_forced;
    }
    cfg
}

fn submit_all(rt: &LlmRuntime, reqs: Vec<(String, OutputShape, u32)>) -> Vec<(Submission, Reply)> {
    let subs: Vec<Submission> = reqs
        .into_iter()
        .map(|(prompt, shape, max_tokens)| Submission {
            id: rt.next_id(),
            agent: None,
            purpose: "test".into(),
            kind: std::sync::Arc::new(WorkKind::Chat {
                messages: vec![
                    ChatMessage::system(
                        "You are a resident of the town of Smallville. Answer briefly.",
                    ),
                    ChatMessage::user(prompt),
                ],
                shape,
                sampling: Sampling::greedy(max_tokens),
            }),
            priority: Priority::Normal,
            fallback: None,
        })
        .collect();
    for s in &subs {
        rt.submit(s.clone());
    }
    let mut replies = Vec::new();
    for _ in 0..subs.len() {
        replies.push(
            rt.recv_timeout(Duration::from_secs(600))
                .expect("a reply from the model"),
        );
    }
    subs.into_iter()
        .map(|s| {
            let r = replies
                .iter()
                .find(|r| r.id == s.id)
                .expect("each request gets its own reply")
                .clone();
            (s, r)
        })
        .collect()
}

/// Asks `question` (plain text, greedy) as the resident whose identity block is `identity`;
/// returns the request's id.
fn ask_as(rt: &LlmRuntime, purpose: &str, identity: &str, question: &str, max_tokens: u32) -> u64 {
    let user = ChatMessage::user(question.to_string());
    ask_with(rt, purpose, identity, user, max_tokens)
}

/// [`ask_as`] with the user message given.
fn ask_with(
    rt: &LlmRuntime,
    purpose: &str,
    identity: &str,
    user: ChatMessage,
    max_tokens: u32,
) -> u64 {
    let id = rt.next_id();
    rt.submit(Submission {
        id,
        agent: None,
        purpose: purpose.into(),
        kind: std::sync::Arc::new(WorkKind::Chat {
            messages: vec![ChatMessage::system(identity), user],
            shape: OutputShape::Text,
            sampling: Sampling::greedy(max_tokens),
        }),
        priority: Priority::Normal,
        fallback: None,
    });
    id
}

/// The next `n` replies, each the model's (none a fail-safe).
fn model_replies(rt: &LlmRuntime, n: usize) -> Vec<Reply> {
    (0..n)
        .map(|_| {
            let r = rt.recv_timeout(Duration::from_secs(300)).expect("a reply");
            assert!(!r.is_fallback(), "{:?}", r.source);
            r
        })
        .collect()
}

const PLACES: [&str; 6] = [
    "Hobbs Cafe",
    "Johnson Park",
    "The Rose and Crown Pub",
    "Oak Hill College",
    "Harvey Oak Supply Store",
    "The Willows Market and Pharmacy",
];
const ACTIVITIES: [&str; 10] = [
    "have breakfast",
    "buy groceries",
    "read a book",
    "meet a friend for a drink",
    "attend a lecture",
    "buy a hammer",
    "take a walk",
    "drink coffee",
    "play pool",
    "pick up medicine",
];
const PEOPLE: [&str; 10] = [
    "Isabella", "Klaus", "Maria", "Sam", "Tom", "John", "Eddy", "Abigail", "Carmen", "Adam",
];

#[test]
fn a_constrained_choice_is_always_on_the_list() {
    let _model = crate::real_model_lock();
    let rt = LlmRuntime::start(&llama(16));
    let reqs: Vec<(String, OutputShape, u32)> = (0..100)
        .map(|i| {
            let who = PEOPLE[i % PEOPLE.len()];
            let what = ACTIVITIES[(i * 7 + i / 10) % ACTIVITIES.len()];
            // Vary the list too: its order and length.
            let mut options: Vec<String> = PLACES.iter().map(|s| s.to_string()).collect();
            options.rotate_left(i % 6);
            options.truncate(3 + i % 4);
            (
                format!(
                    "{who} wants to {what}. Where should {who} go? Choose one of: {}.",
                    options.join(", ")
                ),
                OutputShape::Choice(options),
                24,
            )
        })
        .collect();
    for (s, r) in submit_all(&rt, reqs) {
        let WorkKind::Chat {
            shape: OutputShape::Choice(options),
            ..
        } = &*s.kind
        else {
            unreachable!()
        };
        assert!(!r.is_fallback(), "{:?}", r.source);
        let LlmValue::Choice(i, text) = &r.value else {
            panic!("{:?}", r.value)
        };
        assert_eq!(&options[*i], text);
        assert!(options.contains(text));
    }
    let st = rt.stats.lock().unwrap().total();
    assert_eq!(
        st.parse_failures, 0,
        "grammar-constrained answers always parse"
    );
}

#[test]
fn integers_stay_in_range_and_json_matches_its_schema() {
    let _model = crate::real_model_lock();
    let rt = LlmRuntime::start(&llama(8));
    let events = [
        "brushing teeth",
        "a break-up",
        "getting into college",
        "making the bed",
        "a friend's funeral",
        "eating a sandwich",
        "winning an election",
        "seeing a cat",
    ];
    let reqs = events
        .iter()
        .map(|e| {
            (
                format!("On a scale of 1 (mundane) to 10 (extremely poignant), rate: {e}. Rating:"),
                OutputShape::Integer { min: 1, max: 10 },
                4,
            )
        })
        .collect();
    for (_, r) in submit_all(&rt, reqs) {
        assert!(!r.is_fallback(), "{:?}", r.source);
        let LlmValue::Integer(n) = r.value else {
            panic!()
        };
        assert!((1..=10).contains(&n), "{n}");
    }
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 24},
            "age": {"type": "integer", "minimum": 1, "maximum": 99},
            "likes_coffee": {"type": "boolean"}
        },
        "required": ["name", "age", "likes_coffee"],
        "additionalProperties": false
    });
    let reqs = PEOPLE[..6]
        .iter()
        .map(|p| {
            (
                format!(
                    "Describe {p} from Smallville as a JSON object with name, age and likes_coffee."
                ),
                OutputShape::Json(schema.clone()),
                80,
            )
        })
        .collect();
    for (_, r) in submit_all(&rt, reqs) {
        assert!(!r.is_fallback(), "{:?}", r.source);
        let LlmValue::Json(v) = &r.value else {
            panic!("{:?}", r.value)
        };
        validate_schema(&schema, v, "$").unwrap();
    }
    // An answer to an invitation names what is in its way from the plan's items shown, quotes
    // and brackets and all, or "nothing".
    let items = [
        "relaxing at home (artist's co-living space)".to_string(),
        "taking a walk in the park (Johnson Park)".to_string(),
    ];
    let invite = simulacra::cognition::talk::invite::answer_schema(&items, true);
    let reqs = PEOPLE[..4]
        .iter()
        .map(|p| {
            (
                format!(
                    "Isabella Rodriguez says to {p}: \"Come to my Valentine's Day party at Hobbs \
                     Cafe tomorrow from 5 to 7 PM!\"\n{p}'s plan at that time: {}\n\nDoes {p} \
                     accept the invitation? Answer true or false, name what in the plan is in the \
                     way (one of \"{}\", \"{}\", \"nothing\"), and give the reason in a few \
                     words.",
                    items.join("; "),
                    items[0],
                    items[1]
                ),
                OutputShape::Json(invite.clone()),
                72,
            )
        })
        .collect();
    for (_, r) in submit_all(&rt, reqs) {
        assert!(!r.is_fallback(), "{:?}", r.source);
        let LlmValue::Json(v) = &r.value else {
            panic!("{:?}", r.value)
        };
        validate_schema(&invite, v, "$").unwrap();
        let named = v["in_the_way"].as_str().unwrap();
        assert!(
            items.iter().any(|i| i == named) || named == "nothing",
            "{v}"
        );
    }
}

#[test]
fn embeddings_of_paraphrases_are_closer_than_unrelated_sentences() {
    let _model = crate::real_model_lock();
    let rt = LlmRuntime::start(&llama(4));
    let texts = [
        "Isabella is planning a Valentine's Day party at the cafe.",
        "Isabella is organising a party for Valentine's Day at Hobbs Cafe.",
        "The chemistry exam covers organic reactions and lab safety.",
    ];
    let mut vecs = Vec::new();
    for t in texts {
        let id = rt.next_id();
        rt.submit(Submission {
            id,
            agent: None,
            purpose: "embed".into(),
            kind: std::sync::Arc::new(WorkKind::Embed { text: t.into() }),
            priority: Priority::Normal,
            fallback: None,
        });
        let r = rt.recv_timeout(Duration::from_secs(300)).unwrap();
        let LlmValue::Embedding(e) = r.value else {
            panic!("{:?}", r.source)
        };
        assert!(!e.vector.is_empty());
        // The id names the file read: the Q8_0 copy of the bundled Q4_1 model.
        assert_eq!(&*e.model, "llama:SmolLM2-135M-Instruct.Q4_1.q8_0.gguf");
        vecs.push(e);
    }
    let close = vecs[0].cosine(&vecs[1]).unwrap();
    let far = vecs[0].cosine(&vecs[2]).unwrap();
    println!("paraphrase cosine {close:.3}, unrelated {far:.3}");
    assert!(close > far, "paraphrase {close} vs unrelated {far}");
    // A vector of another model is never compared silently.
    let other = simulacra::llm::Embedding {
        model: "openai:other".into(),
        vector: vecs[0].vector.clone(),
    };
    assert!(vecs[0].cosine(&other).is_err());
}

#[test]
fn eight_concurrent_requests_each_reach_their_own_caller() {
    let _model = crate::real_model_lock();
    let rt = LlmRuntime::start(&llama(8));
    // Each request's options are its own, so a reply delivered to the wrong caller shows.
    let reqs = (0..8)
        .map(|k| {
            let options = vec![
                format!("blue-{k}"),
                format!("green-{k}"),
                format!("red-{k}"),
            ];
            (
                format!(
                    "Pick a colour for house number {k}: {}.",
                    options.join(", ")
                ),
                OutputShape::Choice(options),
                12,
            )
        })
        .collect();
    let pairs = submit_all(&rt, reqs);
    assert_eq!(pairs.len(), 8);
    for (k, (_, r)) in pairs.iter().enumerate() {
        let LlmValue::Choice(_, text) = &r.value else {
            panic!()
        };
        assert!(text.ends_with(&format!("-{k}")), "request {k} got {text}");
        assert!(!r.is_fallback());
    }
}

#[test]
fn the_headless_game_keeps_stepping_while_the_real_model_answers() {
    let _model = crate::real_model_lock();
    use bevy::prelude::*;
    use simulacra::llm::{Llm, LlmReply, LlmRequest};
    let config = simulacra::config::GameConfig {
        llm: llama(4),
        ..Default::default()
    };
    let sim = simulacra::SimPlugin::load("the_ville_n3", None, config).unwrap();
    let mut app = simulacra::headless_app(sim);
    simulacra::run_steps(&mut app, 1);
    let agents: Vec<Entity> = app
        .world_mut()
        .query_filtered::<Entity, With<simulacra::agent::Resident>>()
        .iter(app.world())
        .collect();
    let mut handles = Vec::new();
    for a in &agents {
        let req = LlmRequest::chat(
            "test",
            vec![ChatMessage::user(
                "Rate from 1 to 10 how important it is to greet a neighbour.",
            )],
            OutputShape::Integer { min: 1, max: 10 },
        )
        .for_agent(*a)
        .fallback(LlmValue::Integer(4));
        handles.push(app.world_mut().resource_mut::<Llm>().submit(req));
    }
    let mut replies = 0;
    let mut steps = 0u64;
    let start = std::time::Instant::now();
    while replies < agents.len() {
        simulacra::run_steps(&mut app, 10);
        steps += 10;
        replies += app
            .world()
            .resource::<bevy::ecs::message::Messages<LlmReply>>()
            .iter_current_update_messages()
            .filter(|m| handles.contains(&m.handle))
            .count();
        assert!(start.elapsed() < Duration::from_secs(300), "no replies");
    }
    assert!(
        steps > 10,
        "the simulation went on while the model worked ({steps} steps)"
    );
    let st = app.world().resource::<Llm>().stats();
    assert_eq!(st.by_purpose["test"].calls, agents.len() as u64);
}

#[test]
fn a_shared_identity_prefix_is_decoded_once_and_reused() {
    let _model = crate::real_model_lock();
    let rt = LlmRuntime::start(&llama(4));
    let identity = "Name: Klaus Mueller\nAge: 20\nInnate traits: kind, inquisitive, passionate\nLearned traits: Klaus Mueller is a student at Oak Hill College studying sociology. He is passionate about social justice and loves to explore different perspectives.\nCurrently: Klaus Mueller is writing a research paper on the effects of gentrification in low-income communities.\n";
    for (i, event) in [
        "Klaus sees Maria at the library",
        "Klaus finishes a chapter of his paper",
        "Klaus drinks a coffee",
    ]
    .iter()
    .enumerate()
    {
        let id = rt.next_id();
        rt.submit(Submission {
            id,
            agent: None,
            purpose: "importance".into(),
            kind: std::sync::Arc::new(WorkKind::Chat {
                messages: vec![
                    ChatMessage::system(identity),
                    ChatMessage::user(format!(
                        "Rate from 1 to 10 how poignant this is: {event}. Rating:"
                    )),
                ],
                shape: OutputShape::Integer { min: 1, max: 10 },
                sampling: Sampling::greedy(4),
            }),
            priority: Priority::Normal,
            fallback: None,
        });
        let r = rt.recv_timeout(Duration::from_secs(300)).unwrap();
        assert!(!r.is_fallback(), "{:?}", r.source);
        let st = rt.stats.lock().unwrap().by_purpose["importance"].clone();
        if i == 0 {
            assert_eq!(
                st.cached_prompt_tokens, 0,
                "nothing to reuse on the first request"
            );
        } else {
            // The identity block (well over 60 tokens) came from the KV cache, not a new decode.
            assert!(
                st.cached_prompt_tokens as usize >= 60 * i,
                "only {} prompt tokens reused after {} requests",
                st.cached_prompt_tokens,
                i + 1
            );
        }
    }
}

#[test]
fn a_prefix_held_by_a_busy_slot_is_copied_into_a_free_one_and_still_means_the_same() {
    let _model = crate::real_model_lock();
    // Each slot has its own part of the KV cache (the default `split_kv`). While one request
    // is still writing its long answer, a second with the same identity block starts in another
    // slot: its prefix is copied from the busy slot's stream instead of decoded again, and the
    // copied cache must carry the identity, so the model can still name the person.
    let rt = LlmRuntime::start(&llama(4));
    let identity = "Name: Klaus Mueller\nAge: 20\nInnate traits: kind, inquisitive, passionate\nLearned traits: Klaus Mueller is a student at Oak Hill College studying sociology. He is passionate about social justice and loves to explore different perspectives.\nCurrently: Klaus Mueller is writing a research paper on the effects of gentrification in low-income communities.\n";
    let ask = |purpose: &str, question: &str, max_tokens: u32| {
        ask_as(&rt, purpose, identity, question, max_tokens)
    };
    let long = ask(
        "story",
        "Write a long story about this person's whole day, hour by hour.",
        400,
    );
    // The story's prompt is decoded in well under a second; its 400 tokens take far longer.
    std::thread::sleep(Duration::from_millis(1500));
    let name = ask(
        "name",
        "What is this person's full name? Answer with the name only.",
        8,
    );
    let mut replies = Vec::new();
    for _ in 0..2 {
        replies.push(rt.recv_timeout(Duration::from_secs(600)).expect("a reply"));
    }
    let story = replies.iter().find(|r| r.id == long).expect("story reply");
    let named = replies.iter().find(|r| r.id == name).expect("name reply");
    assert!(!story.is_fallback(), "{:?}", story.source);
    assert!(!named.is_fallback(), "{:?}", named.source);
    assert!(
        story.latency > Duration::from_millis(2500),
        "the story ended before the second request came ({:?}), so nothing was copied",
        story.latency
    );
    let stats = rt.stats.lock().unwrap();
    assert!(
        stats.by_purpose["name"].cached_prompt_tokens >= 60,
        "the identity block was decoded again ({} prompt tokens reused)",
        stats.by_purpose["name"].cached_prompt_tokens
    );
    assert!(
        named.text.contains("Klaus"),
        "the copied cache lost the identity: {:?}",
        named.text
    );
}

#[test]
fn a_residents_identity_kept_beside_the_cache_is_copied_back_instead_of_read_again() {
    let _model = crate::real_model_lock();
    // Two slots. Klaus asks; Maria and Isabella then take both slots (their prompts replace
    // his in the cache); Klaus asks again: his identity block, kept once read, is copied back
    // into a slot instead of being read again, and the answer is the one a runtime that keeps
    // nothing gives.
    let klaus = "Name: Klaus Mueller\nAge: 20\nInnate traits: kind, inquisitive, passionate\nLearned traits: Klaus Mueller is a student at Oak Hill College studying sociology. He is passionate about social justice and loves to explore different perspectives.\nCurrently: Klaus Mueller is writing a research paper on the effects of gentrification in low-income communities.\n";
    let maria = "Name: Maria Lopez\nAge: 21\nInnate traits: energetic, enthusiastic, inquisitive\nLearned traits: Maria Lopez is a student at Oak Hill College studying physics and a part time Twitch game streamer who loves to connect with people and explore new ideas.\nCurrently: Maria Lopez is working on her physics degree and streaming games on Twitch.\n";
    let isabella = "Name: Isabella Rodriguez\nAge: 34\nInnate traits: friendly, outgoing, hospitable\nLearned traits: Isabella Rodriguez is a cafe owner of Hobbs Cafe who loves to make people feel welcome. She is always looking for ways to make the cafe a place where people can come to relax and enjoy themselves.\nCurrently: Isabella Rodriguez is planning a Valentine's Day party at Hobbs Cafe.\n";
    let run = |kept_mb: u32| -> (String, u64) {
        let mut cfg = llama(2);
        if let BackendConfig::Llama(c) = &mut cfg.backends[0] {
            c.kept_prefixes_mb = kept_mb;
        }
        cfg.cache = false; // Klaus asks the same twice: from the model both times
        let rt = LlmRuntime::start(&cfg);
        let ask = |purpose: &str, identity: &str| {
            let question = "What is this person's full name? Answer with the name only.";
            ask_as(&rt, purpose, identity, question, 8);
        };
        let wait = |n: usize| model_replies(&rt, n);
        ask("first", klaus);
        wait(1);
        ask("others", maria);
        ask("others", isabella);
        wait(2);
        ask("again", klaus);
        let again = wait(1).remove(0);
        let cached = rt.stats.lock().unwrap().by_purpose["again"].cached_prompt_tokens;
        (again.text, cached)
    };
    let before = simulacra::llm::backend::llama::model_work();
    let (kept, cached) = run(256);
    let restored = simulacra::llm::backend::llama::model_work().since(&before);
    assert!(
        restored.restored >= 1 && restored.restored_tokens >= 60,
        "nothing was copied back: {restored:?}"
    );
    assert!(
        cached >= 60,
        "the identity block was read again ({cached} prompt tokens from the cache)"
    );
    assert!(
        kept.contains("Klaus"),
        "the copied cache lost the identity: {kept:?}"
    );
    let (read, cached_without) = run(0);
    assert!(
        cached_without < 30,
        "without kept prefixes the block is read again ({cached_without} from the cache)"
    );
    assert_eq!(
        kept, read,
        "the same answer as when the block is read again"
    );
}

#[test]
fn a_speakers_conversation_so_far_kept_beside_the_cache_is_copied_back_for_its_next_line() {
    let _model = crate::real_model_lock();
    // Two slots. Klaus says a line, its prompt marked as opening his next one up to the end of
    // the lines so far; Maria and Isabella then take both slots; Klaus's next line (two lines
    // more) is asked. His conversation so far, kept once read, is copied back with his
    // identity: more of the prompt comes from the cache than when only the identity is kept,
    // and the answer is the one a runtime that keeps nothing gives.
    let klaus = "Name: Klaus Mueller\nAge: 20\nInnate traits: kind, inquisitive, passionate\nLearned traits: Klaus Mueller is a student at Oak Hill College studying sociology. He is passionate about social justice and loves to explore different perspectives.\n";
    let other = |name: &str| {
        format!(
            "Name: {name}\nAge: 30\nInnate traits: friendly, curious, calm\nLearned traits: {name} lives in the Ville and knows most of its residents by name.\n"
        )
    };
    let said = [
        "Klaus Mueller: \"Hi Maria, are you going to the party at Hobbs Cafe on Valentine's Day?\"",
        "Maria Lopez: \"I think so! Isabella invited me this morning. Are you?\"",
        "Klaus Mueller: \"I would like to, but my paper on gentrification is due on Friday.\"",
        "Maria Lopez: \"You could bring your notes. The party starts at five in the evening.\"",
        "Klaus Mueller: \"That is true. Sam Moore is running for mayor, did you hear?\"",
    ];
    let line = |lines: usize, mark: bool| {
        let head = format!(
            "Klaus Mueller is talking with Maria Lopez at Hobbs Cafe.\nThe conversation so far:\n{}",
            said[..lines].join("\n")
        );
        let text = format!("{head}\n\nWhat Klaus Mueller says next, in one sentence:");
        let mut m = ChatMessage::user(text);
        m.stable = mark.then_some(head.len());
        m
    };
    let run = |kept_mb: u32, mark: bool| -> (String, u64) {
        let mut cfg = llama(2);
        if let BackendConfig::Llama(c) = &mut cfg.backends[0] {
            c.kept_prefixes_mb = kept_mb;
        }
        cfg.cache = false;
        let rt = LlmRuntime::start(&cfg);
        let ask = |purpose: &str, identity: &str, user: ChatMessage| {
            ask_with(&rt, purpose, identity, user, 12);
        };
        let wait = |n: usize| model_replies(&rt, n);
        ask("first", klaus, line(3, mark));
        wait(1);
        for name in ["Maria Lopez", "Isabella Rodriguez"] {
            ask(
                "others",
                &other(name),
                ChatMessage::user("Say hello in three words."),
            );
        }
        wait(2);
        ask("next", klaus, line(5, mark));
        let next = wait(1).remove(0);
        let cached = rt.stats.lock().unwrap().by_purpose["next"].cached_prompt_tokens;
        (next.text, cached)
    };
    let (kept, cached) = run(256, true);
    let (_, identity_only) = run(256, false);
    assert!(
        cached >= identity_only + 60,
        "the lines so far were read again: {cached} prompt tokens from the cache, {identity_only} with the identity alone"
    );
    let (read, nothing) = run(0, true);
    assert!(nothing < 30, "nothing kept: {nothing} from the cache");
    assert_eq!(kept, read, "the same line as when it is all read again");
}

#[test]
fn more_work_than_the_kv_cache_holds_waits_its_turn_instead_of_being_redone() {
    let _model = crate::real_model_lock();
    // 8 slots share 2,048 tokens of one unified KV cache; each request may take its prompt plus 300
    // generated tokens, so all 8 at once would overflow it. Requests that do not fit must wait
    // for room: none is cut off and redone, and every one is answered by the model.
    let mut cfg = llama(8);
    if let BackendConfig::Llama(c) = &mut cfg.backends[0] {
        c.context = 2048;
        c.split_kv = false; // one cache shared by all slots
    }
    let rt = LlmRuntime::start(&cfg);
    let reqs = (0..8)
        .map(|k| {
            (
                format!(
                    "Write a long, detailed story about {} who wants to {} at {}.",
                    PEOPLE[k],
                    ACTIVITIES[k],
                    PLACES[k % PLACES.len()]
                ),
                OutputShape::Text,
                300,
            )
        })
        .collect();
    let pairs = submit_all(&rt, reqs);
    assert_eq!(pairs.len(), 8);
    for (_, r) in &pairs {
        assert!(!r.is_fallback(), "{:?}", r.source);
        assert!(!r.text.is_empty());
    }
    let p = rt.stats.lock().unwrap().purpose("test").clone();
    assert_eq!(p.retries, 0, "no request was cut off and retried: {p:?}");
    assert_eq!(p.failures, 0, "{p:?}");
}

#[test]
fn a_q4_1_model_is_read_from_a_q8_0_copy_made_once_beside_it() {
    use simulacra::llm::backend::llama::weights::{converted_path, file_type, planned, prepare};
    use simulacra::llm::config::Weights;
    let _model = crate::real_model_lock();
    let dir = std::env::temp_dir().join(format!("q8-copy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("m.Q4_1.gguf");
    std::fs::copy(crate::model_path(), &file).unwrap();
    assert_eq!(file_type(&file), Some(3), "the bundled model is Q4_1");
    assert_eq!(planned(&file, Weights::AsFile), (file.clone(), false));
    let copy = converted_path(&file);
    assert_eq!(planned(&file, Weights::Q8_0), (copy.clone(), true));
    assert_eq!(prepare(&file, Weights::Q8_0, 2), copy);
    assert_eq!(file_type(&copy), Some(7), "the copy is Q8_0");
    assert_eq!(
        planned(&file, Weights::Q8_0),
        (copy.clone(), false),
        "made once"
    );
    // No half-written file is left beside them.
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    // A file changed after its copy was made is converted again.
    std::thread::sleep(Duration::from_millis(20));
    std::fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .unwrap()
        .set_modified(std::time::SystemTime::now())
        .unwrap();
    assert!(planned(&file, Weights::Q8_0).1);
    // The copy answers as the model does: a shaped request through the runtime.
    let mut cfg = llama(2);
    if let BackendConfig::Llama(l) = &mut cfg.backends[0] {
        l.model = copy.to_string_lossy().into();
    }
    let rt = LlmRuntime::start(&cfg);
    let id = rt.next_id();
    rt.submit(Submission {
        id,
        agent: None,
        purpose: "choice".into(),
        kind: std::sync::Arc::new(WorkKind::Chat {
            messages: vec![ChatMessage::user("Is water wet? Answer yes or no.")],
            shape: OutputShape::YesNo,
            sampling: Sampling::greedy(8),
        }),
        priority: Priority::Normal,
        fallback: None,
    });
    let r = rt.recv_timeout(Duration::from_secs(300)).unwrap();
    assert!(matches!(r.value, LlmValue::Bool(_)), "{r:?}");
    assert!(!r.is_fallback(), "{r:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The logits of the token after a long prompt and one generated token (llama.cpp's CPU flash
/// attention splits a cache of 512 or more tokens between the threads for a single token),
/// decoded on `threads` threads.
fn next_token_logits(
    model: &llama_cpp_2::model::LlamaModel,
    threads: i32,
    flash_attention: bool,
) -> Vec<f32> {
    use llama_cpp_2::context::params::LlamaContextParams;
    use llama_cpp_2::llama_batch::LlamaBatch;
    let backend = simulacra::llm::backend::llama::global_backend().unwrap();
    let params = LlamaContextParams::default()
        .with_n_ctx(std::num::NonZeroU32::new(2048))
        .with_n_batch(2048)
        .with_n_threads(threads)
        .with_n_threads_batch(threads)
        .with_flash_attention_policy(simulacra::llm::backend::llama::flash_attention(
            flash_attention,
        ));
    let mut ctx = model.new_context(backend, params).unwrap();
    let text: String = (0..60)
        .map(|i| {
            format!(
                "At {:02}:00 someone went to {}. ",
                i % 24,
                PLACES[i % PLACES.len()]
            )
        })
        .collect();
    let toks = model.vocab().tokenize(text.as_bytes(), true, false);
    assert!(toks.len() > 600, "{}", toks.len());
    let mut batch = LlamaBatch::new(2048, 1);
    for (i, t) in toks.iter().enumerate() {
        batch.add(*t, i as i32, &[0], i + 1 == toks.len()).unwrap();
    }
    ctx.decode(&mut batch).unwrap();
    batch.clear();
    batch.add(toks[5], toks.len() as i32, &[0], true).unwrap();
    ctx.decode(&mut batch).unwrap();
    ctx.get_logits_ith(0).to_vec()
}

#[test]
fn the_models_numbers_do_not_depend_on_the_thread_count() {
    let _model = crate::real_model_lock();
    let model = simulacra::llm::backend::llama::load_model(&crate::model_path()).unwrap();
    // As the runtime decodes (flash attention off): bit for bit the same.
    let one = next_token_logits(&model, 1, false);
    let two = next_token_logits(&model, 2, false);
    assert!(
        one.iter()
            .zip(&two)
            .all(|(a, b)| a.to_bits() == b.to_bits())
    );
    // Flash attention on adds the threads' parts of the cache in a thread-dependent order:
    // why it is off (if a llama.cpp update makes it exact, the switch can go).
    let one = next_token_logits(&model, 1, true);
    let two = next_token_logits(&model, 2, true);
    assert!(
        one.iter()
            .zip(&two)
            .any(|(a, b)| a.to_bits() != b.to_bits())
    );
}

#[test]
fn a_contexts_threads_are_set_between_decodes() {
    use llama_cpp_2::context::params::LlamaContextParams;
    use simulacra::llm::backend::llama::threads::{context_threads, set_threads};
    let _model = crate::real_model_lock();
    let model = simulacra::llm::backend::llama::load_model(&crate::model_path()).unwrap();
    let backend = simulacra::llm::backend::llama::global_backend().unwrap();
    let params = LlamaContextParams::default()
        .with_n_ctx(std::num::NonZeroU32::new(512))
        .with_n_threads(2)
        .with_n_threads_batch(2);
    let ctx = model.new_context(backend, params).unwrap();
    assert_eq!(context_threads(&ctx), Some((2, 2)));
    assert!(set_threads(&ctx, 1));
    assert_eq!(context_threads(&ctx), Some((1, 1)));
}

#[test]
fn a_real_answer_that_counts_is_stopped_at_once() {
    let _model = crate::real_model_lock();
    let ask = |stop_loops: bool| {
        let mut cfg = llama(2);
        cfg.retries = 0;
        if let BackendConfig::Llama(l) = &mut cfg.backends[0] {
            l.stop_loops = stop_loops;
        }
        let rt = LlmRuntime::start(&cfg);
        let reqs = vec![(
            "Count from 1 to 100, separated by commas.".to_string(),
            OutputShape::Text,
            160,
        )];
        let (_, r) = submit_all(&rt, reqs).pop().unwrap();
        let p = rt.stats.lock().unwrap().purpose("test").clone();
        (r, p)
    };
    let (r, p) = ask(true);
    assert!(r.is_fallback(), "a stopped loop is a failed attempt: {r:?}");
    assert_eq!(p.loops_stopped, 1, "{p:?}");
    assert!(p.gen_tokens < 40, "stopped early: {p:?}");
    // Without the check the model counts on to its budget.
    let (_, p) = ask(false);
    assert_eq!(p.loops_stopped, 0);
    assert!(p.gen_tokens >= 100, "{p:?}");
}

#[test]
fn text_a_shape_forces_is_written_not_sampled_and_the_answers_keep_their_shape() {
    let _model = crate::real_model_lock();
    let line = serde_json::json!({
        "type": "object",
        "properties": {
            "end_conversation": {"type": "boolean"},
            "topic": {"type": "integer", "minimum": 1, "maximum": 3},
            "utterance": {"type": "string", "minLength": 1, "maxLength": 160}
        },
        "required": ["end_conversation", "topic", "utterance"],
        "additionalProperties": false
    });
    let places: Vec<String> = ["Hobbs Cafe", "Oak Hill College", "The Rose and Crown Pub"]
        .map(String::from)
        .to_vec();
    let reqs = || {
        vec![
            (
                "Klaus says to Maria: \"Did you hear that Sam is running for mayor?\" Maria can talk about the election (topic 1), the weather (topic 2) or lunch (topic 3). What does Maria say?".to_string(),
                OutputShape::Json(line.clone()),
                100,
            ),
            (
                "Where would Maria go for a coffee?".to_string(),
                OutputShape::Choice(places.clone()),
                32,
            ),
            (
                "Rate from 1 (mundane) to 10 (poignant): brushing teeth; a break-up; winning an election.".to_string(),
                OutputShape::Integers { count: 3, min: 1, max: 10 },
                16,
            ),
            (
                "On a scale of 1 (mundane) to 10 (poignant), rate a friend's funeral.".to_string(),
                OutputShape::Integer { min: 1, max: 10 },
                4,
            ),
        ]
    };
    let run = |write_forced: bool| {
        let rt = LlmRuntime::start(&asked_once(4, write_forced));
        let before = simulacra::llm::backend::llama::model_work();
        let replies: Vec<Reply> = submit_all(&rt, reqs())
            .into_iter()
            .map(|(_, r)| r)
            .collect();
        (
            replies,
            simulacra::llm::backend::llama::model_work().since(&before),
        )
    };
    let (on, w_on) = run(true);
    let (off, w_off) = run(false);
    for (r, how) in on
        .iter()
        .zip(["written"; 4])
        .chain(off.iter().zip(["sampled"; 4]))
    {
        eprintln!("{how}: {:?}", r.value);
        assert!(
            !r.is_fallback(),
            "every answer in its shape: {:?}",
            r.source
        );
    }
    for r in [&on[0], &off[0]] {
        let LlmValue::Json(v) = &r.value else {
            panic!("{:?}", r.value)
        };
        validate_schema(&line, v, "$").unwrap();
    }
    // The line's keys and commas, the brackets and commas of the ratings, the rest of the
    // place's name; every answer ended the moment it was whole.
    assert!(w_on.forced >= 15, "{w_on:?}");
    assert!(w_on.ended_whole >= 4, "{w_on:?}");
    assert_eq!((w_off.forced, w_off.ended_whole), (0, 0), "{w_off:?}");
    // Where the model chose before anything was forced, the value is the one it chose alone.
    assert_eq!(on[1].value, off[1].value, "the same place");
    assert_eq!(on[3].value, off[3].value, "the same rating");
    eprintln!(
        "decodes with forced text written: {}, sampling every token: {}; tokens sampled {} against {}",
        w_on.decodes, w_off.decodes, w_on.generated, w_off.generated
    );
}

/// Conversation turns as the game asks them (the first 32 of the 25-resident morning, 07:00 to
/// 09:00, recorded from a build that sampled every token), each answered once with the text its
/// shape forces written and once with every token sampled: the model ends about as many turns
/// either way. (Forced text laid out in one spacing, `{"end_conversation":` where the model writes
/// `{ "end_conversation" :`, made it end 52 of 56 such turns instead of 17.)
#[test]
fn forced_text_leaves_the_models_decision_to_end_a_conversation_as_it_was() {
    let _model = crate::real_model_lock();
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/converse-turns.jsonl"
    );
    let turns: Vec<WorkKind> = std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let c: serde_json::Value = serde_json::from_str(l).unwrap();
            WorkKind::Chat {
                messages: serde_json::from_value(c["messages"].clone()).unwrap(),
                shape: serde_json::from_value(c["shape"].clone()).unwrap(),
                sampling: serde_json::from_value(c["sampling"].clone()).unwrap(),
            }
        })
        .collect();
    assert_eq!(turns.len(), 32);
    let ask = |write_forced: bool| {
        let mut cfg = asked_once(16, write_forced);
        if let BackendConfig::Llama(l) = &mut cfg.backends[0] {
            l.context = 16 * 3072;
        }
        let rt = LlmRuntime::start(&cfg);
        for k in &turns {
            rt.submit(Submission {
                id: rt.next_id(),
                agent: None,
                purpose: "test".into(),
                kind: std::sync::Arc::new(k.clone()),
                priority: Priority::Normal,
                fallback: None,
            });
        }
        let replies: Vec<Reply> = (0..turns.len())
            .map(|_| rt.recv_timeout(Duration::from_secs(600)).expect("a reply"))
            .collect();
        let ends = replies
            .iter()
            .filter(|r| matches!(&r.value, LlmValue::Json(v) if v["end_conversation"] == true))
            .count();
        let failed = replies.iter().filter(|r| r.is_fallback()).count();
        (ends, failed)
    };
    let (ends_on, failed_on) = ask(true);
    let (ends_off, failed_off) = ask(false);
    eprintln!(
        "turns ended: {ends_on} of 32 with forced text written, {ends_off} sampling every token; fail-safes {failed_on} and {failed_off}"
    );
    assert!(
        ends_on.abs_diff(ends_off) <= 4,
        "{ends_on} against {ends_off}"
    );
    assert!(
        failed_on <= failed_off + 2,
        "{failed_on} against {failed_off}"
    );
}

#[test]
fn packed_batches_answer_mixed_work_in_shape_each_to_its_own_caller() {
    let _model = crate::real_model_lock();
    let mut cfg = asked_once(8, true);
    if let BackendConfig::Llama(l) = &mut cfg.backends[0] {
        l.pack_batches = true;
    }
    let rt = LlmRuntime::start(&cfg);
    // Two waves of mixed work (prompts of different lengths, choices, numbers, objects, text):
    // slots reading unequal prompts take equal shares and the rest later, and the second wave
    // takes the lowest free slots, its prefixes copied in from where they are cached.
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"subtasks": {"type": "array", "minItems": 2, "maxItems": 4,
            "items": {"type": "string", "minLength": 3, "maxLength": 30}}},
        "required": ["subtasks"], "additionalProperties": false
    });
    for wave in 0..2 {
        let reqs: Vec<(String, OutputShape, u32)> = (0..10)
            .map(|k| {
                let filler = ACTIVITIES[..1 + (k * 3 + wave) % ACTIVITIES.len()].join(", ");
                let prompt = format!("{} usually does these things: {filler}.", PEOPLE[k]);
                match k % 4 {
                    0 => {
                        let options = vec![format!("yes-{k}"), format!("no-{k}")];
                        (
                            format!("{prompt} Will they go out today?"),
                            OutputShape::Choice(options),
                            12,
                        )
                    }
                    1 => (
                        format!("{prompt} Rate their day from 1 to 10."),
                        OutputShape::Integer { min: 1, max: 10 },
                        8,
                    ),
                    2 => (
                        format!("{prompt} Break their morning into subtasks."),
                        OutputShape::Json(schema.clone()),
                        120,
                    ),
                    _ => (
                        format!("{prompt} Say hello to them."),
                        OutputShape::Text,
                        24,
                    ),
                }
            })
            .collect();
        let pairs = submit_all(&rt, reqs);
        assert_eq!(pairs.len(), 10);
        for (k, (_, r)) in pairs.iter().enumerate() {
            assert!(!r.is_fallback(), "wave {wave}, request {k}: {:?}", r.value);
            match (&r.value, k % 4) {
                (LlmValue::Choice(_, text), 0) => {
                    assert!(text.ends_with(&format!("-{k}")), "request {k} got {text}")
                }
                (LlmValue::Integer(n), 1) => assert!((1..=10).contains(n)),
                (LlmValue::Json(v), 2) => validate_schema(&schema, v, "$").unwrap(),
                (LlmValue::Text(t), 3) => assert!(!t.trim().is_empty()),
                (v, _) => panic!("request {k}: {v:?}"),
            }
        }
    }
}

/// What batch-invariant batches rest on (`llama::worker::layout`): a prompt read in one piece
/// or two (each of two tokens or more), and a generated token with one companion or three,
/// give the same numbers bit for bit. Then, through the runtime, an answer given alone is the answer given in a crowd of
/// other requests, with the prompt's prefix warm in the cache or not.
#[test]
fn a_tokens_numbers_do_not_depend_on_what_shares_its_batch_when_none_is_alone() {
    use llama_cpp_2::context::params::LlamaContextParams;
    use llama_cpp_2::llama_batch::LlamaBatch;
    use llama_cpp_2::token::LlamaToken;
    let _model = crate::real_model_lock();
    let model = simulacra::llm::backend::llama::load_model(&crate::model_path()).unwrap();
    let backend = simulacra::llm::backend::llama::global_backend().unwrap();
    let params = LlamaContextParams::default()
        .with_n_ctx(std::num::NonZeroU32::new(4096))
        .with_n_batch(512)
        .with_n_ubatch(512)
        .with_n_seq_max(4)
        .with_kv_unified(false)
        .with_n_threads(2)
        .with_n_threads_batch(2)
        .with_flash_attention_policy(simulacra::llm::backend::llama::flash_attention(false));
    let mut ctx = model.new_context(backend, params).unwrap();
    let text = "Isabella Rodriguez opens Hobbs Cafe at eight and plans a party for the town.";
    let toks = model.vocab().tokenize(text.as_bytes(), true, false);
    let n = toks.len();
    let mut batch = LlamaBatch::new(512, 1);
    // Sequence 0 reads the prompt in one piece, sequence 1 in two (the last of 2 tokens); each
    // with the logits of its last two tokens (a pass's outputs are rows of the last layer too).
    for (i, t) in toks.iter().enumerate() {
        batch.add(*t, i as i32, &[0], i + 2 >= n).unwrap();
    }
    ctx.decode(&mut batch).unwrap();
    let whole = ctx.get_logits_ith(batch.n_tokens() - 1).to_vec();
    for (from, to) in [(0, n - 2), (n - 2, n)] {
        batch.clear();
        for (i, t) in toks.iter().enumerate().take(to).skip(from) {
            batch.add(*t, i as i32, &[1], i + 2 >= n).unwrap();
        }
        ctx.decode(&mut batch).unwrap();
    }
    let in_two = ctx.get_logits_ith(batch.n_tokens() - 1).to_vec();
    let same = |a: &[f32], b: &[f32]| a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits());
    assert!(same(&whole, &in_two), "a prompt read in one piece or two");
    // The next token of sequence 0: alone, with one companion, with three.
    let next = toks[3];
    let mut logits_with = |companions: i32| {
        batch.clear();
        batch.add(next, n as i32, &[0], true).unwrap();
        // (Each at the next position of its sequence: sequence 1 holds the prompt.)
        let at = |c: i32| if c == 1 { n as i32 } else { 0 };
        for c in 1..=companions {
            batch.add(LlamaToken::new(0), at(c), &[c], true).unwrap();
        }
        ctx.decode(&mut batch).unwrap();
        let l = ctx.get_logits_ith(0).to_vec();
        let _ = ctx.kv_cache_seq_rm(0, Some(n as u32), None);
        for c in 1..=companions {
            let _ = ctx.kv_cache_seq_rm(c, Some(at(c) as u32), None);
        }
        l
    };
    let one = logits_with(1);
    let three = logits_with(3);
    assert!(same(&one, &three), "one companion or three");
    // (Alone, the weights take the one-row kernels; on this x86 machine they sum in the same
    // order as the tiled ones, which need not hold on every CPU: companions keep it so.)

    // Through the runtime.
    let rt = LlmRuntime::start(&asked_once(8, true));
    let question = || {
        (
            "Describe what Isabella does at Hobbs Cafe in the morning.".to_string(),
            OutputShape::Text,
            40,
        )
    };
    let answer = |pairs: Vec<(Submission, Reply)>, k: usize| match &pairs[k].1.value {
        LlmValue::Text(t) => t.clone(),
        v => panic!("{v:?}"),
    };
    let alone = answer(submit_all(&rt, vec![question()]), 0);
    let crowd: Vec<(String, OutputShape, u32)> = (0..6)
        .map(|k| {
            let filler = ACTIVITIES[..1 + k % ACTIVITIES.len()].join(", ");
            let prompt = format!("{} usually does these things: {filler}.", PEOPLE[k]);
            if k % 2 == 0 {
                (format!("{prompt} Say hello."), OutputShape::Text, 30)
            } else {
                (
                    format!("{prompt} Rate the day."),
                    OutputShape::Integer { min: 1, max: 10 },
                    6,
                )
            }
        })
        .collect();
    let mut reqs = crowd.clone();
    reqs.insert(3, question());
    let warm = answer(submit_all(&rt, reqs), 3);
    assert_eq!(warm, alone, "in a crowd, its prompt warm in the cache");
    let cold_rt = LlmRuntime::start(&asked_once(8, true));
    let mut reqs = crowd;
    reqs.push(question());
    let cold = answer(submit_all(&cold_rt, reqs), 6);
    assert_eq!(cold, alone, "in a crowd, cold");
}

/// A GPU the config names that is not there (in this build, or on this machine) leaves the model
/// on the CPU, saying why in one line where the backend's state is shown, and it answers as ever.
#[test]
fn a_gpu_that_is_not_there_leaves_the_model_on_the_cpu_saying_why() {
    let _model = crate::real_model_lock();
    let mut cfg = llama(1);
    if let BackendConfig::Llama(l) = &mut cfg.backends[0] {
        l.gpu_device = Some("No Such GPU 9000".into());
    }
    let rt = LlmRuntime::start(&cfg);
    ask_as(&rt, "t", "You are terse.", "Say hello.", 8);
    model_replies(&rt, 1);
    // The state is published a moment after the answer.
    let mut seen = None;
    for _ in 0..50 {
        let s = rt.status.lock().unwrap().backends[0].clone();
        if s.note.is_some() {
            seen = Some(s);
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let s = seen.expect("the backend says where its model runs");
    assert_eq!(s.note.as_deref(), Some("CPU (GPU failed)"), "{s:?}");
    assert!(
        s.detail
            .contains("on the CPU: no GPU matches gpu_device \"No Such GPU 9000\""),
        "{}",
        s.detail
    );
}
