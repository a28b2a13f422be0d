//! The embedded model on a GPU through llama.cpp's Vulkan backend, tested where there is no GPU:
//! Mesa's lavapipe is a Vulkan device that runs on the CPU. Built only with `--features vulkan`
//! (docs/gpu.md has the command); the default build and CI do not build the backend.
//!
//! A 3-resident morning runs on the default model on the CPU, recorded; of its chat requests,
//! the least costly of each kind (lavapipe reads about 7 prompt tokens a second and writes 3) is
//! asked again, greedy, of the model with all its layers on lavapipe and of the model on the CPU,
//! the same way (all at once, eight slots), and the answers are compared.

use simulacra::SimPlugin;
use simulacra::config::GameConfig;
use simulacra::llm::Priority;
use simulacra::llm::backend::WorkKind;
use simulacra::llm::config::{BackendConfig, LlamaConfig, LlmConfig};
use simulacra::llm::model_files::{Recorded, read_recording};
use simulacra::llm::runtime::{LlmRuntime, Submission};
use simulacra::{headless_app, run_steps};
use std::time::{Duration, Instant};

/// The chat model alone, on `gpu_layers` (None: all that fit on the GPU offered).
fn chat_only(gpu_layers: Option<u32>) -> LlmConfig {
    LlmConfig {
        backends: vec![BackendConfig::Llama(LlamaConfig {
            model: crate::model_path().to_string_lossy().into(),
            slots: 8,
            context: 16384,
            threads: Some(2),
            gpu_layers,
            ..Default::default()
        })],
        cache: false,
        retries: 0,
        timeout_s: 1800.0,
        ..Default::default()
    }
}

/// Asks every request of a runtime on `cfg` at once; the answers' texts in the requests' order,
/// and the detail its backend gave (where the model runs).
fn answers(cfg: &LlmConfig, asks: &[WorkKind]) -> (Vec<String>, String) {
    let rt = LlmRuntime::start(cfg);
    let subs: Vec<Submission> = asks
        .iter()
        .map(|k| Submission {
            id: rt.next_id(),
            agent: None,
            purpose: "gpu_check".into(),
            kind: std::sync::Arc::new(k.clone()),
            priority: Priority::Normal,
            fallback: None,
        })
        .collect();
    let ids: Vec<u64> = subs.iter().map(|s| s.id).collect();
    rt.submit_many(subs);
    let mut got = std::collections::HashMap::new();
    while got.len() < ids.len() {
        let r = rt
            .recv_timeout(Duration::from_secs(1800))
            .expect("every request is answered");
        assert!(!r.is_fallback(), "a model answer, not a fail-safe: {r:?}");
        got.insert(r.id, r.text.clone());
    }
    let detail = rt.status.lock().unwrap().backends[0].detail.clone();
    (ids.iter().map(|i| got.remove(i).unwrap()).collect(), detail)
}

#[test]
fn the_three_resident_mornings_answers_on_lavapipe_are_the_cpus() {
    // llama.cpp's Vulkan backend leaves a CPU device out unless it is named; this must come
    // before anything starts llama.cpp in this process (each test is a process of its own).
    // SAFETY: no other thread runs yet in this test's process.
    unsafe { std::env::set_var("GGML_VK_VISIBLE_DEVICES", "0") };
    let _model = crate::real_model_lock();
    let gpus = simulacra::llm::backend::llama::gpu::gpus();
    assert!(
        gpus.iter().any(|g| g.description.contains("llvmpipe")),
        "lavapipe offered as a GPU: {gpus:?} (Mesa's Vulkan drivers installed?)"
    );

    // The morning on the CPU, recorded.
    let dir = crate::temp_dir("gpu-lavapipe");
    let n3 = std::fs::read_to_string(
        simulacra::data::data_root().join("config/scenarios/the_ville_n3.ron"),
    )
    .unwrap();
    let file = dir.join("n3_0700.ron");
    std::fs::write(
        &file,
        n3.replace("start: \"2023-02-13 00:00\"", "start: \"2023-02-13 07:00\""),
    )
    .unwrap();
    let recording = dir.join("recorded.jsonl");
    let mut llm = crate::memory_real::real_llm();
    for b in &mut llm.backends {
        if let BackendConfig::Llama(c) = b {
            c.gpu_layers = Some(0);
        }
    }
    llm.record = Some(recording.to_string_lossy().into());
    let sim = SimPlugin::load(
        file.to_str().unwrap(),
        Some("smallville"),
        GameConfig {
            llm,
            ..Default::default()
        },
    )
    .expect("the scenario loads");
    let mut app = headless_app(sim);
    run_steps(&mut app, 360);
    drop(app);

    // Its chat requests: of each question, the one with the least to read and write (lavapipe
    // reads a few prompt tokens a second), the eight cheapest.
    let bytes = std::fs::read(&recording).unwrap();
    let (lines, _) = read_recording(&bytes, &recording).unwrap();
    let mut by_purpose: std::collections::BTreeMap<String, (usize, WorkKind)> = Default::default();
    let mut chats = 0;
    for (key, answer) in &lines {
        let v: serde_json::Value = serde_json::from_str(key).unwrap();
        let (Some(chat), Recorded::Text(text)) = (v.get("chat"), answer) else {
            continue;
        };
        chats += 1;
        let kind: WorkKind = serde_json::from_value(serde_json::json!({ "Chat": chat })).unwrap();
        let WorkKind::Chat { messages, .. } = &kind else {
            continue;
        };
        // What is asked: the last message's last line (each kind of request ends on its own).
        let purpose = messages
            .last()
            .and_then(|m| m.content.trim_end().lines().last())
            .unwrap_or("")
            .chars()
            .take(60)
            .collect::<String>();
        let cost = messages.iter().map(|m| m.content.len()).sum::<usize>() + 8 * text.len();
        let e = by_purpose
            .entry(purpose)
            .or_insert((usize::MAX, kind.clone()));
        if cost < e.0 {
            *e = (cost, kind);
        }
    }
    let mut picked: Vec<(usize, WorkKind)> = by_purpose.into_values().collect();
    picked.sort_by_key(|(c, _)| *c);
    let asks: Vec<WorkKind> = picked.into_iter().take(8).map(|(_, k)| k).collect();
    assert!(
        chats >= 20 && asks.len() >= 4,
        "the morning asked the model ({chats} chat requests, {} kinds)",
        asks.len()
    );

    let t = Instant::now();
    let (on_gpu, gpu_detail) = answers(&chat_only(None), &asks);
    let gpu_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let (on_cpu, cpu_detail) = answers(&chat_only(Some(0)), &asks);
    let cpu_s = t.elapsed().as_secs_f64();
    assert!(
        gpu_detail.contains("llvmpipe") && gpu_detail.contains("layers"),
        "the model ran on lavapipe: {gpu_detail}"
    );
    assert!(cpu_detail.ends_with("on the CPU"), "{cpu_detail}");

    let differ: Vec<usize> = (0..asks.len())
        .filter(|&i| on_gpu[i] != on_cpu[i])
        .collect();
    println!(
        "{} of the morning's {chats} chat requests: {} answered alike on lavapipe and on the CPU, {} differ; {gpu_s:.0} s on lavapipe, {cpu_s:.0} s on the CPU",
        asks.len(),
        asks.len() - differ.len(),
        differ.len()
    );
    for &i in differ.iter().take(5) {
        // Where the two first part: a token the two devices' sums put in a different order.
        let common = on_gpu[i]
            .chars()
            .zip(on_cpu[i].chars())
            .take_while(|(a, b)| a == b)
            .count();
        println!(
            "  differs after {common} characters:\n    lavapipe: {:?}\n    CPU:      {:?}",
            on_gpu[i].chars().take(common + 60).collect::<String>(),
            on_cpu[i].chars().take(common + 60).collect::<String>()
        );
    }
    // Greedy answers part only where two tokens are all but tied; most must not.
    assert!(
        differ.len() * 4 <= asks.len(),
        "{} of {} answers differ between lavapipe and the CPU",
        differ.len(),
        asks.len()
    );
}
