//! `simulacra bench llm`: throughput of the runtime against a bare llama.cpp decode loop on
//! the same model, prompts and greedy sampling (so both generate the very same tokens), with
//! 1, 4, 8 and 16 concurrent requests; then the effect of shared-prefix reuse.

use crate::llm::backend::WorkKind;
use crate::llm::backend::llama::{default_threads, global_backend, render_prompt, resolve_model};
use crate::llm::config::{BackendConfig, LlamaConfig, LlmConfig, Weights};
use crate::llm::runtime::{LlmRuntime, Submission};
use crate::llm::types::{ChatMessage, OutputShape, Priority, Sampling};
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaChatTemplate;
use llama_cpp_2::sampling::LlamaSampler;
use std::num::NonZeroU32;
use std::time::{Duration, Instant};

/// One measurement.
#[derive(Debug, Clone, Copy)]
pub struct Throughput {
    /// Prompt tokens processed.
    pub prompt_tokens: u64,
    /// Tokens generated.
    pub gen_tokens: u64,
    /// Wall time of the whole batch (prompts and generation).
    pub wall: Duration,
    /// Wall time of the prompt phase (bare loop only).
    pub prompt_wall: Option<Duration>,
}

impl Throughput {
    /// Generated tokens per second over the whole wall time.
    pub fn gen_per_s(&self) -> f64 {
        self.gen_tokens as f64 / self.wall.as_secs_f64()
    }
}

const TOPICS: [&str; 16] = [
    "the bakery",
    "a rainy day",
    "the park pond",
    "an old piano",
    "the college library",
    "a lost cat",
    "the pub quiz",
    "a garden",
    "the town election",
    "a birthday",
    "the supply store",
    "a morning run",
    "a new neighbour",
    "the cafe counter",
    "a winter walk",
    "a letter",
];

/// The bench prompts (distinct, so no prefix is shared unless asked).
pub fn prompts(n: usize) -> Vec<Vec<ChatMessage>> {
    (0..n)
        .map(|i| {
            vec![ChatMessage::user(format!(
                "Write a short story about {}. Story {i}:",
                TOPICS[i % TOPICS.len()]
            ))]
        })
        .collect()
}

/// KV cache tokens per sequence for requests of up to `max_tokens` (prompts are short).
fn per_seq(max_tokens: u32) -> u32 {
    (max_tokens + 256).div_ceil(256) * 256
}

/// The bare loop: one context, `n` sequences each with its own part of the KV cache (as the
/// runtime's default `split_kv`), greedy, stopping each at end of generation. Also where the
/// model ran ([`Placement::line`](crate::llm::backend::llama::gpu::Placement::line)).
pub fn bare_loop(
    model_path: &str,
    threads: u32,
    n: usize,
    max_tokens: u32,
    gpu_layers: Option<u32>,
) -> Result<(Throughput, String), String> {
    let backend = global_backend()?;
    let placed = LlamaConfig {
        gpu_layers,
        ..Default::default()
    };
    crate::llm::backend::llama::gpu::with_placed(
        &resolve_model(model_path),
        &placed,
        |model, placement| {
            bare_loop_on(model, backend, threads, n, max_tokens).map(|t| (t, placement.line()))
        },
    )
}

/// [`bare_loop`] on a model loaded.
fn bare_loop_on(
    model: &llama_cpp_2::model::LlamaModel,
    backend: &llama_cpp_2::llama_backend::LlamaBackend,
    threads: u32,
    n: usize,
    max_tokens: u32,
) -> Result<Throughput, String> {
    let template = model
        .chat_template(None)
        .or_else(|_| LlamaChatTemplate::new("chatml"))
        .map_err(|e| e.to_string())?;
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(n as u32 * per_seq(max_tokens)))
        .with_n_batch(512)
        .with_n_ubatch(512)
        .with_n_seq_max(n as u32)
        .with_kv_unified(n == 1)
        .with_n_threads(threads as i32)
        .with_n_threads_batch(threads as i32)
        .with_flash_attention_policy(crate::llm::backend::llama::flash_attention(
            LlamaConfig::default().flash_attention,
        ));
    let mut ctx = model
        .new_context(backend, params)
        .map_err(|e| e.to_string())?;
    let vocab = model.vocab();
    let toks: Vec<Vec<_>> = prompts(n)
        .iter()
        .map(|m| {
            render_prompt(model, &template, m).map(|p| vocab.tokenize(p.as_bytes(), false, true))
        })
        .collect::<Result<_, _>>()?;
    let prompt_tokens: u64 = toks.iter().map(|t| t.len() as u64).sum();
    let mut batch = LlamaBatch::new(512, 1);
    let start = Instant::now();
    // Prompts, packed into batches of up to 512 tokens: every token but each prompt's last,
    // then one batch of all the last tokens, whose logits give every first generated token.
    let flat: Vec<(usize, usize)> = toks
        .iter()
        .enumerate()
        .flat_map(|(s, t)| (0..t.len() - 1).map(move |k| (s, k)))
        .collect();
    for chunk in flat.chunks(512) {
        batch.clear();
        for &(s, k) in chunk {
            batch
                .add(toks[s][k], k as i32, &[s as i32], false)
                .map_err(|e| e.to_string())?;
        }
        ctx.decode(&mut batch).map_err(|e| e.to_string())?;
    }
    let mut samplers: Vec<LlamaSampler> = (0..n).map(|_| LlamaSampler::greedy()).collect();
    let mut pos: Vec<i32> = toks.iter().map(|t| t.len() as i32 - 1).collect();
    let mut last: Vec<_> = toks.iter().map(|t| *t.last().expect("non-empty")).collect();
    let mut alive = vec![true; n];
    let mut generated = vec![0u32; n];
    let mut prompt_wall = None;
    while alive.iter().any(|a| *a) {
        batch.clear();
        let mut idx = vec![-1i32; n];
        for s in 0..n {
            if alive[s] {
                batch
                    .add(last[s], pos[s], &[s as i32], true)
                    .map_err(|e| e.to_string())?;
                idx[s] = batch.n_tokens() - 1;
            }
        }
        ctx.decode(&mut batch).map_err(|e| e.to_string())?;
        prompt_wall.get_or_insert_with(|| start.elapsed());
        for s in 0..n {
            if !alive[s] {
                continue;
            }
            pos[s] += 1;
            let t = samplers[s].sample(&ctx, idx[s]);
            if vocab.is_eog(t) {
                alive[s] = false;
                continue;
            }
            generated[s] += 1;
            last[s] = t;
            if generated[s] >= max_tokens {
                alive[s] = false;
            }
        }
    }
    Ok(Throughput {
        prompt_tokens,
        gen_tokens: generated.iter().map(|g| *g as u64).sum(),
        wall: start.elapsed(),
        prompt_wall,
    })
}

fn llama_config(
    model_path: &str,
    threads: u32,
    slots: u32,
    prefix_cache: bool,
    max_tokens: u32,
    gpu_layers: Option<u32>,
) -> LlmConfig {
    LlmConfig {
        backends: vec![BackendConfig::Llama(LlamaConfig {
            model: model_path.into(),
            threads: Some(threads),
            slots,
            context: (slots * per_seq(max_tokens)).max(8192),
            prefix_cache,
            // `run` has chosen the file already (the Q8_0 copy, or the file with --as-file).
            weights: Weights::AsFile,
            gpu_layers,
            ..Default::default()
        })],
        embedding_backend: None,
        cache: false,
        timeout_s: 600.0,
        ..Default::default()
    }
}

/// Waits until the runtime's llama backend has loaded (or failed).
fn wait_ready(rt: &LlmRuntime) -> Result<(), String> {
    let t0 = Instant::now();
    loop {
        let st = rt.status.lock().unwrap().clone();
        if let Some(b) = st.backends.first() {
            match b.health {
                crate::llm::backend::Health::Ok => return Ok(()),
                crate::llm::backend::Health::Down => return Err(b.detail.clone()),
                _ => {}
            }
        }
        if t0.elapsed() > Duration::from_secs(120) {
            return Err("the model did not load in 120 s".into());
        }
        // Ask the router to publish its status.
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The same prompts through the runtime (`n` submitted at once, `n` slots).
pub fn through_runtime(
    model_path: &str,
    threads: u32,
    n: usize,
    max_tokens: u32,
    gpu_layers: Option<u32>,
) -> Result<Throughput, String> {
    let rt = LlmRuntime::start(&llama_config(
        model_path, threads, n as u32, false, max_tokens, gpu_layers,
    ));
    // A tiny warm-up request makes the router publish status and the model load.
    run_batch(&rt, vec![vec![ChatMessage::user("Hi")]], 1)?;
    wait_ready(&rt)?;
    let before = rt.stats.lock().unwrap().total();
    let start = Instant::now();
    run_batch(&rt, prompts(n), max_tokens)?;
    let wall = start.elapsed();
    let after = rt.stats.lock().unwrap().total();
    Ok(Throughput {
        prompt_tokens: after.prompt_tokens - before.prompt_tokens,
        gen_tokens: after.gen_tokens - before.gen_tokens,
        wall,
        prompt_wall: None,
    })
}

fn run_batch(rt: &LlmRuntime, batch: Vec<Vec<ChatMessage>>, max_tokens: u32) -> Result<(), String> {
    let n = batch.len();
    for m in batch {
        rt.submit(Submission {
            id: rt.next_id(),
            agent: None,
            purpose: "bench".into(),
            kind: std::sync::Arc::new(WorkKind::Chat {
                messages: m,
                shape: OutputShape::Text,
                sampling: Sampling::greedy(max_tokens),
            }),
            priority: Priority::Normal,
            fallback: None,
        });
    }
    for _ in 0..n {
        let r = rt
            .recv_timeout(Duration::from_secs(600))
            .ok_or("no reply in 600 s")?;
        if let crate::llm::runtime::ReplySource::Fallback(why) = &r.source
            && !why.contains("empty answer")
        {
            return Err(format!("request failed: {why}"));
        }
    }
    Ok(())
}

/// Shared-prefix reuse: `n` requests with the same long identity block, one at a time, with
/// and without the prefix cache. Returns (seconds with, seconds without, cached tokens).
pub fn prefix_reuse(
    model_path: &str,
    threads: u32,
    n: usize,
    gpu_layers: Option<u32>,
) -> Result<(f64, f64, u64), String> {
    let identity = "Name: Isabella Rodriguez\nAge: 34\nInnate traits: friendly, outgoing, hospitable\nLearned traits: Isabella Rodriguez is a cafe owner of Hobbs Cafe who loves to make people feel welcome. She is always looking for ways to make the cafe a place where people can come to relax and enjoy themselves.\nCurrently: Isabella Rodriguez is planning a Valentine's Day party at Hobbs Cafe with her customers on February 14th, 2023 from 5pm to 7pm. She is gathering party material, and is telling everyone to join the party at Hobbs Cafe on February 14th, 2023, from 5pm to 7pm.\nLifestyle: Isabella goes to bed around 11pm, wakes up around 6am.\n".repeat(2);
    let mut out = Vec::new();
    let mut cached = 0;
    for cache_on in [true, false] {
        let rt = LlmRuntime::start(&llama_config(
            model_path, threads, 4, cache_on, 64, gpu_layers,
        ));
        run_batch(&rt, vec![vec![ChatMessage::user("Hi")]], 1)?;
        wait_ready(&rt)?;
        let start = Instant::now();
        for i in 0..n {
            let msgs = vec![
                ChatMessage::system(identity.clone()),
                ChatMessage::user(format!(
                    "On a scale of 1 to 10, how poignant is event {i}: Isabella sees a customer at the counter?"
                )),
            ];
            rt.submit(Submission {
                id: rt.next_id(),
                agent: None,
                purpose: "bench".into(),
                kind: std::sync::Arc::new(WorkKind::Chat {
                    messages: msgs,
                    shape: OutputShape::Integer { min: 1, max: 10 },
                    sampling: Sampling::greedy(4),
                }),
                priority: Priority::Normal,
                fallback: None,
            });
            rt.recv_timeout(Duration::from_secs(600))
                .ok_or("no reply")?;
        }
        out.push(start.elapsed().as_secs_f64());
        if cache_on {
            cached = rt.stats.lock().unwrap().total().cached_prompt_tokens;
        }
    }
    Ok((out[0], out[1], cached))
}

/// Runs the whole benchmark and prints the table.
pub fn run(
    model_path: &str,
    threads: Option<u32>,
    max_tokens: u32,
    levels: &[usize],
    rounds: u32,
    as_file: bool,
    gpu_layers: Option<u32>,
) -> Result<(), String> {
    let rounds = rounds.max(1);
    let threads = threads.unwrap_or_else(default_threads);
    let path = resolve_model(model_path);
    crate::llm::backend::llama::check_model_file(&path)?;
    let weights = if as_file {
        Weights::AsFile
    } else {
        Weights::Q8_0
    };
    let read = crate::llm::backend::llama::weights::prepare(&path, weights, threads);
    if read != path {
        println!("weights read from {}", read.display());
    }
    let read = read.to_string_lossy();
    let model_path: &str = &read;
    println!(
        "model {model_path} | {threads} thread(s) | up to {max_tokens} tokens per request, greedy | best of {rounds}"
    );
    println!("CPU: {}", cpu_summary());
    let mut one = None;
    let best = |a: Throughput, b: Throughput| if b.gen_per_s() > a.gen_per_s() { b } else { a };
    for &n in levels {
        // Best of `rounds` for each, alternating, so a busy moment of the machine hurts neither.
        let (mut bare, placed) = bare_loop(model_path, threads, n, max_tokens, gpu_layers)?;
        if Some(n) == levels.first().copied() {
            // Where the first bare loop's model ran, then the table.
            println!("model {placed}");
            println!(
                "{:>4} {:>14} {:>14} {:>14} {:>9} {:>12}",
                "n", "bare gen tok/s", "bare prompt/s", "runtime tok/s", "rt/bare", "gen tokens"
            );
        }
        let mut rt = through_runtime(model_path, threads, n, max_tokens, gpu_layers)?;
        for _ in 1..rounds {
            bare = best(
                bare,
                bare_loop(model_path, threads, n, max_tokens, gpu_layers)?.0,
            );
            rt = best(
                rt,
                through_runtime(model_path, threads, n, max_tokens, gpu_layers)?,
            );
        }
        let prompt_rate = bare
            .prompt_wall
            .map(|p| bare.prompt_tokens as f64 / p.as_secs_f64())
            .unwrap_or(0.0);
        println!(
            "{:>4} {:>14.1} {:>14.1} {:>14.1} {:>8.0}% {:>6}/{:<6}",
            n,
            bare.gen_per_s(),
            prompt_rate,
            rt.gen_per_s(),
            100.0 * rt.gen_per_s() / bare.gen_per_s(),
            rt.gen_tokens,
            bare.gen_tokens
        );
        if n == 1 {
            one = Some(rt.gen_per_s());
        }
        if n == 8
            && let Some(o) = one
        {
            println!(
                "     runtime at 8 concurrent = {:.2}× one at a time",
                rt.gen_per_s() / o
            );
        }
    }
    let (with, without, cached) = prefix_reuse(model_path, threads, 12, gpu_layers)?;
    println!(
        "shared 2×identity prefix, 12 sequential importance requests: {with:.2} s with prefix reuse, {without:.2} s without ({:.2}×), {cached} prompt tokens reused",
        without / with
    );
    Ok(())
}

/// What the CPU offers (for the README's note on build options).
pub fn cpu_summary() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = info
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .unwrap_or("?")
        .trim()
        .to_string();
    let flags = info.lines().find(|l| l.starts_with("flags")).unwrap_or("");
    let has = |f: &str| flags.split_whitespace().any(|x| x == f);
    let feats: Vec<&str> = [
        "avx2",
        "fma",
        "f16c",
        "avx512f",
        "avx512bw",
        "avx512vl",
        "avx512_vnni",
        "avx_vnni",
    ]
    .into_iter()
    .filter(|f| has(f))
    .collect();
    format!("{model} [{}]", feats.join(" "))
}
