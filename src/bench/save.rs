//! `simulacra bench save`: how long saving and loading take and how much room a save needs,
//! for a town after a simulated day. The day is run with residents on their routine (they walk
//! about and perceive all day), scripted chat answers and the real sentence embedder
//! (all-MiniLM-L6-v2, 384-d vectors, as a real run has) when set-up fetched it; or an existing
//! save is measured (`--load`).

use crate::config::GameConfig;
use crate::llm::config::{BackendConfig, BertConfig, LlmConfig};
use crate::save::disk::{read_save, write_save};
use crate::save::{SaveData, capture};
use crate::{SimPlugin, headless_app, run_steps};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What to measure.
#[derive(Debug, Clone)]
pub struct SaveBench {
    /// Scenario to simulate (when not loading).
    pub scenario: String,
    /// Steps to simulate first (8640: a day).
    pub steps: u64,
    /// A save to measure instead of simulating.
    pub load: Option<String>,
    /// Timed rounds (the best and median are printed).
    pub rounds: u32,
    /// Config file (the saves folder).
    pub config: Option<PathBuf>,
}

/// Bytes in a file, or in a folder and everything in it.
pub(crate) fn size_of(path: &Path) -> u64 {
    if path.is_dir() {
        std::fs::read_dir(path)
            .map(|rd| rd.flatten().map(|e| size_of(&e.path())).sum())
            .unwrap_or(0)
    } else {
        std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
    }
}

fn kb(b: u64) -> String {
    if b >= 10 * 1024 * 1024 {
        format!("{:.1} MB", b as f64 / (1024.0 * 1024.0))
    } else {
        format!("{:.0} kB", b as f64 / 1024.0)
    }
}

fn best_median(v: &mut [f64]) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[0], v[v.len() / 2])
}

/// Runs the benchmark; returns the report.
pub fn run(b: &SaveBench) -> Result<String, String> {
    let mut config = GameConfig::load_or_default(b.config.as_deref()).map_err(|e| e.to_string())?;
    let embedder = crate::data::data_root().join("models/all-MiniLM-L6-v2/model.safetensors");
    let real_vectors = embedder.exists();
    config.llm = LlmConfig::scripted(Vec::new());
    if real_vectors {
        config
            .llm
            .backends
            .push(BackendConfig::Bert(BertConfig::default()));
        config.llm.embedding_backend = Some(BertConfig::default().name);
    }
    config.saves.autosave_minutes = 0;
    // Residents on their routine walk about all day and remember much of what they see (with
    // scripted plans they would stand at one place): a fuller memory than a quiet day's.
    config.cognition.planning = crate::cognition::config::Planning::Routine;
    let root = PathBuf::from(&config.saves.dir);
    let mut out = String::new();
    let (sim, what) = match &b.load {
        Some(name) => {
            let named = crate::save::disk::read_named(&root, name, None)?;
            let dir = named.dir.clone();
            (
                SimPlugin::from_save_data(&dir, named.data, config.clone())?,
                format!("the save {}", dir.display()),
            )
        }
        None => (
            SimPlugin::load(&b.scenario, None, config.clone()).map_err(|e| e.to_string())?,
            format!("{} after {} steps", b.scenario, b.steps),
        ),
    };
    let mut app = headless_app(sim);
    let t = Instant::now();
    if b.load.is_none() {
        for done in (0..b.steps).step_by(720) {
            run_steps(&mut app, 720.min(b.steps - done));
            eprint!(
                "\rsimulating: step {} of {}",
                done + 720.min(b.steps - done),
                b.steps
            );
        }
        eprintln!();
    } else {
        app.update();
    }
    let simulated = t.elapsed().as_secs_f64();

    let dir = root.join(format!(".bench-{}", std::process::id()));
    let (mut cap, mut write, mut read, mut restore) = (vec![], vec![], vec![], vec![]);
    let mut data: Option<SaveData> = None;
    for _ in 0..b.rounds.max(1) {
        let t = Instant::now();
        let d = capture(app.world_mut(), "bench")?;
        cap.push(t.elapsed().as_secs_f64() * 1000.0);
        let t = Instant::now();
        write_save(&dir, &d)?;
        write.push(t.elapsed().as_secs_f64() * 1000.0);
        let t = Instant::now();
        let back = read_save(&dir)?;
        read.push(t.elapsed().as_secs_f64() * 1000.0);
        let t = Instant::now();
        let mut again = headless_app(SimPlugin::from_save(&dir, config.clone())?);
        again.update(); // spawns the people and puts the save into them
        restore.push(t.elapsed().as_secs_f64() * 1000.0);
        drop(again);
        data = Some(back);
    }
    let data = data.expect("one round at least");
    let memories: usize = data
        .agents
        .iter()
        .filter_map(|a| a.mind.as_ref())
        .map(|m| m.memory.len())
        .sum();
    let dim = data
        .embeddings
        .first()
        .map(|e| e.2.vector.len())
        .unwrap_or(0);
    let total = size_of(&dir);
    let parts: Vec<String> = [
        "agents",
        "embeddings.bin",
        "movement.jsonl",
        "world.ron",
        "map.ron",
        "scenario.ron",
        "config.ron",
        "meta.ron",
    ]
    .iter()
    .map(|p| format!("{p} {}", kb(size_of(&dir.join(p)))))
    .collect();
    let _ = std::fs::remove_dir_all(&dir);
    let (cb, cm) = best_median(&mut cap);
    let (wb, wm) = best_median(&mut write);
    let (rb, rm) = best_median(&mut read);
    let (lb, lm) = best_median(&mut restore);
    out.push_str(&format!(
        "saves of {what} ({} people, {memories} memories, {} vectors of {dim} dimensions{}, {} movement frames; simulated in {simulated:.1} s)\n",
        data.agents.len(),
        data.embeddings.len(),
        if real_vectors || b.load.is_some() { "" } else { " (scripted: set-up has not fetched the embedder)" },
        data.movement.frames.len(),
    ));
    out.push_str(&format!(
        "  save: {:.0} ms best, {:.0} ms median (taking the state {cb:.0} / {cm:.0} ms, writing and syncing {wb:.0} / {wm:.0} ms), {} rounds\n",
        cb + wb,
        cm + wm,
        b.rounds.max(1)
    ));
    out.push_str(&format!(
        "  load: {lb:.0} ms best, {lm:.0} ms median to a running simulation (app built, save read and checked, state put in); reading and checking alone {rb:.0} / {rm:.0} ms\n"
    ));
    out.push_str(&format!(
        "  on disk: {} in all: {}\n",
        kb(total),
        parts.join(", ")
    ));
    Ok(out)
}
