//! What the window's parts share: the size of a tile and where a tile is drawn, the cursor's
//! tile, the town's camera and how it follows, the person selected, the panels open, the HUD's
//! bars, and night skipping. Every other file of `game` may use these; this file uses none of
//! them.

use crate::sim::clock::Speed;
use crate::sim::map::{Tile, WorldMap};
use bevy::prelude::*;
use bevy_ecs_tilemap::prelude::TilePos;

/// Pixels per tile side.
pub const TILE: u32 = 16;

/// The person shown in the inspector.
#[derive(Resource, Default)]
pub struct Selected(pub Option<Entity>);

/// A person to select by name once they exist (`play --select NAME`).
#[derive(Resource)]
pub struct SelectByName(pub String);

/// The panels' state.
#[derive(Resource, Default)]
pub struct Panels {
    /// The console is shown.
    pub console: bool,
    /// What is being typed in the console.
    pub console_input: String,
    /// Give the console's text field the keyboard next frame.
    pub focus_console: bool,
    /// What is being typed in the chat box.
    pub chat_input: String,
    /// The help overlay is shown.
    pub help: bool,
    /// The people list is shown.
    pub people: bool,
    /// Console lines already looked at for errors.
    pub seen_lines: usize,
    /// Console lines the console had shown (new ones scroll it down).
    pub console_shown: usize,
    /// The object whose state menu is open (its address).
    pub object: Option<String>,
    /// The state being typed in the object menu.
    pub object_input: String,
}

/// The HUD's two bars; the town's view lies between them (`view::fit_view_between_bars`).
#[derive(Component, Clone, Copy, PartialEq, Eq)]
pub enum Bar {
    /// Time, speed, the model's state; where you are.
    Top,
    /// The keys.
    Bottom,
}

/// Time runs ahead while every resident sleeps and nobody waits on the model (N turns it off).
#[derive(Resource)]
pub struct NightSkip {
    /// Allowed.
    pub enabled: bool,
    /// Running ahead now.
    pub active: bool,
    /// The speed to go back to.
    pub saved: Speed,
}

impl Default for NightSkip {
    fn default() -> Self {
        Self {
            enabled: true,
            active: false,
            saved: Speed::Times(1),
        }
    }
}

/// Camera state.
#[derive(Resource)]
pub struct CameraMode {
    /// Following the avatar (false: free panning).
    pub follow: bool,
    /// Watching this person instead of the avatar (`play --select NAME`), until the avatar walks.
    pub watch: Option<Entity>,
}

impl Default for CameraMode {
    fn default() -> Self {
        Self {
            follow: true,
            watch: None,
        }
    }
}

/// The camera that draws the town (the UI has a camera of its own, so the town's view can
/// leave room for the HUD's bars).
#[derive(Component)]
pub struct WorldCamera;

/// The default zoom (world units per pixel): a tile is 40 pixels, a person 25 by 55.
pub const DEFAULT_SCALE: f32 = 0.4;

/// The world position under the mouse, if the mouse is over the town's view (not over the
/// HUD's bars).
pub fn cursor_world(window: &Window, camera: (&Camera, &GlobalTransform)) -> Option<Vec2> {
    let cursor = window.cursor_position()?;
    if let Some(view) = camera.0.logical_viewport_rect()
        && !view.contains(cursor)
    {
        return None;
    }
    camera.0.viewport_to_world_2d(camera.1, cursor).ok()
}

/// The tile under the mouse, if any (none over the HUD's bars).
pub fn cursor_tile(
    window: &Window,
    camera: (&Camera, &GlobalTransform),
    map: &WorldMap,
) -> Option<crate::sim::map::Tile> {
    world_to_tile(map, cursor_world(window, camera)?)
}

/// World position (centre) of a tile. Map rows grow downwards, the world's y grows upwards.
pub fn tile_to_world(map: &WorldMap, t: Tile) -> Vec2 {
    Vec2::new(
        t.x as f32 * TILE as f32,
        (map.height - 1 - t.y) as f32 * TILE as f32,
    )
}

/// The tilemap position of a map tile (the tilemap's rows, like the world's y, grow upwards).
pub fn tile_pos(map: &WorldMap, t: Tile) -> TilePos {
    TilePos {
        x: t.x as u32,
        y: (map.height - 1 - t.y) as u32,
    }
}

/// The tile under a world position.
pub fn world_to_tile(map: &WorldMap, p: Vec2) -> Option<Tile> {
    let x = (p.x / TILE as f32 + 0.5).floor() as i32;
    let row = (p.y / TILE as f32 + 0.5).floor() as i32;
    let t = Tile::new(x, map.height - 1 - row);
    map.in_bounds(t).then_some(t)
}

/// Spawning the town's camera (at start), which what is drawn over the town waits for.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SpawnCamera;

/// The parts of the window's drawing (in `AppSystems::Present`), in this order: people's
/// sprites and bubbles, objects, the sky, people placed, labels, the camera, lit windows, the
/// HUD, the settings kept. Each file puts its drawing systems into its part.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Present {
    /// People's sprites, bubbles, speech and thoughts, walk animation.
    Sprites,
    /// Object markers and states.
    Objects,
    /// The light of the hour.
    Sky,
    /// People placed between tiles.
    Place,
    /// Icons, labels, speech bubbles arranged, the selection ring.
    Labels,
    /// The camera: following, zoom and pan, kept on the town and between the bars.
    Camera,
    /// Windows lit where someone is awake.
    Windows,
    /// The HUD and its notices.
    Hud,
    /// Settings kept.
    Settings,
}

/// A game time as the panels show it: `MM-DD hh:mm`.
pub fn short_time(t: crate::sim::time::GameTime) -> String {
    let (_, m, d) = t.ymd();
    let (h, mi, _) = t.hms();
    format!("{m:02}-{d:02} {h:02}:{mi:02}")
}
