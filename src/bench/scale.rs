//! `simulacra bench scale`: a generated town of 100, 300 or 1,000 residents (or any sizes) run
//! headless against a pool of endpoints: stand-in servers the bench starts itself (answers of
//! every shape after a delay from a throughput model, no model behind them; see
//! `bench::serve::standin`), or real OpenAI-compatible servers. Per size and number of endpoints it
//! reports game hours per wall hour, the share of wall time the simulation itself took
//! (everything but waiting for answers), requests in flight per endpoint over time, how often a
//! resident's request went to its own endpoint (prefix affinity), the stand-ins' prefix-cache
//! hits, peak memory and the time to save the town.

use crate::bench::serve::standin::{StandIn, ThroughputModel};
use crate::config::GameConfig;
use crate::llm::Llm;
use crate::llm::backend::EndpointStatus;
use crate::llm::config::{BackendConfig, LlmConfig, OpenAiConfig};
use crate::sim::clock::{SimClock, StepGate};
use crate::{SimPlugin, headless_app};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Instant;

/// What to measure.
#[derive(Debug, Clone)]
pub struct ScaleBench {
    /// Town sizes (residents).
    pub sizes: Vec<usize>,
    /// Numbers of endpoints to try at each size.
    pub endpoints: Vec<usize>,
    /// The stand-ins' throughput model.
    pub model: ThroughputModel,
    /// Requests in flight per endpoint (default: the model's batch).
    pub concurrency: Option<u32>,
    /// Keep each resident on its own endpoint while it has room.
    pub affinity: bool,
    /// Game hours measured.
    pub hours: f64,
    /// When the measured hours begin (the day's plans are made then).
    pub from: crate::sim::time::GameTime,
    /// Seed of the towns and casts.
    pub seed: u64,
    /// Real servers (base URLs ending in /v1) instead of stand-ins, and their model name.
    pub servers: Option<(Vec<String>, String)>,
    /// Where the generated towns, casts and the save go.
    pub out: PathBuf,
    /// A saved town to continue instead of generated ones (its size and time are used).
    pub load: Option<PathBuf>,
}

/// One measured run.
#[derive(Debug, Clone)]
pub struct ScaleRun {
    /// Residents.
    pub residents: usize,
    /// Endpoints in the pool.
    pub endpoints: usize,
    /// Game hours run.
    pub game_hours: f64,
    /// Wall seconds.
    pub wall_s: f64,
    /// Wall seconds the steps waited for answers.
    pub waited_s: f64,
    /// Chat requests asked for.
    pub chats: u64,
    /// Embeddings asked for.
    pub embeds: u64,
    /// Answers that were the fail-safe.
    pub fallbacks: u64,
    /// Mean requests in flight per endpoint over the run.
    pub mean_in_flight: f64,
    /// Each endpoint's state at the end.
    pub pool: Vec<EndpointStatus>,
    /// In flight on each endpoint, sampled each game minute: (wall seconds, per endpoint).
    pub timeline: Vec<(f64, Vec<usize>)>,
    /// The stand-ins' prefix-cache hits and misses (0, 0 for real servers).
    pub prefix: (u64, u64),
    /// Peak resident memory of this process so far, in MB.
    pub peak_mb: f64,
    /// Seconds to capture and write a save of the town, and its size in MB.
    pub save: (f64, f64),
    /// Residents' looks made and not made (nothing in view changed and all of it known).
    pub looks: (u64, u64),
    /// The simulation thread's time on a core and waiting for one, as shares of wall time
    /// (the own share counts both: on 2 cores the thread waits for the stand-ins and the router).
    pub sched: Option<(f64, f64)>,
    /// Times a blocked step woke to take the answers that had arrived.
    pub rounds: u64,
}

impl ScaleRun {
    /// Game hours per wall hour.
    pub fn pace(&self) -> f64 {
        self.game_hours / (self.wall_s / 3600.0).max(1e-9)
    }
    /// The share of wall time that was the simulation's own (not waiting for answers).
    pub fn sim_share(&self) -> f64 {
        ((self.wall_s - self.waited_s) / self.wall_s.max(1e-9)).clamp(0.0, 1.0)
    }
    /// Share of residents' requests sent to their own endpoint.
    pub fn affinity(&self) -> Option<f64> {
        let hits: u64 = self.pool.iter().map(|e| e.affinity_hits).sum();
        let all: u64 = hits + self.pool.iter().map(|e| e.affinity_misses).sum::<u64>();
        (all > 0).then(|| hits as f64 / all as f64)
    }
}

/// The generated town and cast for `residents` (written once into `out`, reused after).
pub fn town_files(out: &Path, residents: usize, seed: u64) -> Result<PathBuf, String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let map_path = out.join(format!("town-{residents}-seed{seed}.ron"));
    let cast_path = out.join(format!("cast-{residents}-seed{seed}.ron"));
    if cast_path.exists() && map_path.exists() {
        return Ok(cast_path);
    }
    let (text, map) = crate::sim::map::generate::generate_town(residents, seed, &map_path)
        .map_err(|e| e.to_string())?;
    std::fs::write(&map_path, text).map_err(|e| format!("{}: {e}", map_path.display()))?;
    let name = map_path.file_name().unwrap_or_default().to_string_lossy();
    let cast = crate::agent::cast::generate_cast(&map, &name, residents, seed)?;
    let text = crate::data_error::ron_text(&cast, 3, "Generated by `simulacra bench scale`.");
    std::fs::write(&cast_path, text).map_err(|e| format!("{}: {e}", cast_path.display()))?;
    Ok(cast_path)
}

/// The pool's LLM settings: one OpenAI-compatible backend over the endpoints, making the
/// embeddings too.
fn pool_config(urls: Vec<String>, model: &str, concurrency: u32, affinity: bool) -> LlmConfig {
    LlmConfig {
        backends: vec![BackendConfig::OpenAi(OpenAiConfig {
            name: "pool".into(),
            endpoints: urls,
            model: model.into(),
            concurrency,
            affinity,
            ..Default::default()
        })],
        embedding_backend: Some("pool".into()),
        timeout_s: 120.0,
        ..Default::default()
    }
}

/// Seconds this thread has run on a core and waited for one, from the kernel's scheduler
/// statistics (`/proc/thread-self/schedstat`; `None` where there are none).
fn thread_sched() -> Option<(f64, f64)> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let mut it = s.split_whitespace().map(|x| x.parse::<f64>().ok());
    Some((it.next()?? / 1e9, it.next()?? / 1e9))
}

/// The simulation thread's time on a core and waiting for one since `from`, as shares of `wall`.
fn sched_share(from: Option<(f64, f64)>, wall: f64) -> Option<(f64, f64)> {
    let (a, b) = (from?, thread_sched()?);
    let w = wall.max(1e-9);
    Some(((b.0 - a.0) / w, (b.1 - a.1) / w))
}

/// "; its thread ran on a core 4.0 % of the time and waited for one 1.2 %", or nothing.
fn sched_words(s: Option<(f64, f64)>) -> String {
    s.map_or(String::new(), |(on, queued)| {
        format!(
            " (its thread on a core {:.1} %, waiting for a core {:.1} %)",
            100.0 * on,
            100.0 * queued
        )
    })
}

fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Runs one size on one pool.
pub fn run_one(b: &ScaleBench, residents: usize, endpoints: usize) -> Result<ScaleRun, String> {
    let standins: Vec<StandIn> = match &b.servers {
        Some(_) => Vec::new(),
        None => (0..endpoints)
            .map(|_| StandIn::start(b.model).map_err(|e| format!("a stand-in server: {e}")))
            .collect::<Result<_, _>>()?,
    };
    let (urls, model) = match &b.servers {
        Some((urls, model)) => (
            urls.iter().take(endpoints).cloned().collect(),
            model.clone(),
        ),
        None => (
            standins.iter().map(|s| s.url.clone()).collect(),
            "stand-in".to_string(),
        ),
    };
    let concurrency = b.concurrency.unwrap_or(b.model.batch as u32);
    let config = GameConfig {
        llm: pool_config(urls, &model, concurrency, b.affinity),
        ..Default::default()
    };
    let sim = match &b.load {
        Some(dir) => SimPlugin::from_save(dir, config)?,
        None => {
            let cast = town_files(&b.out, residents, b.seed)?;
            let mut sim = SimPlugin::load(&cast.to_string_lossy(), None, config)
                .map_err(|e| e.to_string())?;
            sim.scenario.start = b.from;
            sim
        }
    };
    let residents = sim.scenario.residents.len();
    let mut app = headless_app(sim);
    // People spawned (and a saved town put into them) before the clock starts: loading a save
    // is not the simulation's running.
    app.update();
    let sec = app.world().resource::<SimClock>().sec_per_step as f64;
    let total = (b.hours * 3600.0 / sec) as u64;
    let per_minute = ((60.0 / sec) as u64).max(1);
    let t = Instant::now();
    let sched0 = thread_sched();
    let mut timeline = Vec::new();
    let mut done = 0;
    let mut last_said = Instant::now();
    while done < total {
        let n = per_minute.min(total - done);
        crate::run_steps(&mut app, n);
        done += n;
        let st = app.world().resource::<Llm>().status();
        let flights: Vec<usize> = st
            .backends
            .first()
            .map(|p| p.endpoints.iter().map(|e| e.in_flight).collect())
            .unwrap_or_default();
        timeline.push((t.elapsed().as_secs_f64(), flights));
        if last_said.elapsed().as_secs() >= 30 {
            last_said = Instant::now();
            let hm = app.world().resource::<SimClock>().now.hh_mm();
            let (wall, waited) = (
                t.elapsed().as_secs_f64(),
                app.world().resource::<StepGate>().waited.as_secs_f64(),
            );
            eprintln!(
                "  {residents} residents, {endpoints} endpoints: {hm} after {wall:.0} s; simulation's own share so far {:.2} %{}; peak memory {:.0} MB",
                100.0 * (wall - waited) / wall.max(1e-9),
                sched_words(sched_share(sched0, wall)),
                peak_rss_mb()
            );
        }
    }
    let wall_s = t.elapsed().as_secs_f64();
    let sched = sched_share(sched0, wall_s);
    let waited_s = app.world().resource::<StepGate>().waited.as_secs_f64();
    let stats = app.world().resource::<Llm>().stats();
    let pool = app
        .world()
        .resource::<Llm>()
        .status()
        .backends
        .first()
        .map(|p| p.endpoints.clone())
        .unwrap_or_default();
    let chat = stats.chat_total();
    let embed = stats.embed_total();
    let samples = timeline.len().max(1) as f64;
    let mean_in_flight = timeline
        .iter()
        .map(|(_, f)| f.iter().sum::<usize>() as f64 / f.len().max(1) as f64)
        .sum::<f64>()
        / samples;
    let prefix = standins.iter().fold((0, 0), |(h, m), s| {
        (
            h + s.state.prefix_hits.load(Ordering::Relaxed),
            m + s.state.prefix_misses.load(Ordering::Relaxed),
        )
    });
    let looks = {
        let g = app
            .world()
            .resource::<crate::cognition::mind::perceive::Glances>();
        (g.looked(), g.rested())
    };
    let save_dir = b.out.join(format!("save-{residents}"));
    let ts = Instant::now();
    let data = crate::save::capture(app.world_mut(), "bench-scale")?;
    crate::save::disk::write_save(&save_dir, &data)?;
    let save = (
        ts.elapsed().as_secs_f64(),
        super::save::size_of(&save_dir) as f64 / 1e6,
    );
    Ok(ScaleRun {
        residents,
        endpoints,
        game_hours: done as f64 * sec / 3600.0,
        wall_s,
        waited_s,
        chats: chat.calls,
        embeds: embed.calls,
        fallbacks: chat.fallbacks + embed.fallbacks,
        mean_in_flight,
        pool,
        timeline,
        prefix,
        peak_mb: peak_rss_mb(),
        save,
        sched,
        looks,
        rounds: app.world().resource::<StepGate>().rounds,
    })
}

/// One run in words.
pub fn describe(b: &ScaleBench, r: &ScaleRun) -> String {
    let mut s = String::new();
    let servers = match &b.servers {
        Some(_) => format!("{} real endpoint(s)", r.endpoints),
        None => format!(
            "{} STAND-IN endpoint(s) (no model: {} tokens/s per request, batch {}, {} s to first token)",
            r.endpoints, b.model.tokens_per_s, b.model.batch, b.model.ttft_s
        ),
    };
    let limit = r.pool.first().map_or(0, |e| e.limit);
    let _ = writeln!(
        s,
        "{} residents, {servers}: {:.2} game h in {:.1} s = {:.1} game h per wall h; simulation's own share {:.2} % of wall time ({:.1} s){}, woken {} times for answers; looks made {}, not made {} (nothing in view changed); {} chat requests ({:.1}/s), {} embeddings, {} fail-safe; {:.1} in flight per endpoint on average (limit {limit}); affinity {}; {}peak memory {:.0} MB; save {:.2} s ({:.1} MB)",
        r.residents,
        r.game_hours,
        r.wall_s,
        r.pace(),
        100.0 * r.sim_share(),
        r.sim_share() * r.wall_s,
        sched_words(r.sched),
        r.rounds,
        r.looks.0,
        r.looks.1,
        r.chats,
        r.chats as f64 / r.wall_s.max(1e-9),
        r.embeds,
        r.fallbacks,
        r.mean_in_flight,
        r.affinity().map_or("off".to_string(), |a| format!(
            "{:.0} % of residents' requests on their own endpoint",
            100.0 * a
        )),
        if r.prefix.0 + r.prefix.1 > 0 {
            format!(
                "stand-ins' prefix cache {:.0} % hits; ",
                100.0 * r.prefix.0 as f64 / (r.prefix.0 + r.prefix.1) as f64
            )
        } else {
            String::new()
        },
        r.peak_mb,
        r.save.0,
        r.save.1,
    );
    // In flight per endpoint over time: ten samples across the run.
    let step = (r.timeline.len() / 10).max(1);
    let line: Vec<String> = r
        .timeline
        .iter()
        .step_by(step)
        .map(|(t, f)| format!("{t:.0}s:{:?}", f))
        .collect();
    let _ = writeln!(s, "  in flight per endpoint over time: {}", line.join(" "));
    for e in &r.pool {
        let _ = writeln!(s, "  {}", crate::llm::backend::endpoint_line(e));
    }
    s
}

/// Runs every size on every pool, printing each run as it ends; the whole report.
pub fn run(b: &ScaleBench) -> Result<String, String> {
    let mut report = String::new();
    // A saved town has one size, its own (found when it is loaded).
    let sizes = if b.load.is_some() {
        &[0][..]
    } else {
        &b.sizes[..]
    };
    for &n in sizes {
        for &e in &b.endpoints {
            let r = run_one(b, n, e)?;
            let text = describe(b, &r);
            print!("{text}");
            report.push_str(&text);
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The thread's time on a core grows while it works; where the kernel keeps no scheduler
    /// statistics nothing is said.
    #[test]
    fn the_simulation_threads_time_on_a_core_is_read() {
        let Some(a) = thread_sched() else {
            assert_eq!(sched_words(sched_share(None, 1.0)), "");
            return;
        };
        let t = Instant::now();
        let mut x = 0u64;
        while t.elapsed().as_millis() < 50 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        let b = thread_sched().expect("read before");
        assert!(b.0 > a.0 && b.1 >= a.1, "{a:?} then {b:?}");
        let (on, _) = sched_share(Some(a), t.elapsed().as_secs_f64()).unwrap();
        assert!(on > 0.0 && on <= 1.5, "{on}");
        assert!(sched_words(Some((0.04, 0.012))).contains("on a core 4.0 %"));
    }
}
