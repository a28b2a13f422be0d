//! Camera and keyboard: the camera follows the avatar (F frees it to pan), the mouse wheel
//! zooms, dragging with the right (or middle) button pans, WASD or the arrows walk the avatar,
//! Space pauses, +/- change speed, F12 saves a screenshot. The view stays on the town: its centre
//! never leaves the map and it never zooms out much past the whole town.

use crate::agent::avatar::{Avatar, AvatarMove};
use crate::game::shared::{CameraMode, DEFAULT_SCALE, WorldCamera, tile_to_world};
use crate::game::world::people::AvatarStep;
use crate::sim::clock::SimPace;
use crate::sim::map::WorldMap;
use bevy::input::mouse::{AccumulatedMouseMotion, AccumulatedMouseScroll};
use bevy::prelude::*;
use bevy::render::view::screenshot::{Screenshot, save_to_disk};

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
        WorldCamera,
        Projection::Orthographic(OrthographicProjection {
            scale: DEFAULT_SCALE,
            ..OrthographicProjection::default_2d()
        }),
        Transform::from_xyz(centre.x, centre.y, 1000.0),
    ));
    // The HUD, the panels and egui draw over the whole window with their own camera, which
    // sees no world layer.
    commands.spawn((
        Camera2d,
        Camera {
            order: 1,
            clear_color: ClearColorConfig::None,
            ..default()
        },
        IsDefaultUiCamera,
        bevy_egui::PrimaryEguiContext,
        bevy::camera::visibility::RenderLayers::layer(31),
    ));
}

/// The HUD's bars in physical pixels: (top, bottom).
fn bar_heights(bars: &Query<(&ComputedNode, &crate::game::shared::Bar)>) -> (f32, f32) {
    // Physical pixels (a node's size is; its inverse scale factor would also undo the UI scale).
    let (mut top, mut bottom) = (0.0f32, 0.0f32);
    for (node, bar) in bars {
        let h = node.size().y;
        match bar {
            crate::game::shared::Bar::Top => top = top.max(h),
            crate::game::shared::Bar::Bottom => bottom = bottom.max(h),
        }
    }
    (top, bottom)
}

/// egui's windows (inspector, console, menus) keep between the HUD's bars: the bars are egui's
/// "safe area" insets.
pub fn keep_egui_between_bars(
    window: Query<&Window, With<bevy::window::PrimaryWindow>>,
    bars: Query<(&ComputedNode, &crate::game::shared::Bar)>,
    mut egui: Query<(&mut bevy_egui::EguiInput, &bevy_egui::EguiZoomFactor)>,
    mut last: Local<(f32, f32, f32)>,
) {
    // egui's points are logical pixels times its zoom.
    let scale = window.single().map_or(1.0, |w| w.scale_factor()).max(0.1);
    let (top, bottom) = bar_heights(&bars);
    let (top, bottom) = (top / scale, bottom / scale);
    for (mut input, settings) in &mut egui {
        let zoom = settings.zoom_factor.max(0.1);
        if *last != (top, bottom, zoom) || input.0.safe_area_insets.is_none() {
            input.0.safe_area_insets = Some(bevy_egui::egui::SafeAreaInsets(
                bevy_egui::egui::epaint::MarginF32 {
                    top: top / zoom,
                    bottom: bottom / zoom,
                    left: 0.0,
                    right: 0.0,
                },
            ));
        }
        *last = (top, bottom, zoom);
    }
}

/// The town's view is the window less the HUD's top bar and the key bar at the bottom, so the
/// HUD never covers the town.
pub fn fit_view_between_bars(
    window: Query<&Window, With<bevy::window::PrimaryWindow>>,
    bars: Query<(&ComputedNode, &crate::game::shared::Bar)>,
    mut camera: Query<&mut Camera, With<WorldCamera>>,
) {
    let (Ok(window), Ok(mut camera)) = (window.single(), camera.single_mut()) else {
        return;
    };
    let size = window.physical_size();
    let (top, bottom) = bar_heights(&bars);
    let (top, bottom) = (top.round() as u32, bottom.round() as u32);
    if size.x == 0 || size.y <= top + bottom + 16 {
        return;
    }
    let want = bevy::camera::Viewport {
        physical_position: UVec2::new(0, top),
        physical_size: UVec2::new(size.x, size.y - top - bottom),
        ..default()
    };
    let same = camera.viewport.as_ref().is_some_and(|v| {
        v.physical_position == want.physical_position && v.physical_size == want.physical_size
    });
    if !same {
        camera.viewport = Some(want);
    }
}

/// WASD/arrows: walk the avatar (or pan the free camera). In a replay nobody can be walked:
/// WASD pans the camera and the arrows are the replay's (`game::panels::replay_bar`).
pub fn read_movement_keys(
    keys: Res<ButtonInput<KeyCode>>,
    time: Res<Time>,
    replay: Option<Res<crate::save::replay::Replay>>,
    mut mode: ResMut<CameraMode>,
    mut step: ResMut<AvatarStep>,
    mut moves: MessageWriter<AvatarMove>,
    mut camera: Query<(&mut Transform, &Projection), With<WorldCamera>>,
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
    selected: Res<crate::game::shared::Selected>,
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
        follow_key(&mut mode, selected.0);
    }
    if keys.just_pressed(KeyCode::F12) {
        *shots += 1;
        let path = format!("screenshot-{}.png", *shots);
        commands
            .spawn(Screenshot::primary_window())
            .observe(save_to_disk(path));
    }
}

/// F: follow the person selected in the inspector, and pressed again, the avatar (with someone
/// selected F goes between the two); with nobody selected, back to the avatar from anyone else,
/// else free the camera / follow the avatar again.
pub fn follow_key(mode: &mut CameraMode, selected: Option<Entity>) {
    match (selected, mode.watch) {
        (Some(e), w) if w != Some(e) || !mode.follow => {
            mode.watch = Some(e);
            mode.follow = true;
        }
        (_, Some(_)) => {
            mode.watch = None;
            mode.follow = true;
        }
        _ => mode.follow = !mode.follow,
    }
}

/// Most zoomed in (world units per pixel).
pub const MIN_SCALE: f32 = 0.15;

/// Mouse wheel zoom, from most zoomed in down to the whole town in the window (a little more).
pub fn zoom_camera(
    scroll: Res<AccumulatedMouseScroll>,
    map: Res<WorldMap>,
    window: Query<&Window>,
    mut camera: Query<&mut Projection, With<WorldCamera>>,
) {
    if scroll.delta.y == 0.0 {
        return;
    }
    let fit = whole_town_scale(&map, window.single().ok());
    if let Ok(mut p) = camera.single_mut()
        && let Projection::Orthographic(o) = &mut *p
    {
        o.scale = (o.scale * (1.0 - scroll.delta.y * 0.1)).clamp(MIN_SCALE, fit.max(MIN_SCALE));
    }
}

/// The scale at which the whole town fits the window, with a tenth to spare.
pub fn whole_town_scale(map: &WorldMap, window: Option<&Window>) -> f32 {
    let (w, h) = window.map_or((1280.0, 720.0), |w| (w.width(), w.height()));
    let town = town_size(map);
    (town.x / w.max(1.0)).max(town.y / h.max(1.0)) * 1.1
}

/// The town's size in world units.
fn town_size(map: &WorldMap) -> Vec2 {
    Vec2::new(
        map.width as f32 * crate::game::shared::TILE as f32,
        map.height as f32 * crate::game::shared::TILE as f32,
    )
}

/// Dragging with the right or middle mouse button pans the view (and stops following).
pub fn drag_camera(
    buttons: Res<ButtonInput<MouseButton>>,
    motion: Res<AccumulatedMouseMotion>,
    mut mode: ResMut<CameraMode>,
    mut camera: Query<(&mut Transform, &Projection), With<WorldCamera>>,
) {
    if motion.delta == Vec2::ZERO || !buttons.any_pressed([MouseButton::Right, MouseButton::Middle])
    {
        return;
    }
    if let Ok((mut tf, proj)) = camera.single_mut() {
        let scale = match proj {
            Projection::Orthographic(o) => o.scale,
            _ => 1.0,
        };
        mode.follow = false;
        // The town moves with the mouse (screen y grows downwards, world y upwards).
        tf.translation.x -= motion.delta.x * scale;
        tf.translation.y += motion.delta.y * scale;
    }
}

/// Keeps the view's centre on the town.
pub fn keep_camera_on_town(
    map: Res<WorldMap>,
    mut camera: Query<&mut Transform, With<WorldCamera>>,
) {
    let half = crate::game::shared::TILE as f32 / 2.0;
    let size = town_size(&map);
    if let Ok(mut tf) = camera.single_mut() {
        let (x, y) = (
            tf.translation.x.clamp(-half, size.x - half),
            tf.translation.y.clamp(-half, size.y - half),
        );
        if (x, y) != (tf.translation.x, tf.translation.y) {
            tf.translation.x = x;
            tf.translation.y = y;
        }
    }
}

/// Keeps the avatar (or the person watched) in view while following.
pub fn follow_avatar(
    mode: Res<CameraMode>,
    avatar: Query<&Transform, (With<Avatar>, Without<WorldCamera>)>,
    people: Query<&Transform, Without<WorldCamera>>,
    mut camera: Query<&mut Transform, With<WorldCamera>>,
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

/// Adds this part of the window: its resources and systems, each in its place in the frame.
pub(crate) fn plugin(app: &mut App) {
    app.add_systems(
        Startup,
        spawn_camera.in_set(crate::game::shared::SpawnCamera),
    )
    .add_systems(
        Update,
        (read_control_keys, read_movement_keys)
            .run_if(not(bevy_egui::input::egui_wants_any_keyboard_input))
            .in_set(crate::AppSystems::Input),
    )
    .add_systems(
        PreUpdate,
        keep_egui_between_bars
            .after(bevy_egui::EguiPreUpdateSet::ProcessInput)
            .before(bevy_egui::EguiPreUpdateSet::BeginPass),
    )
    .add_systems(
        Update,
        (
            follow_avatar,
            (zoom_camera, drag_camera).run_if(not(bevy_egui::input::egui_wants_any_pointer_input)),
            keep_camera_on_town,
            fit_view_between_bars,
        )
            .chain()
            .in_set(crate::game::shared::Present::Camera),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use bevy::input::mouse::{AccumulatedMouseMotion, AccumulatedMouseScroll};

    fn app() -> App {
        let mut app = App::new();
        app.add_plugins(MinimalPlugins)
            .insert_resource(
                crate::sim::map::load_map(std::path::Path::new("maps/smallville.ron"))
                    .expect("the bundled town"),
            )
            .init_resource::<CameraMode>()
            .init_resource::<AccumulatedMouseScroll>()
            .init_resource::<AccumulatedMouseMotion>()
            .init_resource::<ButtonInput<MouseButton>>()
            .add_systems(
                Update,
                (zoom_camera, drag_camera, keep_camera_on_town).chain(),
            );
        app.world_mut().spawn((
            WorldCamera,
            Projection::Orthographic(OrthographicProjection {
                scale: 0.55,
                ..OrthographicProjection::default_2d()
            }),
            Transform::from_xyz(1000.0, 800.0, 1000.0),
        ));
        app
    }

    fn camera(app: &mut App) -> (Vec3, f32) {
        let world = app.world_mut();
        let mut q = world.query_filtered::<(&Transform, &Projection), With<WorldCamera>>();
        let (tf, p) = q.single(world).expect("one camera");
        let Projection::Orthographic(o) = p else {
            panic!("orthographic")
        };
        (tf.translation, o.scale)
    }

    #[test]
    fn the_wheel_zooms_and_a_drag_pans_within_the_town() {
        let mut app = app();
        app.update();
        let (at, scale) = camera(&mut app);
        // Wheel up: closer.
        app.world_mut()
            .resource_mut::<AccumulatedMouseScroll>()
            .delta = Vec2::new(0.0, 2.0);
        app.update();
        let (_, closer) = camera(&mut app);
        assert!(closer < scale, "{closer} < {scale}");
        // Far out: never past the whole town.
        app.world_mut()
            .resource_mut::<AccumulatedMouseScroll>()
            .delta = Vec2::new(0.0, -9.0);
        for _ in 0..50 {
            app.update();
        }
        let (_, far) = camera(&mut app);
        let map = app.world().resource::<WorldMap>().clone();
        assert!((far - whole_town_scale(&map, None)).abs() < 1e-3, "{far}");
        app.world_mut()
            .resource_mut::<AccumulatedMouseScroll>()
            .delta = Vec2::ZERO;
        // A move without a button held pans nothing; a right-button drag does.
        app.world_mut()
            .resource_mut::<AccumulatedMouseMotion>()
            .delta = Vec2::new(40.0, 10.0);
        app.update();
        assert_eq!(camera(&mut app).0, at);
        app.world_mut()
            .resource_mut::<ButtonInput<MouseButton>>()
            .press(MouseButton::Right);
        app.update();
        let (dragged, _) = camera(&mut app);
        assert!(dragged.x < at.x && dragged.y > at.y, "{at} → {dragged}");
        assert!(
            !app.world().resource::<CameraMode>().follow,
            "a drag frees the camera"
        );
        // Dragging on and on stops at the town's edge.
        app.world_mut()
            .resource_mut::<AccumulatedMouseMotion>()
            .delta = Vec2::new(5000.0, 0.0);
        for _ in 0..20 {
            app.update();
        }
        let (edge, _) = camera(&mut app);
        assert_eq!(edge.x, -(crate::game::shared::TILE as f32) / 2.0);
    }

    #[test]
    fn f_follows_the_selected_person_then_the_avatar_then_frees_the_camera() {
        let someone = Entity::from_raw_u32(7).expect("an entity");
        let mut mode = CameraMode::default();
        follow_key(&mut mode, Some(someone));
        assert_eq!((mode.watch, mode.follow), (Some(someone), true));
        follow_key(&mut mode, Some(someone));
        assert_eq!(
            (mode.watch, mode.follow),
            (None, true),
            "back to the avatar"
        );
        follow_key(&mut mode, None);
        assert!(!mode.follow, "with nobody selected F frees the camera");
        follow_key(&mut mode, None);
        assert!(mode.follow && mode.watch.is_none());
        // Dragged away from someone watched (follow off, watch kept): F is back on the avatar.
        mode.watch = Some(someone);
        mode.follow = false;
        follow_key(&mut mode, None);
        assert_eq!((mode.watch, mode.follow), (None, true));
        // With someone selected, F goes between them and the avatar.
        follow_key(&mut mode, Some(someone));
        follow_key(&mut mode, Some(someone));
        follow_key(&mut mode, Some(someone));
        assert_eq!((mode.watch, mode.follow), (Some(someone), true));
    }
}
