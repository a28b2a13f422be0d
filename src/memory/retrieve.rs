//! Retrieval as the paper defines it: each candidate memory gets a recency, an importance and a
//! relevance to the query; each component is min-max normalised over the candidates (all equal
//! → 0.5), weighted (α = 1 each by default) and summed; the top k are returned.
//!
//! Recency is `decay^(game hours since the memory was last accessed)` (the paper). The original
//! code instead ranked candidates by last access, oldest first, and gave the i-th `decay^i`,
//! which favours the *least* recently used memory; [`RecencyMode::OriginalRank`] reproduces it
//! so results can be compared. A pure function: the caller marks the returned memories as
//! accessed ([`MemoryStream::touch`]).

use super::stream::{MemoryNode, MemoryStream, NodeId, ScoreBreakdown};
use crate::llm::Embedding;
use crate::sim::time::GameTime;
use serde::{Deserialize, Serialize};

/// How recency is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum RecencyMode {
    /// `decay^(game hours since last access)` (the paper).
    #[default]
    GameHours,
    /// The original code: candidates sorted by last access ascending, the i-th gets `decay^i`.
    OriginalRank,
}

/// Retrieval weights and settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetrievalParams {
    /// Weight of recency.
    pub recency_weight: f32,
    /// Weight of relevance.
    pub relevance_weight: f32,
    /// Weight of importance.
    pub importance_weight: f32,
    /// Recency decay per game hour (per rank in the original mode).
    pub decay: f32,
    /// How recency is computed.
    pub recency: RecencyMode,
}

impl Default for RetrievalParams {
    fn default() -> Self {
        Self {
            recency_weight: 1.0,
            relevance_weight: 1.0,
            importance_weight: 1.0,
            decay: 0.995,
            recency: RecencyMode::GameHours,
        }
    }
}

/// A retrieved memory with its normalised components and score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scored {
    /// The memory.
    pub id: NodeId,
    /// Its scores.
    pub breakdown: ScoreBreakdown,
}

/// Dot product: AVX2/FMA when the CPU has them (checked once at run time), else eight
/// independent sums (fast even without auto-vectorisation in the debug profile).
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        if simd::available() {
            // SAFETY: the CPU supports AVX2 and FMA (checked above).
            return unsafe { simd::dot_avx2(a, b) };
        }
    }
    dot_portable(a, b)
}

#[cfg(target_arch = "x86_64")]
mod simd {
    use std::arch::x86_64::*;
    use std::sync::OnceLock;

    static HAS: OnceLock<bool> = OnceLock::new();

    pub fn available() -> bool {
        *HAS.get_or_init(|| is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"))
    }

    /// # Safety
    /// The CPU must support AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn dot_avx2(a: &[f32], b: &[f32]) -> f32 {
        let n = a.len().min(b.len());
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let mut acc0 = _mm256_setzero_ps();
        let mut acc1 = _mm256_setzero_ps();
        let mut i = 0;
        // SAFETY: every load reads 8 floats at i..i+8 ≤ n of both slices.
        unsafe {
            while i + 16 <= n {
                acc0 =
                    _mm256_fmadd_ps(_mm256_loadu_ps(pa.add(i)), _mm256_loadu_ps(pb.add(i)), acc0);
                acc1 = _mm256_fmadd_ps(
                    _mm256_loadu_ps(pa.add(i + 8)),
                    _mm256_loadu_ps(pb.add(i + 8)),
                    acc1,
                );
                i += 16;
            }
            while i + 8 <= n {
                acc0 =
                    _mm256_fmadd_ps(_mm256_loadu_ps(pa.add(i)), _mm256_loadu_ps(pb.add(i)), acc0);
                i += 8;
            }
        }
        let mut lanes = [0f32; 8];
        // SAFETY: `lanes` holds 8 floats.
        unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), _mm256_add_ps(acc0, acc1)) };
        let mut s: f32 = lanes.iter().sum();
        while i < n {
            s += a[i] * b[i];
            i += 1;
        }
        s
    }
}

/// Asks the CPU to bring `v` into its cache (a hint; nothing on other CPUs).
#[inline]
pub fn prefetch(v: &[f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // 16 floats to a 64-byte cache line.
        for line in v.chunks(16) {
            // SAFETY: a prefetch reads nothing and cannot fault; SSE is baseline on x86_64.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(line.as_ptr().cast()) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = v;
}

/// The dot product without SIMD intrinsics.
pub fn dot_portable(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut s = [0f32; 8];
    let chunks = n / 8;
    for c in 0..chunks {
        let (x, y) = (&a[c * 8..c * 8 + 8], &b[c * 8..c * 8 + 8]);
        for k in 0..8 {
            s[k] += x[k] * y[k];
        }
    }
    let mut tail = 0.0;
    for i in chunks * 8..n {
        tail += a[i] * b[i];
    }
    s.iter().sum::<f32>() + tail
}

/// Cosine of two vectors (0 when either is zero).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (na, nb) = (dot(a, a).sqrt(), dot(b, b).sqrt());
    if na > 0.0 && nb > 0.0 {
        dot(a, b) / (na * nb)
    } else {
        0.0
    }
}

/// The top `k` memories for a query embedding (`None`: relevance plays no part).
/// Memories without an embedding compatible with the query count as unrelated (cosine 0).
/// Candidates are events and thoughts (a conversation is found through the event that
/// summarises it), not "is idle", not expired.
pub fn retrieve(
    stream: &MemoryStream,
    query: Option<&Embedding>,
    now: GameTime,
    p: &RetrievalParams,
    k: usize,
) -> Vec<Scored> {
    retrieve_where(stream, query, now, p, k, |_| true)
}

/// A candidate's raw components: (recency, relevance, importance).
type Raw = (f32, f32, f32);

/// [`retrieve`] among the memories `keep` lets through (an interview under an ablation leaves
/// out reflections or plans). One pass over the stream gathers every candidate's components.
pub fn retrieve_where(
    stream: &MemoryStream,
    query: Option<&Embedding>,
    now: GameTime,
    p: &RetrievalParams,
    k: usize,
    keep: impl Fn(&MemoryNode) -> bool,
) -> Vec<Scored> {
    if k == 0 {
        return Vec::new();
    }
    let (cands, mut raw) = candidates(stream, now, p, &keep);
    if let Some(rel) = relevances(&cands, &[normalised(query)]).pop().flatten() {
        for (r, x) in raw.iter_mut().zip(rel) {
            r.1 = x;
        }
    }
    best(&cands, &raw, now, p, k)
}

/// A query's model and its vector at unit length (stored vectors are unit length, the stream
/// normalises them, so cosine is a dot product with it); `None` without a usable vector.
type Normalised<'a> = Option<(&'a std::sync::Arc<str>, Vec<f32>)>;

fn normalised(query: Option<&Embedding>) -> Normalised<'_> {
    query.and_then(|q| {
        let n = dot(&q.vector, &q.vector).sqrt();
        (n > 0.0).then(|| (&q.model, q.vector.iter().map(|x| x / n).collect()))
    })
}

/// The candidates (events and thoughts, alive, let through by `keep`) with their recency and
/// importance; relevance is left at 0.
fn candidates<'a>(
    stream: &'a MemoryStream,
    now: GameTime,
    p: &RetrievalParams,
    keep: &impl Fn(&MemoryNode) -> bool,
) -> (Vec<&'a MemoryNode>, Vec<Raw>) {
    let hours_recency = p.recency == RecencyMode::GameHours;
    let mut cands: Vec<&MemoryNode> = Vec::with_capacity(stream.len());
    let mut raw: Vec<Raw> = Vec::with_capacity(stream.len());
    for n in stream.searchable() {
        if !n.alive(now) || !keep(n) {
            continue;
        }
        let recency = if hours_recency {
            let hours = ((now.0 - n.last_accessed.0).max(0)) as f32 / 3600.0;
            p.decay.powf(hours)
        } else {
            0.0
        };
        cands.push(n);
        raw.push((recency, 0.0, n.importance as f32));
    }
    if !hours_recency {
        // Ascending by last access (ties: older id first), the i-th (1-based) gets decay^i.
        let mut order: Vec<usize> = (0..cands.len()).collect();
        order.sort_by_key(|&i| (cands[i].last_accessed, cands[i].id));
        for (rank, &i) in order.iter().enumerate() {
            raw[i].0 = p.decay.powi(rank as i32 + 1);
        }
    }
    (cands, raw)
}

/// Each query's relevance of every candidate (0 where a memory has no vector of the query's
/// model), in one pass: each vector is its own allocation, far from the last in a large town's
/// memory, so it is read once for all the queries and the next ones are fetched while one is
/// read.
fn relevances(cands: &[&MemoryNode], queries: &[Normalised<'_>]) -> Vec<Option<Vec<f32>>> {
    let mut out: Vec<Option<Vec<f32>>> = queries
        .iter()
        .map(|q| q.as_ref().map(|_| vec![0.0; cands.len()]))
        .collect();
    if out.iter().all(Option::is_none) {
        return out;
    }
    fn any_vector(n: &MemoryNode) -> Option<&[f32]> {
        n.embedding.as_ref().map(|e| &e.vector[..])
    }
    // Two ahead: over a large town's streams, a third faster than none (`bench retrieval`).
    const AHEAD: usize = 2;
    for v in cands.iter().take(AHEAD).filter_map(|n| any_vector(n)) {
        prefetch(v);
    }
    for (i, n) in cands.iter().enumerate() {
        if let Some(v) = cands.get(i + AHEAD).and_then(|n| any_vector(n)) {
            prefetch(v);
        }
        let Some(e) = &n.embedding else { continue };
        for (q, rel) in queries.iter().zip(out.iter_mut()) {
            if let (Some((model, q)), Some(rel)) = (q, rel)
                && e.dim() == q.len()
                && e.is_of(model)
            {
                rel[i] = dot(q, &e.vector);
            }
        }
    }
    out
}

/// The best `k` candidates by the weighted sum of their min-max normalised components.
fn best(
    cands: &[&MemoryNode],
    raw: &[Raw],
    now: GameTime,
    p: &RetrievalParams,
    k: usize,
) -> Vec<Scored> {
    if cands.is_empty() {
        return Vec::new();
    }
    // Min-max normalisation (all equal → 0.5), folded into the scoring so that only the top k
    // get a full breakdown.
    let span = |part: fn(&Raw) -> f32| {
        let (lo, hi) = raw
            .iter()
            .map(part)
            .fold((f32::INFINITY, f32::NEG_INFINITY), |(l, h), x| {
                (l.min(x), h.max(x))
            });
        let range = hi - lo;
        if range.abs() < 1e-9 || !range.is_finite() {
            (lo, 0.0)
        } else {
            (lo, 1.0 / range)
        }
    };
    let norm = |x: f32, (lo, inv): (f32, f32)| if inv == 0.0 { 0.5 } else { (x - lo) * inv };
    let (sr, sv, si) = (span(|r| r.0), span(|r| r.1), span(|r| r.2));
    // Best first; ties go to the newer memory.
    let better = |a: &(f32, u32), b: &(f32, u32)| {
        b.0.total_cmp(&a.0)
            .then(cands[b.1 as usize].id.cmp(&cands[a.1 as usize].id))
    };
    // The best k, kept sorted while the candidates are scored (most fall below the k-th at
    // once: no list of every candidate's score to select from).
    let mut order: Vec<(f32, u32)> = Vec::with_capacity(k + 1);
    for (i, r) in raw.iter().enumerate() {
        let score = p.recency_weight * norm(r.0, sr)
            + p.relevance_weight * norm(r.1, sv)
            + p.importance_weight * norm(r.2, si);
        let x = (score, i as u32);
        if order.len() == k
            && order
                .last()
                .is_some_and(|w| better(w, &x) != std::cmp::Ordering::Greater)
        {
            continue;
        }
        let at = order.partition_point(|y| better(y, &x) == std::cmp::Ordering::Less);
        order.insert(at, x);
        order.truncate(k);
    }
    order
        .into_iter()
        .map(|(score, i)| {
            let (r, i) = (raw[i as usize], i as usize);
            let breakdown = ScoreBreakdown {
                recency: norm(r.0, sr),
                relevance: norm(r.1, sv),
                importance: norm(r.2, si),
                score,
                at: now,
            };
            Scored {
                id: cands[i].id,
                breakdown,
            }
        })
        .collect()
}

/// Retrieves and marks the results as accessed (what cognition systems call).
pub fn retrieve_and_touch(
    stream: &mut MemoryStream,
    query: Option<&Embedding>,
    now: GameTime,
    p: &RetrievalParams,
    k: usize,
) -> Vec<Scored> {
    let found = retrieve(stream, query, now, p, k);
    let marks: Vec<(NodeId, ScoreBreakdown)> = found.iter().map(|s| (s.id, s.breakdown)).collect();
    stream.touch(&marks, now);
    found
}

/// [`retrieve_and_touch`] for several queries in turn at one time (a reflection's questions):
/// the same results and marks as asking each in order, with each memory's vector read once for
/// all of them (relevance does not depend on the marks; recency is taken again after each).
pub fn retrieve_many_and_touch(
    stream: &mut MemoryStream,
    queries: &[Option<&Embedding>],
    now: GameTime,
    p: &RetrievalParams,
    k: usize,
) -> Vec<Vec<Scored>> {
    if k == 0 {
        return vec![Vec::new(); queries.len()];
    }
    let queries: Vec<Normalised<'_>> = queries.iter().map(|q| normalised(*q)).collect();
    let all = relevances(&candidates(stream, now, p, &|_| true).0, &queries);
    let mut out = Vec::with_capacity(all.len());
    for rel in all {
        let found = {
            let (cands, mut raw) = candidates(stream, now, p, &|_| true);
            for (r, x) in raw.iter_mut().zip(rel.into_iter().flatten()) {
                r.1 = x;
            }
            best(&cands, &raw, now, p, k)
        };
        let marks: Vec<(NodeId, ScoreBreakdown)> =
            found.iter().map(|s| (s.id, s.breakdown)).collect();
        stream.touch(&marks, now);
        out.push(found);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::stream::{NewNode, NodeKind};

    fn t(h: f64) -> GameTime {
        GameTime::parse("2023-02-13 00:00")
            .unwrap()
            .plus_secs((h * 3600.0) as i64)
    }

    fn emb(v: &[f32]) -> Embedding {
        Embedding {
            model: "m".into(),
            vector: v.into(),
        }
    }

    fn add(m: &mut MemoryStream, desc: &str, at: f64, importance: u8, v: &[f32]) -> NodeId {
        m.add(
            NodeKind::Event,
            NewNode {
                description: desc.into(),
                importance: Some(importance),
                embedding: Some(emb(v)),
                ..Default::default()
            },
            t(at),
        )
    }

    #[test]
    fn empty_stream_and_zero_k() {
        let m = MemoryStream::default();
        assert!(retrieve(&m, None, t(0.0), &RetrievalParams::default(), 5).is_empty());
        let mut m = MemoryStream::default();
        add(&mut m, "a", 0.0, 5, &[1.0, 0.0]);
        assert!(retrieve(&m, None, t(0.0), &RetrievalParams::default(), 0).is_empty());
    }

    #[test]
    fn one_node_gets_half_of_everything() {
        let mut m = MemoryStream::default();
        let a = add(&mut m, "a", 0.0, 7, &[1.0, 0.0]);
        let r = retrieve(
            &m,
            Some(&emb(&[0.0, 1.0])),
            t(5.0),
            &RetrievalParams::default(),
            3,
        );
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].id, a);
        let b = r[0].breakdown;
        assert_eq!(
            (b.recency, b.relevance, b.importance, b.score),
            (0.5, 0.5, 0.5, 1.5)
        );
    }

    #[test]
    fn all_equal_components_are_half() {
        let mut m = MemoryStream::default();
        for _ in 0..3 {
            add(&mut m, "same", 1.0, 5, &[1.0, 0.0]);
        }
        let r = retrieve(
            &m,
            Some(&emb(&[1.0, 0.0])),
            t(2.0),
            &RetrievalParams::default(),
            3,
        );
        assert!(r.iter().all(|s| s.breakdown.score == 1.5), "{r:?}");
        // Ties go to the newest.
        assert_eq!(r.iter().map(|s| s.id.0).collect::<Vec<_>>(), vec![3, 2, 1]);
    }

    #[test]
    fn hand_worked_example_in_game_hours() {
        // Three memories, queried at hour 10:
        //  a: accessed at hour 0 (10 h ago), importance 2, cosine 1.0
        //  b: accessed at hour 8 (2 h ago),  importance 8, cosine 0.0
        //  c: accessed at hour 10 (now),     importance 5, cosine 0.6
        let mut m = MemoryStream::default();
        let a = add(&mut m, "a", 0.0, 2, &[1.0, 0.0]);
        let b = add(&mut m, "b", 8.0, 8, &[0.0, 1.0]);
        let c = add(&mut m, "c", 10.0, 5, &[0.6, 0.8]);
        let r = retrieve(
            &m,
            Some(&emb(&[1.0, 0.0])),
            t(10.0),
            &RetrievalParams::default(),
            3,
        );
        // Raw recency 0.995^10 = 0.95111, 0.995^2 = 0.990025, 1 → normalised 0, 0.7960, 1.
        let ra = 0.0f32;
        let rb = (0.995f32.powi(2) - 0.995f32.powi(10)) / (1.0 - 0.995f32.powi(10));
        // Importance 2, 8, 5 → 0, 1, 0.5. Relevance 1, 0, 0.6 → 1, 0, 0.6.
        let want = [
            (a, ra + 1.0 + 0.0),
            (b, rb + 0.0 + 1.0),
            (c, 1.0 + 0.6 + 0.5),
        ];
        let got: Vec<(NodeId, f32)> = r.iter().map(|s| (s.id, s.breakdown.score)).collect();
        assert_eq!(got[0].0, c, "{got:?}");
        assert_eq!(got[1].0, b, "{got:?}");
        assert_eq!(got[2].0, a, "{got:?}");
        for (id, score) in want {
            let s = got.iter().find(|g| g.0 == id).unwrap().1;
            assert!((s - score).abs() < 1e-4, "{id}: {s} vs {score}");
        }
        assert!((rb - 0.79608).abs() < 1e-3, "{rb}");
    }

    #[test]
    fn weights_change_the_order() {
        let mut m = MemoryStream::default();
        let old_relevant = add(&mut m, "old", 0.0, 1, &[1.0, 0.0]);
        let new_important = add(&mut m, "new", 10.0, 10, &[0.0, 1.0]);
        let q = emb(&[1.0, 0.0]);
        let r = retrieve(&m, Some(&q), t(10.0), &RetrievalParams::default(), 1);
        assert_eq!(
            r[0].id, new_important,
            "recency + importance outweigh relevance at α = 1"
        );
        let p = RetrievalParams {
            relevance_weight: 3.0,
            ..Default::default()
        };
        assert_eq!(retrieve(&m, Some(&q), t(10.0), &p, 1)[0].id, old_relevant);
    }

    #[test]
    fn original_rank_mode_favours_the_least_recently_accessed() {
        let mut m = MemoryStream::default();
        let old = add(&mut m, "old", 0.0, 5, &[1.0, 0.0]);
        let new = add(&mut m, "new", 10.0, 5, &[1.0, 0.0]);
        let q = emb(&[1.0, 0.0]);
        let paper = retrieve(&m, Some(&q), t(10.0), &RetrievalParams::default(), 1);
        assert_eq!(paper[0].id, new);
        let orig = retrieve(
            &m,
            Some(&q),
            t(10.0),
            &RetrievalParams {
                recency: RecencyMode::OriginalRank,
                ..Default::default()
            },
            1,
        );
        assert_eq!(orig[0].id, old, "the original code's recency is inverted");
    }

    #[test]
    fn touching_updates_last_access_and_scores() {
        let mut m = MemoryStream::default();
        let a = add(&mut m, "a", 0.0, 5, &[1.0, 0.0]);
        let found = retrieve_and_touch(&mut m, None, t(3.0), &RetrievalParams::default(), 1);
        assert_eq!(found[0].id, a);
        let n = m.get(a).unwrap();
        assert_eq!(n.last_accessed, t(3.0));
        assert_eq!(n.last_score.unwrap().score, 1.5);
    }

    #[test]
    fn several_queries_at_once_find_and_mark_what_asking_in_turn_does() {
        // Memories of varied age, importance and direction; the queries overlap, so the
        // marks made for one change the recency seen by the next.
        let fill = |m: &mut MemoryStream| {
            for i in 0..40 {
                let a = i as f32 * 0.37;
                let v = [a.cos(), a.sin(), (i % 3) as f32 * 0.2];
                add(m, &format!("m{i}"), i as f64 * 0.25, (i % 9 + 1) as u8, &v);
            }
            // One without a vector and one of another model: relevance 0 for both.
            m.add(
                NodeKind::Thought,
                NewNode {
                    description: "bare".into(),
                    importance: Some(6),
                    ..Default::default()
                },
                t(2.0),
            );
            m.add(
                NodeKind::Event,
                NewNode {
                    description: "foreign".into(),
                    importance: Some(8),
                    embedding: Some(Embedding {
                        model: "other".into(),
                        vector: [1.0, 0.0, 0.0][..].into(),
                    }),
                    ..Default::default()
                },
                t(3.0),
            );
        };
        let queries = [
            Some(emb(&[1.0, 0.2, 0.0])),
            None,
            Some(emb(&[0.9, 0.3, 0.1])),
            Some(emb(&[0.0, 0.0, 0.0])),
            Some(emb(&[-0.5, 1.0, 0.4])),
        ];
        for recency in [RecencyMode::GameHours, RecencyMode::OriginalRank] {
            let p = RetrievalParams {
                recency,
                ..Default::default()
            };
            let (mut one, mut many) = (MemoryStream::default(), MemoryStream::default());
            fill(&mut one);
            fill(&mut many);
            let now = t(12.0);
            let in_turn: Vec<Vec<Scored>> = queries
                .iter()
                .map(|q| retrieve_and_touch(&mut one, q.as_ref(), now, &p, 6))
                .collect();
            let refs: Vec<Option<&Embedding>> = queries.iter().map(Option::as_ref).collect();
            let at_once = retrieve_many_and_touch(&mut many, &refs, now, &p, 6);
            assert_eq!(at_once, in_turn, "{recency:?}");
            // A later query saw an earlier one's marks (it finds otherwise on a fresh stream).
            let mut fresh = MemoryStream::default();
            fill(&mut fresh);
            assert!(
                queries
                    .iter()
                    .zip(&in_turn)
                    .any(|(q, r)| retrieve(&fresh, q.as_ref(), now, &p, 6) != *r),
                "{recency:?}"
            );
            let marks = |m: &MemoryStream| {
                m.searchable()
                    .map(|n| (n.id, n.last_accessed, n.last_score))
                    .collect::<Vec<_>>()
            };
            assert_eq!(marks(&many), marks(&one));
        }
        let mut m = MemoryStream::default();
        fill(&mut m);
        let refs: Vec<Option<&Embedding>> = queries.iter().map(Option::as_ref).collect();
        let none = retrieve_many_and_touch(&mut m, &refs, t(12.0), &RetrievalParams::default(), 0);
        assert_eq!(none.len(), queries.len());
        assert!(none.iter().all(Vec::is_empty));
    }

    #[test]
    fn chats_idle_expired_and_foreign_embeddings() {
        let mut m = MemoryStream::default();
        m.add(
            NodeKind::Chat,
            NewNode {
                description: "a chat".into(),
                ..Default::default()
            },
            t(0.0),
        );
        m.add(
            NodeKind::Event,
            NewNode {
                description: "Maria is idle".into(),
                predicate: "is idle".into(),
                ..Default::default()
            },
            t(0.0),
        );
        m.add(
            NodeKind::Thought,
            NewNode {
                description: "expired".into(),
                expiry: Some(t(1.0)),
                ..Default::default()
            },
            t(0.0),
        );
        let foreign = m.add(
            NodeKind::Event,
            NewNode {
                description: "x".into(),
                embedding: Some(Embedding {
                    model: "other".into(),
                    vector: vec![1.0, 0.0].into(),
                }),
                ..Default::default()
            },
            t(0.0),
        );
        let same = add(&mut m, "y", 0.0, 4, &[1.0, 0.0]);
        let r = retrieve(
            &m,
            Some(&emb(&[1.0, 0.0])),
            t(2.0),
            &RetrievalParams::default(),
            10,
        );
        let ids: Vec<NodeId> = r.iter().map(|s| s.id).collect();
        assert_eq!(ids, vec![same, foreign]);
        assert_eq!(
            r[1].breakdown.relevance, 0.0,
            "another model's vector is never compared"
        );
    }

    #[test]
    fn dot_and_cosine() {
        let a: Vec<f32> = (0..19).map(|i| i as f32).collect();
        assert_eq!(dot(&a, &a), (0..19).map(|i| (i * i) as f32).sum::<f32>());
        for n in [0, 3, 8, 16, 17, 384, 385] {
            let x: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
            let y: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos()).collect();
            assert!((dot(&x, &y) - dot_portable(&x, &y)).abs() < 1e-3, "n = {n}");
        }
        assert!((cosine(&[1.0, 1.0], &[2.0, 2.0]) - 1.0).abs() < 1e-6);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
    }
}
