//! Simulacra: the generative agents of Park et al. (UIST 2023) as a Bevy game.
//!
//! [`SimPlugin`] is the headless simulation (town, people, clock, LLM runtime) with no render,
//! window or UI types; batch runs and tests use it alone. [`game::GamePlugin`] adds the window:
//! tilemap, sprites, camera, HUD and input.

pub mod agent;
pub mod bench;
pub mod cli;
pub mod cognition;
pub mod config;
pub mod data;
pub mod data_error;
pub mod game;
pub mod headless;
pub mod import;
pub mod lab;
pub mod llm;
pub mod memory;
pub mod play;
pub mod save;
pub mod sim;

/// The build's source fingerprint (FNV-1a of the crate's code as built, from `build.rs`): two
/// builds with the same fingerprint run the same code. A lab run records it (`build.txt`).
pub const SOURCE: &str = env!("SIMULACRA_SOURCE");

pub use agent::persona::ScenarioRes;
use bevy::prelude::*;
use config::GameConfig;
use data::resolve_data;
use data_error::DataError;
pub use sim::AppSystems;
use std::path::{Path, PathBuf};

/// The headless simulation: town, people, clock, pacing and the LLM runtime.
#[derive(Clone)]
pub struct SimPlugin {
    /// The town.
    pub map: sim::map::WorldMap,
    /// The people.
    pub scenario: agent::persona::Scenario,
    /// Settings.
    pub config: GameConfig,
    /// Prompt templates.
    pub prompts: cognition::ask::prompts::Prompts,
    /// A save to continue from (applied once the people are spawned), and its folder.
    pub load: Option<std::sync::Arc<(save::SaveData, PathBuf)>>,
    /// The scenario file's text as read at start (saves keep it, whatever happens to the file).
    pub scenario_text: String,
}

impl SimPlugin {
    /// Loads a scenario (bundled name or path), its map (or `map_override`) and the config,
    /// validating all three.
    pub fn load(
        scenario: &str,
        map_override: Option<&str>,
        config: GameConfig,
    ) -> Result<Self, DataError> {
        let scenario_path = resolve_data("config/scenarios", scenario);
        if !scenario_path.exists() {
            return Err(DataError::new(
                &scenario_path,
                0,
                "",
                format!(
                    "no such scenario; bundled ones: {}{}",
                    bundled("config/scenarios"),
                    data::data_root_hint()
                ),
            ));
        }
        let (file, src) = agent::persona::read_scenario(&scenario_path)?;
        let map_ref = map_override
            .map(str::to_string)
            .unwrap_or_else(|| file.map.clone());
        let map_path = resolve_map_path(&scenario_path, &map_ref);
        if !map_path.exists() {
            return Err(DataError::new(
                &map_path,
                0,
                "",
                format!(
                    "no such map; bundled ones: {}{}",
                    bundled("maps"),
                    data::data_root_hint()
                ),
            ));
        }
        let map = sim::map::load_map(&map_path)?;
        let scenario = agent::persona::validate_scenario(&scenario_path, &src, file, &map)?;
        let prompts_dir = data::resolve_path(&config.cognition.prompts);
        let prompts = cognition::ask::prompts::Prompts::load(&prompts_dir)?;
        if config.cognition.importance_by == cognition::config::ImportanceBy::Likeness
            && prompts.scale().is_none()
        {
            return Err(DataError::new(
                &prompts_dir.join(cognition::ask::prompts::SCALE_FILE),
                0,
                "cognition.importance_by",
                "importance by Likeness needs the importance scale by example in this file ('1: brushing teeth', one a line); add it, or set importance_by: Model",
            ));
        }
        Ok(Self {
            map,
            scenario,
            config,
            prompts,
            load: None,
            scenario_text: src,
        })
    }

    /// Continues a saved simulation: the save's scenario, map and settings (but the LLM
    /// backends, the save settings and the prompt templates' folder of `config`, the machine's
    /// own), its state applied at start.
    pub fn from_save(dir: &Path, config: GameConfig) -> Result<Self, String> {
        let data = save::disk::read_save(dir)?;
        Self::from_save_data(dir, data, config)
    }

    /// [`Self::from_save`] with the save already read. A save is data: every path in it that
    /// this machine would read or write (models, recordings, the saves folder, the prompts) is
    /// this machine's own, from `config`; nothing in it runs.
    pub fn from_save_data(
        dir: &Path,
        data: save::SaveData,
        config: GameConfig,
    ) -> Result<Self, String> {
        let mut cfg = data.config.clone();
        cfg.llm = config.llm;
        cfg.saves = config.saves;
        cfg.cognition.prompts = config.cognition.prompts;
        let scenario = dir.join("scenario.ron");
        let map = dir.join("map.ron");
        let mut sim = Self::load(
            &scenario.to_string_lossy(),
            Some(&map.to_string_lossy()),
            cfg,
        )
        .map_err(|e| format!("{} (in the save {})", e, dir.display()))?;
        save::check_people(&data, &sim.scenario.names(), dir)?;
        save::check_positions(&data, &sim.map, dir)?;
        sim.scenario.start = data.world.clock.start;
        sim.load = Some(std::sync::Arc::new((data, dir.to_path_buf())));
        Ok(sim)
    }

    /// The name autosaves of this run take (`auto-<base>-<step>`): a new game's is the scenario's
    /// name and the wall-clock time it began, so two games never share autosaves; a game
    /// continued from a save keeps that save's name (an autosave's base: the run goes on).
    pub fn save_base(&self) -> String {
        match &self.load {
            Some(l) => {
                // The name was checked when the save was read; made a slug again here, as a
                // folder name of ours must never hold a path.
                let name = &l.0.meta.name;
                let base = name
                    .strip_prefix("auto-")
                    .and_then(|r| r.rsplit_once('-').map(|(b, _)| b))
                    .unwrap_or(name);
                save::disk::slug(base)
            }
            None => {
                let secs = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs() as i64)
                    .unwrap_or(0);
                let t = sim::time::GameTime(secs);
                let (y, mo, d) = t.ymd();
                let (h, mi, se) = t.hms();
                let mut name = save::disk::slug(&self.scenario.name);
                name.truncate(40);
                format!("{name}-{y:04}{mo:02}{d:02}-{h:02}{mi:02}{se:02}")
            }
        }
    }
}

/// Names of the bundled `.ron` files in a data folder, for error messages.
fn bundled(dir: &str) -> String {
    let mut names: Vec<String> = std::fs::read_dir(data::data_root().join(dir))
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| {
                    e.file_name()
                        .to_str()
                        .and_then(|n| n.strip_suffix(".ron"))
                        .map(str::to_string)
                })
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names.join(", ")
}

/// Bundled map name, or a path (relative paths are tried from the scenario's folder too).
fn resolve_map_path(scenario_path: &Path, map_ref: &str) -> PathBuf {
    let direct = resolve_data("maps", map_ref);
    if direct.exists() {
        return direct;
    }
    let beside = scenario_path
        .parent()
        .map(|d| d.join(map_ref))
        .unwrap_or_default();
    if beside.exists() { beside } else { direct }
}

impl Plugin for SimPlugin {
    fn build(&self, app: &mut App) {
        let s = &self.config.sim;
        app.configure_sets(
            Update,
            (AppSystems::Input, AppSystems::Simulate, AppSystems::Present).chain(),
        )
        .insert_resource(self.map.clone())
        .insert_resource(ScenarioRes(self.scenario.clone()))
        .insert_resource(agent::TownNames::new(self.scenario.names()))
        .insert_resource(sim::clock::SimClock::new(
            self.scenario.start,
            s.sec_per_step,
        ))
        .insert_resource(sim::clock::SimPace {
            steps_per_second_at_1x: s.steps_per_second_at_1x,
            frame_budget: std::time::Duration::from_millis(s.frame_budget_ms),
            ..default()
        });
        sim::plugin(app);
        cognition::plugin(
            app,
            self.config.cognition.clone(),
            self.prompts.clone(),
            cognition::act::place::PlaceRules::of(&self.scenario.residents),
        );
        agent::plugin(app);
        play::plugin(app);
        save::plugin(
            app,
            save::SaveContext::new(
                self.config.clone(),
                self.save_base(),
                self.scenario_text.clone(),
            ),
        );
        if let Some(l) = &self.load {
            app.insert_resource(save::LoadOnStart(Box::new(l.0.clone()), l.1.clone()));
        }
        app.add_plugins(llm::LlmPlugin::new(self.config.llm.clone()));
    }
}

/// A headless app: `MinimalPlugins` (no render, no window) + [`SimPlugin`], paced manually
/// (steps run only when requested). Tests and `simulacra run` use this.
pub fn headless_app(sim: SimPlugin) -> App {
    headless_app_on(sim, None)
}

/// A headless app whose requests go to `llm` when given (a handle on a runtime other towns
/// share, see [`llm::runtime::LlmRuntime::client`]), else to a runtime of its own.
pub fn headless_app_on(mut sim: SimPlugin, llm: Option<llm::Llm>) -> App {
    sim.config.llm.use_all_cores();
    let own_clocks = sim.config.sim.own_clocks;
    let mut app = App::new();
    if let Some(llm) = llm {
        app.insert_resource(llm);
    }
    app.add_plugins((MinimalPlugins, bevy::state::app::StatesPlugin, sim));
    // Nothing draws: every schedule runs its systems on this thread, in turn, instead of
    // handing some to a pool's thread and sleeping until they are done (on 2 cores the sleeping
    // thread then waits to be given a core back).
    use bevy::ecs::schedule::{ScheduleLabel, SingleThreadedExecutor};
    for label in [
        First.intern(),
        PreUpdate.intern(),
        bevy::state::state::StateTransition.intern(),
        RunFixedMainLoop.intern(),
        FixedUpdate.intern(),
        Update.intern(),
        PostUpdate.intern(),
        Last.intern(),
    ] {
        app.edit_schedule(label, |s| {
            s.set_executor(SingleThreadedExecutor::new());
        });
    }
    app.insert_resource(sim::clock::SimPace {
        max_requested_per_frame: 2000,
        block_on_answers: true,
        requested_only: true,
        own_clocks,
        ..sim::clock::SimPace::manual()
    });
    app
}

/// Brings residents on their own clocks ([`sim::clock::SimPace::own_clocks`]) to one step, the
/// step of the one furthest ahead, as a save or a probe needs (nothing when they are at one
/// already). Returns the steps the clock moved.
pub fn run_to_one_step(app: &mut App) -> u64 {
    let world = app.world_mut();
    let now = world.resource::<sim::clock::SimClock>().step;
    let furthest = world
        .query::<&sim::clock::OwnStep>()
        .iter(world)
        .map(|s| s.0)
        .max()
        .unwrap_or(now);
    if furthest <= now {
        return 0;
    }
    let ahead = world
        .resource_mut::<sim::clock::SimPace>()
        .run_ahead_to
        .take();
    let ran = run_steps(app, furthest - now);
    app.world_mut()
        .resource_mut::<sim::clock::SimPace>()
        .run_ahead_to = ahead;
    ran
}

/// Runs `n` simulation steps on an app (in chunks of the pace's per-frame maximum). Once the
/// pace's `stop` flag is set (checked between frames; a step blocked on answers gives up
/// waiting, see [`sim::clock::SimPace::stop`]), the steps not run are dropped. Returns the steps
/// run.
pub fn run_steps(app: &mut App, n: u64) -> u64 {
    app.world_mut()
        .resource_mut::<sim::clock::SimPace>()
        .requested += n;
    loop {
        let pace = app.world().resource::<sim::clock::SimPace>();
        let left = pace.requested;
        if left == 0 {
            return n;
        }
        if pace.stopping() {
            app.world_mut()
                .resource_mut::<sim::clock::SimPace>()
                .requested = 0;
            return n.saturating_sub(left);
        }
        app.update();
    }
}
