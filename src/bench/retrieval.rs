//! `simulacra bench retrieval`: how fast retrieval scores a large stream, how fast each
//! available embedder embeds, and how well each one retrieves on a labelled set (recall@5).
//! The set format is documented in `bench/README.md`; `--set FILE` takes anyone's own.

use crate::data_error::{DataError, SourceLines, read_ron};
use crate::llm::backend::WorkKind;
use crate::llm::config::{BackendConfig, BertConfig, LlamaConfig, LlmConfig, ScriptedConfig};
use crate::llm::runtime::{LlmRuntime, Submission};
use crate::llm::{Embedding, LlmValue, Priority};
use crate::memory::retrieve::{RetrievalParams, retrieve};
use crate::memory::stream::{MemoryStream, NewNode, NodeKind};
use crate::sim::time::GameTime;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// A labelled set: memories by id, and queries with the ids relevant to each.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetrievalSet {
    /// A name for reports.
    pub name: String,
    /// Memory id → text.
    pub memories: BTreeMap<String, String>,
    /// The queries.
    pub queries: Vec<LabelledQuery>,
}

/// One query and what should be found for it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabelledQuery {
    /// The query text.
    pub text: String,
    /// Ids of the memories that answer it.
    pub relevant: Vec<String>,
}

/// Loads and checks a set: every relevant id must exist, every query must have one.
pub fn load_set(path: &Path) -> Result<RetrievalSet, DataError> {
    let (set, src): (RetrievalSet, String) = read_ron(path)?;
    let lines = SourceLines::new(&src);
    if set.memories.is_empty() || set.queries.is_empty() {
        return Err(DataError::new(
            path,
            0,
            "",
            "the set needs memories and queries",
        ));
    }
    for (i, q) in set.queries.iter().enumerate() {
        let at = lines.offset_of_quoted(&q.text, 0);
        if q.relevant.is_empty() {
            return Err(DataError::new(
                path,
                lines.line_of_offset(at),
                format!("queries[{i}].relevant"),
                "lists no memory",
            ));
        }
        for r in &q.relevant {
            if !set.memories.contains_key(r) {
                return Err(DataError::new(
                    path,
                    lines.line_of_quoted(r, at),
                    format!("queries[{i}].relevant"),
                    format!("no memory with id \"{r}\""),
                ));
            }
        }
    }
    Ok(set)
}

/// A small deterministic generator (xorshift), so the synthetic stream is the same every run.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
}

fn random_unit_vector(rng: &mut Rng, dim: usize) -> Vec<f32> {
    let v: Vec<f32> = (0..dim).map(|_| rng.unit() * 2.0 - 1.0).collect();
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-9);
    v.into_iter().map(|x| x / n).collect()
}

/// Times retrieval (top `k`) over synthetic streams of `n` memories with `dim`-d vectors
/// spread over 30 game days; returns every round's time. With `streams` > 1 the streams are
/// built side by side (their vectors interleaved in memory, as a large town's residents'
/// are) and the rounds query them in turn, so each finds its stream out of the cache.
pub fn time_retrieval(
    n: usize,
    dim: usize,
    k: usize,
    rounds: u32,
    streams: usize,
) -> Vec<Duration> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let start = GameTime::parse("2023-02-13 00:00").expect("valid date");
    let mut all: Vec<MemoryStream> = (0..streams.max(1))
        .map(|_| MemoryStream::default())
        .collect();
    // One name shared by every vector, as the runtime's are.
    let model: std::sync::Arc<str> = "bench".into();
    for i in 0..n {
        let at = start.plus_secs((i as i64 * 30 * 86_400) / n as i64);
        let kind = if i % 5 == 0 {
            NodeKind::Thought
        } else {
            NodeKind::Event
        };
        for stream in &mut all {
            stream.add(
                kind,
                NewNode {
                    description: format!("memory {i}"),
                    importance: Some(1 + (rng.next() % 10) as u8),
                    embedding: Some(Embedding {
                        model: model.clone(),
                        vector: random_unit_vector(&mut rng, dim).into(),
                    }),
                    ..Default::default()
                },
                at,
            );
        }
    }
    let now = start.plus_secs(30 * 86_400);
    let params = RetrievalParams::default();
    (0..rounds as usize)
        .map(|r| {
            let q = Embedding {
                model: model.clone(),
                vector: random_unit_vector(&mut rng, dim).into(),
            };
            let stream = &all[r % all.len()];
            let t = Instant::now();
            let found = retrieve(stream, Some(&q), now, &params, k);
            let d = t.elapsed();
            assert_eq!(found.len(), k.min(n));
            d
        })
        .collect()
}

/// An embedder's results on a set.
#[derive(Debug, Clone)]
pub struct EmbedderReport {
    /// Model identity.
    pub model: String,
    /// Vector size.
    pub dim: usize,
    /// Sentences per second, embedding the whole set at once (none for scripted vectors).
    pub per_second: Option<f64>,
    /// Mean recall@5 over the queries.
    pub recall_at_5: f64,
    /// Queries whose best-ranked memory is relevant.
    pub top1: usize,
}

/// Embeds texts through a runtime (all submitted at once), in order.
fn embed_all(rt: &LlmRuntime, texts: &[String]) -> Result<Vec<Embedding>, String> {
    let ids: Vec<u64> = texts
        .iter()
        .map(|t| {
            let id = rt.next_id();
            rt.submit(Submission {
                id,
                agent: None,
                purpose: "embed".into(),
                kind: std::sync::Arc::new(WorkKind::Embed { text: t.clone() }),
                priority: Priority::Normal,
                fallback: None,
            });
            id
        })
        .collect();
    let mut got: BTreeMap<u64, Embedding> = BTreeMap::new();
    while got.len() < ids.len() {
        let r = rt
            .recv_timeout(Duration::from_secs(600))
            .ok_or("no answer from the embedder in 10 minutes")?;
        if r.is_fallback() {
            return Err(format!("the embedder failed: {:?}", r.source));
        }
        let LlmValue::Embedding(e) = r.value else {
            return Err("not an embedding".into());
        };
        got.insert(r.id, e);
    }
    Ok(ids
        .iter()
        .map(|i| got.remove(i).expect("each id answered"))
        .collect())
}

/// Measures one embedder (a runtime whose first backend makes the embeddings) on a set.
pub fn measure_embedder(
    config: &LlmConfig,
    set: &RetrievalSet,
    timed: bool,
) -> Result<EmbedderReport, String> {
    let rt = LlmRuntime::start(config);
    // Warm up (loading the model happens on first use).
    embed_all(&rt, &["warming up".to_string()])?;
    let mem_ids: Vec<&String> = set.memories.keys().collect();
    let mut texts: Vec<String> = set.memories.values().cloned().collect();
    texts.extend(set.queries.iter().map(|q| q.text.clone()));
    let t = Instant::now();
    let vectors = embed_all(&rt, &texts)?;
    let secs = t.elapsed().as_secs_f64();
    let (mems, queries) = vectors.split_at(set.memories.len());
    let mut recall_sum = 0.0;
    let mut top1 = 0;
    for (q, qv) in set.queries.iter().zip(queries) {
        let mut ranked: Vec<(f32, &String)> = mems
            .iter()
            .zip(&mem_ids)
            .map(|(m, id)| (qv.cosine(m).unwrap_or(0.0), *id))
            .collect();
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
        let top5: Vec<&String> = ranked.iter().take(5).map(|(_, id)| *id).collect();
        let hit = q.relevant.iter().filter(|r| top5.contains(r)).count();
        recall_sum += hit as f64 / q.relevant.len() as f64;
        if q.relevant.contains(ranked[0].1) {
            top1 += 1;
        }
    }
    Ok(EmbedderReport {
        model: vectors
            .first()
            .map(|v| v.model.to_string())
            .unwrap_or_default(),
        dim: vectors.first().map(|v| v.dim()).unwrap_or(0),
        per_second: timed.then(|| texts.len() as f64 / secs.max(1e-9)),
        recall_at_5: recall_sum / set.queries.len() as f64,
        top1,
    })
}

/// Runs the whole benchmark and prints it.
pub fn run(set_path: &Path, memories: usize, rounds: u32, threads: u32) -> Result<(), String> {
    let set = load_set(set_path).map_err(|e| e.to_string())?;
    let profile = if cfg!(debug_assertions) {
        "debug build, dependencies optimised"
    } else {
        "release build"
    };
    let ms = |times: Vec<Duration>| {
        let mut ms: Vec<f64> = times.iter().map(|d| d.as_secs_f64() * 1000.0).collect();
        ms.sort_by(f64::total_cmp);
        ms
    };
    let warm = ms(time_retrieval(memories, 384, 30, rounds.max(1), 1));
    println!(
        "retrieval over {memories} memories (384-d embeddings), top 30, {} rounds: median {:.2} ms, best {:.2} ms ({profile}; target < 2 ms)",
        warm.len(),
        warm[warm.len() / 2],
        warm[0]
    );
    // A large town's evening: 2,500 memories a resident, each query on another resident's.
    const COLD: usize = 64;
    let cold = ms(time_retrieval(
        2_500,
        384,
        30,
        (rounds.max(1) as usize).max(COLD) as u32,
        COLD,
    ));
    println!(
        "retrieval over 2500 memories, each of {} rounds on another of {COLD} streams (out of the cache, as in a large town): median {:.3} ms, best {:.3} ms",
        cold.len(),
        cold[cold.len() / 2],
        cold[0]
    );
    println!(
        "embedders on {} ({} memories, {} queries), {threads} thread(s):",
        set.name,
        set.memories.len(),
        set.queries.len()
    );
    println!(
        "{:<44} {:>5} {:>12} {:>9} {:>6}",
        "embedder", "dim", "sentences/s", "recall@5", "top-1"
    );
    let bert = LlmConfig {
        backends: vec![BackendConfig::Bert(BertConfig {
            threads: Some(threads),
            ..Default::default()
        })],
        embedding_backend: None,
        cache: false,
        timeout_s: 600.0,
        ..Default::default()
    };
    let llama = LlmConfig {
        backends: vec![BackendConfig::Llama(LlamaConfig {
            threads: Some(threads),
            slots: 4,
            context: 4096,
            ..Default::default()
        })],
        embedding_backend: None,
        cache: false,
        timeout_s: 600.0,
        ..Default::default()
    };
    let scripted = LlmConfig {
        backends: vec![BackendConfig::Scripted(ScriptedConfig {
            name: "scripted".into(),
            ..Default::default()
        })],
        embedding_backend: None,
        cache: false,
        ..Default::default()
    };
    for (label, cfg, timed) in [
        ("all-MiniLM-L6-v2 (default)", bert, true),
        ("SmolLM2-135M mean-pooled (llama.cpp)", llama, true),
        ("bag of words (scripted backend)", scripted, false),
    ] {
        match measure_embedder(&cfg, &set, timed) {
            Ok(r) => println!(
                "{:<44} {:>5} {:>12} {:>9.3} {:>3}/{}",
                format!("{label} [{}]", r.model),
                r.dim,
                r.per_second
                    .map(|p| format!("{p:.1}"))
                    .unwrap_or_else(|| "-".into()),
                r.recall_at_5,
                r.top1,
                set.queries.len()
            ),
            Err(e) => println!("{label:<44} unavailable: {e}"),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_set_loads_and_bad_sets_are_reported() {
        let set = load_set(&crate::data::data_root().join("bench/retrieval_set.ron")).unwrap();
        assert!(set.queries.len() >= 40, "{} queries", set.queries.len());
        let dir = std::env::temp_dir().join(format!("simulacra-set-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("bad.ron");
        std::fs::write(&p, "(\n name: \"x\",\n memories: { \"a\": \"text\" },\n queries: [\n  (text: \"q\", relevant: [\"b\"]),\n ],\n)\n").unwrap();
        let e = load_set(&p).unwrap_err();
        assert_eq!(e.line, 5, "{e}");
        assert!(e.to_string().contains("no memory with id \"b\""), "{e}");
    }

    #[test]
    fn retrieval_timing_runs() {
        let t = time_retrieval(200, 16, 10, 2, 1);
        assert_eq!(t.len(), 2);
        let t = time_retrieval(50, 16, 10, 5, 3);
        assert_eq!(t.len(), 5);
    }
}
