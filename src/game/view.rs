//! Camera and keyboard: the camera follows the avatar (F frees it to pan), the mouse wheel
//! zooms, WASD or the arrows walk the avatar, Space pauses, +/- change speed, F12 saves a
//! screenshot.

use super::people::AvatarStep;
use super::town::tile_to_world;
use crate::agent::avatar::{Avatar, AvatarMove};
use crate::sim::clock::SimPace;
use crate::sim::map::WorldMap;
use bevy::input::mouse::AccumulatedMouseScroll;
use bevy::prelude::*;
use bevy::render::view::screenshot::{Screenshot, save_to_disk};

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

/// Seconds per avatar step while a key is held.
const AVATAR_STEP_S: f32 = 0.14;

/// Spawns the camera.
pub fn spawn_camera(mut commands: Commands, map: Res<WorldMap>) {
    let centre = tile_to_world(
        &map,
        crate::sim::map::Tile::new(map.width / 2, map.height / 2),
    );
    commands.spawn((
        Camera2d,
        Projection::Orthographic(OrthographicProjection {
            scale: 0.55,
            ..OrthographicProjection::default_2d()
        }),
        Transform::from_xyz(centre.x, centre.y, 1000.0),
    ));
}

/// WASD/arrows: walk the avatar (or pan the free camera). In a replay nobody can be walked:
/// WASD pans the camera and the arrows are the replay's (`game::replay`).
pub fn read_movement_keys(
    keys: Res<ButtonInput<KeyCode>>,
    time: Res<Time>,
    replay: Option<Res<crate::save::replay::Replay>>,
    mut mode: ResMut<CameraMode>,
    mut step: ResMut<AvatarStep>,
    mut moves: MessageWriter<AvatarMove>,
    mut camera: Query<(&mut Transform, &Projection), With<Camera2d>>,
) {
    let arrows = replay.is_none();
    let mut dir = IVec2::ZERO;
    if keys.pressed(KeyCode::KeyW) || arrows && keys.pressed(KeyCode::ArrowUp) {
        dir.y -= 1;
    }
    if keys.pressed(KeyCode::KeyS) || arrows && keys.pressed(KeyCode::ArrowDown) {
        dir.y += 1;
    }
    if keys.pressed(KeyCode::KeyA) || arrows && keys.pressed(KeyCode::ArrowLeft) {
        dir.x -= 1;
    }
    if keys.pressed(KeyCode::KeyD) || arrows && keys.pressed(KeyCode::ArrowRight) {
        dir.x += 1;
    }
    if replay.is_some() && dir != IVec2::ZERO {
        mode.follow = false;
    }
    if !mode.follow {
        if let Ok((mut tf, proj)) = camera.single_mut() {
            let scale = if let Projection::Orthographic(o) = proj {
                o.scale
            } else {
                1.0
            };
            let speed = 600.0 * scale * time.delta_secs();
            tf.translation.x += dir.x as f32 * speed;
            tf.translation.y -= dir.y as f32 * speed;
        }
        return;
    }
    let dt = time.delta_secs() / AVATAR_STEP_S;
    if step.progress < 1.0 {
        step.progress = (step.progress + dt).min(1.0);
        return;
    }
    if dir != IVec2::ZERO {
        mode.watch = None;
        moves.write(AvatarMove {
            dx: dir.x,
            dy: dir.y,
        });
        step.progress = 0.0;
    }
}

/// Space, +/-, F and F12.
pub fn read_control_keys(
    keys: Res<ButtonInput<KeyCode>>,
    mut pace: ResMut<SimPace>,
    mut mode: ResMut<CameraMode>,
    mut commands: Commands,
    mut shots: Local<u32>,
) {
    if keys.just_pressed(KeyCode::Space) {
        pace.paused = !pace.paused;
    }
    if keys.any_just_pressed([KeyCode::Equal, KeyCode::NumpadAdd, KeyCode::BracketRight]) {
        pace.speed = pace.speed.faster();
    }
    if keys.any_just_pressed([
        KeyCode::Minus,
        KeyCode::NumpadSubtract,
        KeyCode::BracketLeft,
    ]) {
        pace.speed = pace.speed.slower();
    }
    if keys.just_pressed(KeyCode::KeyF) {
        mode.follow = !mode.follow;
    }
    if keys.just_pressed(KeyCode::F12) {
        *shots += 1;
        let path = format!("screenshot-{}.png", *shots);
        commands
            .spawn(Screenshot::primary_window())
            .observe(save_to_disk(path));
    }
}

/// Mouse wheel zoom.
pub fn zoom_camera(
    scroll: Res<AccumulatedMouseScroll>,
    mut camera: Query<&mut Projection, With<Camera2d>>,
) {
    if scroll.delta.y == 0.0 {
        return;
    }
    if let Ok(mut p) = camera.single_mut()
        && let Projection::Orthographic(o) = &mut *p
    {
        o.scale = (o.scale * (1.0 - scroll.delta.y * 0.1)).clamp(0.1, 4.0);
    }
}

/// Keeps the avatar (or the person watched) in view while following.
pub fn follow_avatar(
    mode: Res<CameraMode>,
    avatar: Query<&Transform, (With<Avatar>, Without<Camera2d>)>,
    people: Query<&Transform, Without<Camera2d>>,
    mut camera: Query<&mut Transform, With<Camera2d>>,
) {
    if !mode.follow {
        return;
    }
    let target = mode
        .watch
        .and_then(|e| people.get(e).ok())
        .or_else(|| avatar.single().ok());
    if let (Some(a), Ok(mut c)) = (target, camera.single_mut()) {
        c.translation.x = a.translation.x;
        c.translation.y = a.translation.y;
    }
}

/// The tile under the mouse, if any.
pub fn cursor_tile(
    window: &Window,
    camera: (&Camera, &GlobalTransform),
    map: &WorldMap,
) -> Option<crate::sim::map::Tile> {
    let cursor = window.cursor_position()?;
    let world = camera.0.viewport_to_world_2d(camera.1, cursor).ok()?;
    super::town::world_to_tile(map, world)
}
