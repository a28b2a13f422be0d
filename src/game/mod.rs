//! The windowed game on top of the headless simulation: tilemap, people, camera, HUD, input,
//! and a screenshot mode for CI (`play --screenshot PATH`).

pub mod bench_frames;
pub mod camera;
pub mod panels;
pub mod shared;
pub mod world;

use crate::sim::clock::{SimPace, Speed};
use crate::{AppSystems, SimPlugin};
use bevy::prelude::*;
use bevy::render::view::screenshot::{Screenshot, ScreenshotCaptured, save_to_disk};
use bevy::window::WindowResolution;
use panels::{inspect, settings};
use shared::Present;
use std::path::PathBuf;

/// Rendering, input and UI. Add after `DefaultPlugins` and [`SimPlugin`].
pub struct GamePlugin;

impl Plugin for GamePlugin {
    fn build(&self, app: &mut App) {
        app.add_plugins((
            bevy_ecs_tilemap::TilemapPlugin,
            bevy_egui::EguiPlugin::default(),
        ))
        // The UI camera carries egui (`camera::spawn_camera`), not the town's camera.
        .insert_resource(bevy_egui::EguiGlobalSettings {
            auto_create_primary_context: false,
            ..default()
        })
        .init_resource::<shared::Panels>()
        .init_resource::<shared::NightSkip>()
        .init_resource::<shared::CameraMode>()
        .init_resource::<shared::Selected>()
        .insert_resource(ClearColor(Color::srgb(0.36, 0.55, 0.32)))
        .configure_sets(
            Update,
            (
                Present::Sprites,
                Present::Objects,
                Present::Sky,
                Present::Place,
                Present::Labels,
                Present::Camera,
                Present::Windows,
                Present::Hud,
                Present::Settings,
            )
                .chain()
                .in_set(AppSystems::Present),
        )
        .add_systems(Update, (feed_script, echo_script).in_set(AppSystems::Input));
        // Each part of the window adds its own resources and systems.
        world::town::plugin(app);
        world::people::plugin(app);
        world::objects::plugin(app);
        world::daylight::plugin(app);
        camera::plugin(app);
        panels::hud::plugin(app);
        panels::console::plugin(app);
        panels::inspect::plugin(app);
        panels::log::plugin(app);
        panels::minimap::plugin(app);
        panels::saves::plugin(app);
        panels::settings::plugin(app);
        panels::replay_bar::plugin(app);
        panels::labels::plugin(app);
    }
}

/// Takes one screenshot after some frames, checks it is not blank, and quits.
/// With a script, what the console answers and every line said in town go to standard output as
/// they happen (so a scripted session can be read and checked).
fn echo_script(
    script: Option<Res<GameScript>>,
    console: Res<crate::play::ConsoleLog>,
    talk: Res<crate::agent::conversation::ConversationLog>,
    mut shown: Local<(usize, usize)>,
) {
    if script.is_none() {
        return;
    }
    for (kind, text) in &console.lines[shown.0.min(console.lines.len())..] {
        match kind {
            crate::play::LineKind::Input => println!("> {text}"),
            crate::play::LineKind::Output => println!("{text}"),
            crate::play::LineKind::Error => println!("error: {text}"),
        }
    }
    for l in &talk.lines[shown.1.min(talk.lines.len())..] {
        println!(
            "[{}] {} → {}: {}",
            l.at.clock_12h(),
            l.speaker,
            l.listener,
            l.text
        );
    }
    *shown = (console.lines.len(), talk.lines.len());
}

/// Console lines fed to the game one at a time (`play --commands FILE`): the next goes in once
/// skipped steps, a `run N`, an avatar's walk and an interview question are done, and a few
/// frames have passed, so a scripted session looks as if it were typed.
#[derive(Resource, Default)]
pub struct GameScript {
    /// Lines still to feed.
    pub lines: std::collections::VecDeque<String>,
    /// Frames since the last line.
    pub frames: u32,
}

fn feed_script(
    script: Option<ResMut<GameScript>>,
    pace: Res<SimPace>,
    route: Res<crate::agent::avatar::AvatarRoute>,
    interviews: Res<crate::play::interview::Interviews>,
    mut queue: ResMut<crate::play::ConsoleQueue>,
) {
    let Some(mut script) = script else {
        return;
    };
    if pace.requested > 0 || !route.tiles.is_empty() || interviews.waiting() {
        script.frames = 0;
        return;
    }
    script.frames += 1;
    if script.frames < 20 {
        return;
    }
    script.frames = 0;
    if let Some(line) = script.lines.pop_front() {
        queue.push(line);
    }
}

/// Present in runs that take a screenshot and quit (`play --screenshot`).
#[derive(Resource)]
pub struct ScreenshotRun;

#[derive(Resource)]
struct AutoScreenshot {
    path: PathBuf,
    frames: u32,
    seen: u32,
    taken: bool,
}

#[expect(
    clippy::too_many_arguments,
    reason = "the shot reports what the window shows"
)]
fn take_auto_screenshot(
    mut shot: ResMut<AutoScreenshot>,
    pace: Res<SimPace>,
    script: Option<Res<GameScript>>,
    time: Res<Time<Real>>,
    clock: Res<crate::sim::clock::SimClock>,
    people: Query<(Entity, &crate::agent::GridPos), With<crate::agent::Resident>>,
    mut first: Local<Option<std::collections::HashMap<Entity, crate::sim::map::Tile>>>,
    mut commands: Commands,
) {
    if pace.requested > 0 || script.is_some_and(|s| !s.lines.is_empty()) {
        return; // frames count once the skipped-ahead steps have run and the script is typed
    }
    let start = first.get_or_insert_with(|| people.iter().map(|(e, p)| (e, p.tile)).collect());
    shot.seen += 1;
    if shot.taken || shot.seen < shot.frames {
        return;
    }
    // What a player would have seen: how long the window has been open, the game time, and how
    // many residents have walked since it opened.
    let moved = people
        .iter()
        .filter(|(e, p)| start.get(e).is_some_and(|t| *t != p.tile))
        .count();
    println!(
        "after {:.1} s and {} frames: {}, {moved} of {} residents have moved since the window opened",
        time.elapsed_secs(),
        shot.seen,
        clock.now.clock_12h(),
        people.iter().count()
    );
    shot.taken = true;
    if let Some(dir) = shot.path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    commands
        .spawn(Screenshot::primary_window())
        .observe(save_to_disk(shot.path.clone()))
        .observe(check_and_exit);
}

/// Counts distinct colours in a sample of the image: a blank window has one or two.
pub fn distinct_colours(rgba: &[u8], step: usize) -> usize {
    let mut seen = std::collections::HashSet::new();
    for px in rgba.chunks_exact(4).step_by(step.max(1)) {
        seen.insert([px[0], px[1], px[2]]);
    }
    seen.len()
}

fn check_and_exit(ev: On<ScreenshotCaptured>, mut exit: MessageWriter<AppExit>) {
    let img = &ev.image;
    let n = img
        .data
        .as_deref()
        .map(|d| distinct_colours(d, 7))
        .unwrap_or(0);
    println!(
        "screenshot: {}×{} pixels, {n} distinct colours in a sample",
        img.width(),
        img.height()
    );
    if n < 16 {
        eprintln!("error: the screenshot looks blank");
        exit.write(AppExit::error());
    } else {
        exit.write(AppExit::Success);
    }
}

/// How the window starts, beyond the town and people it shows (`play`'s and `replay`'s options).
#[derive(Debug, Clone)]
pub struct PlayOptions {
    /// Save a screenshot of the window to this PNG after `frames` frames, then quit.
    pub screenshot: Option<PathBuf>,
    /// Frames to run before the screenshot (2 at least).
    pub frames: u32,
    /// Start at this speed multiplier (0: the fastest).
    pub speed: Option<u32>,
    /// Console commands to type into the game, one at a time ([`GameScript`]).
    pub commands: Option<PathBuf>,
    /// Steps to run before the window opens.
    pub skip_steps: u64,
    /// Open the inspector on this person.
    pub select: Option<String>,
    /// The inspector page to open first.
    pub inspect: Option<inspect::Tab>,
    /// Open the help overlay at the start.
    pub show_help: bool,
    /// Follow this person with the camera (no inspector).
    pub follow: Option<String>,
    /// Measure frame times for this many seconds, print them and quit (`bench frames`).
    pub frame_bench: Option<f32>,
}

/// Opens the window and runs until it closes; returns the exit code. With a replay (and whether
/// it starts paused), the window shows the save's recording instead of running the simulation.
pub fn run_game(
    sim: SimPlugin,
    args: &PlayOptions,
    replay: Option<(crate::save::replay::Replay, bool)>,
) -> i32 {
    if cfg!(target_os = "linux")
        && std::env::var_os("DISPLAY").is_none()
        && std::env::var_os("WAYLAND_DISPLAY").is_none()
    {
        eprintln!(
            "error: no display to open the window on (DISPLAY is not set). Run it in a desktop session, under `xvfb-run`, or without a window: `simulacra run --steps 8640`."
        );
        return 2;
    }
    let mut app = App::new();
    app.add_plugins(
        DefaultPlugins
            .set(ImagePlugin::default_nearest())
            .set(WindowPlugin {
                primary_window: Some(Window {
                    title: match &replay {
                        Some((r, _)) => {
                            format!("Simulacra: {} (replay of {})", sim.map.world, r.name)
                        }
                        None => format!("Simulacra: {}", sim.map.world),
                    },
                    resolution: WindowResolution::new(1280, 720),
                    ..default()
                }),
                ..default()
            }),
    );
    app.add_plugins((sim, GamePlugin));
    let replay_none = replay.is_none();
    if let Some((r, paused)) = replay {
        crate::save::replay::start(&mut app, r);
        app.world_mut().resource_mut::<SimPace>().paused = paused;
    }
    {
        let mut pace = app.world_mut().resource_mut::<SimPace>();
        pace.requested = args.skip_steps;
        if let Some(s) = args.speed {
            pace.speed = if s == 0 {
                Speed::Max
            } else {
                Speed::Times(s.max(1))
            };
        }
    }
    // Screenshot and bench runs keep no settings and show the help only when asked.
    settings::load(
        &mut app,
        args.screenshot.is_none() && args.frame_bench.is_none(),
        args.show_help,
    );
    if let Some(seconds) = args.frame_bench {
        bench_frames::add(&mut app, bench_frames::FrameBench::new(seconds, 120));
    }
    if let Some(name) = &args.follow {
        app.insert_resource(inspect::FollowByName(name.clone()));
    }
    if args.follow.is_none() && args.select.is_none() && args.commands.is_none() && replay_none {
        app.insert_resource(inspect::WatchFirstAwake);
    }
    if let Some(name) = &args.select {
        app.insert_resource(shared::SelectByName(name.clone()));
    }
    if let Some(tab) = args.inspect {
        app.insert_resource(inspect::OpenTab(tab));
    }
    if let Some(file) = &args.commands {
        match crate::data::read_bounded(file, crate::data::MAX_TEXT_BYTES) {
            Ok(text) => {
                app.insert_resource(GameScript {
                    lines: text.lines().map(str::to_string).collect(),
                    frames: 0,
                });
            }
            Err(e) => {
                eprintln!("error: {}: cannot read the commands: {e}", file.display());
                return 2;
            }
        }
    }
    if let Some(path) = &args.screenshot {
        app.insert_resource(ScreenshotRun);
        app.insert_resource(AutoScreenshot {
            path: path.clone(),
            frames: args.frames.max(2),
            seen: 0,
            taken: false,
        })
        .add_systems(Update, take_auto_screenshot.in_set(AppSystems::Present));
    }
    match app.run() {
        AppExit::Success => 0,
        AppExit::Error(c) => c.get() as i32,
    }
}
