//! The one integration-test binary (each file under tests/ would be another binary to link).
//! Modules by topic; shared helpers here.

mod clocks;
mod data_files;
#[cfg(feature = "vulkan")]
mod gpu;
mod import_original;
mod import_tiled;
mod lab;
mod lab_real;
mod layers;
mod llm_openai;
mod llm_real;
mod llm_runtime;
mod llm_server;
mod memory;
mod memory_real;
mod models;
mod plan_day;
mod plan_real;
mod play;
mod pool;
mod robust;
mod saves;
mod sim_day;
mod society;
mod talk;
mod window;

use bevy::prelude::*;
use simulacra::SimPlugin;
use simulacra::agent::{GridPos, Identity};
use simulacra::config::GameConfig;
use simulacra::llm::config::LlmConfig;
use simulacra::sim::map::WorldMap;
use std::path::PathBuf;

/// Asks the runtime for one embedding of `text` and waits up to `wait` for its reply.
pub fn embed_reply(
    rt: &simulacra::llm::runtime::LlmRuntime,
    text: &str,
    wait: std::time::Duration,
) -> simulacra::llm::runtime::Reply {
    let id = rt.next_id();
    rt.submit(simulacra::llm::runtime::Submission {
        id,
        agent: None,
        purpose: "embed".into(),
        kind: simulacra::llm::backend::WorkKind::Embed { text: text.into() }.into(),
        priority: simulacra::llm::Priority::Normal,
        fallback: None,
    });
    let r = rt.recv_timeout(wait).expect("a reply");
    assert_eq!(r.id, id);
    r
}

/// The default settings with the scripted LLM in place of the model.
pub fn scripted_config() -> GameConfig {
    GameConfig {
        llm: LlmConfig::scripted(Vec::new()),
        ..Default::default()
    }
}

/// The bundled scenario with the scripted LLM (no model needed) and the daily routine as the
/// plan (tests of the town, paths and memory that want predictable days).
pub fn scripted_sim(scenario: &str) -> SimPlugin {
    let mut config = scripted_config();
    config.cognition.planning = simulacra::cognition::config::Planning::Routine;
    SimPlugin::load(scenario, None, config).expect("bundled scenario loads")
}

/// The facts the bundled Smallville scenarios follow (the paper's two).
pub fn the_villes_facts() -> Vec<simulacra::lab::facts::Fact> {
    scripted_sim("the_ville_n3").scenario.facts
}

/// The program under test: the one cargo built for these tests, or `SIMULACRA_BIN` (a copy kept
/// aside while other checkouts build into the same target directory).
pub fn simulacra_bin() -> PathBuf {
    std::env::var_os("SIMULACRA_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_simulacra")))
}

/// Copies a folder with everything in it.
pub fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

/// An LLM config whose only backend is the recording at `file` (no model, no embedder).
pub fn replay_llm(file: &std::path::Path) -> simulacra::llm::config::LlmConfig {
    use simulacra::llm::config::{BackendConfig, LlmConfig, ReplayConfig};
    LlmConfig {
        backends: vec![BackendConfig::Replay(ReplayConfig {
            name: "recording".into(),
            file: file.to_string_lossy().into(),
        })],
        embedding_backend: None,
        ..LlmConfig::scripted(Vec::new())
    }
}

/// A fresh temporary folder for one test.
pub fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("simulacra-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Held by each test that runs a real model, so that they run one at a time whichever runner
/// starts them (nextest's processes or cargo test's threads): llama.cpp's worker threads spin
/// while they wait, and two models sharing the two cores of a small machine slow each other down
/// tenfold. A lock on a file, released when the returned handle drops.
pub fn real_model_lock() -> std::fs::File {
    let path = std::env::temp_dir().join("simulacra-real-model-tests.lock");
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .expect("the lock file opens");
    f.lock().expect("the lock is taken");
    f
}

/// The default model that set-up fetches.
pub fn model_path() -> PathBuf {
    let p = simulacra::data::data_root().join("models/SmolLM2-135M-Instruct.Q4_1.gguf");
    assert!(
        p.exists(),
        "{} is missing: run ./scripts/setup.sh (the test command does)",
        p.display()
    );
    p
}

/// The sentence embedder that set-up fetches.
pub fn embedder_path() -> PathBuf {
    let p = simulacra::data::data_root().join("models/all-MiniLM-L6-v2");
    assert!(
        p.join("model.safetensors").exists(),
        "{} is missing: run ./scripts/setup.sh (the test command does)",
        p.display()
    );
    p
}

/// The entity of the person with this name.
pub fn entity_of(app: &mut App, name: &str) -> Entity {
    let w = app.world_mut();
    let mut q = w.query::<(Entity, &Identity)>();
    q.iter(w)
        .find(|(_, i)| i.name == name)
        .map(|(e, _)| e)
        .unwrap_or_else(|| panic!("{name} is in town"))
}

/// Puts someone on a walkable tile beside `who` and stops their walk.
pub fn stand_beside(app: &mut App, mover: Entity, who: Entity) {
    let target = app.world().get::<GridPos>(who).unwrap().tile;
    let map = app.world().resource::<WorldMap>().clone();
    let spot = target
        .neighbours()
        .into_iter()
        .find(|t| map.walkable(*t))
        .expect("a free tile beside");
    let mut pos = app.world_mut().get_mut::<GridPos>(mover).unwrap();
    pos.prev = spot;
    pos.tile = spot;
}

/// Runs steps, `each` at a time and at most `tries` times, until none of `who` is in a
/// conversation (a test that starts one of its own lets any going on end first).
pub fn wait_until_free(app: &mut App, who: &[Entity], each: u64, tries: u32) {
    for _ in 0..tries {
        if who.iter().all(|e| {
            app.world()
                .get::<simulacra::agent::conversation::Talking>(*e)
                .is_none()
        }) {
            break;
        }
        simulacra::run_steps(app, each);
    }
}
