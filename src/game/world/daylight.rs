//! Day and night over the town: a tint over the view that darkens and blues it by game time
//! (dusk from 18:00, night from 21:00 to 05:00, dawn until 07:30), and each building's name over
//! it. The tint is a window-sized layer under the HUD: a translucent world sprite does not blend
//! over the tilemap as it should under the software renderer (dark tints came out lighter).
//! At night the windows of a building where someone is awake glow over the tint (small warm
//! layers placed over the buildings' front walls each frame).

use crate::game::shared::TILE;
use crate::game::shared::tile_to_world;
use crate::sim::clock::SimClock;
use crate::sim::map::{Rect, Tile, WorldMap};
use bevy::prelude::*;

/// The tint over the whole town.
#[derive(Component)]
pub struct NightTint;

/// How dark it is at a minute of the day: 0 (day) to 1 (night).
pub fn darkness(minute: u32) -> f32 {
    let h = minute as f32 / 60.0;
    let ramp = |from: f32, to: f32| ((h - from) / (to - from)).clamp(0.0, 1.0);
    if !(5.0..21.0).contains(&h) {
        1.0
    } else if h < 7.5 {
        1.0 - ramp(5.0, 7.5)
    } else if h >= 18.0 {
        ramp(18.0, 21.0)
    } else {
        0.0
    }
}

/// How much of the town's brightness the night leaves (at full darkness, as the eye sees it):
/// dark enough to read as night, light enough to see who walks where.
const NIGHT_LEFT: f32 = 0.23;

/// The tint's colour at a darkness: warm at dusk and dawn, deep blue at night. The tint is
/// blended in linear light, where a given alpha leaves far more of the town's brightness than
/// the eye expects (an alpha of 0.85 left grass at about 40 %); the alpha is chosen so that the
/// brightness left, as seen, falls evenly to [`NIGHT_LEFT`].
pub fn tint(dark: f32) -> Color {
    if dark <= 0.0 {
        return Color::NONE;
    }
    let dark = dark.clamp(0.0, 1.0);
    let warm = Vec3::new(0.55, 0.25, 0.2);
    let night = Vec3::new(0.02, 0.04, 0.16);
    // Warm while it is still light, blue as it gets dark.
    let c = warm.lerp(night, dark.sqrt());
    // Seen brightness left ≈ (1 − alpha)^(1/2.2): alpha = 1 − (seen left)^2.2.
    let seen_left = 1.0 - (1.0 - NIGHT_LEFT) * dark;
    Color::srgba(c.x, c.y, c.z, 1.0 - seen_left.powf(2.2))
}

fn rect_centre(map: &WorldMap, r: &Rect) -> (Vec2, Vec2) {
    let a = tile_to_world(map, Tile::new(r.x, r.y));
    let b = tile_to_world(map, Tile::new(r.x + r.w - 1, r.y + r.h - 1));
    let size = Vec2::new(r.w as f32, r.h as f32) * TILE as f32;
    ((a + b) / 2.0, size)
}

/// The town camera's UI target: the tint and the windows belong to the town's view (drawn by
/// its camera, under every panel and the HUD, which the UI camera draws after).
fn town_view(
    camera: &Query<Entity, With<crate::game::shared::WorldCamera>>,
) -> Option<UiTargetCamera> {
    camera.single().ok().map(UiTargetCamera)
}

/// Spawns the tint and the buildings' names (after the cameras).
pub fn spawn_daylight(
    mut commands: Commands,
    map: Res<WorldMap>,
    camera: Query<Entity, With<crate::game::shared::WorldCamera>>,
) {
    let mut tint = commands.spawn((
        NightTint,
        Node {
            position_type: PositionType::Absolute,
            width: percent(100.0),
            height: percent(100.0),
            ..default()
        },
        BackgroundColor(Color::NONE),
        GlobalZIndex(-10),
    ));
    if let Some(t) = town_view(&camera) {
        tint.insert(t);
    }
    const OVERSAMPLE: f32 = 4.0;
    for sector in &map.sectors {
        if sector.arenas.is_empty() {
            continue; // open ground (a street, a field): no building to name
        }
        let (centre, size) = rect_centre(&map, &sector.rect);
        commands.spawn((
            Text2d::new(sector.name.clone()),
            TextFont {
                font_size: FontSize::Px(6.0 * OVERSAMPLE),
                ..default()
            },
            TextColor(Color::srgba(1.0, 1.0, 1.0, 0.95)),
            TextBackgroundColor(Color::srgba(0.1, 0.1, 0.2, 0.55)),
            Transform::from_xyz(centre.x, centre.y + size.y / 2.0 - 5.0, 9.4)
                .with_scale(Vec3::splat(1.0 / OVERSAMPLE)),
        ));
    }
}

/// A window in a building's front wall: its sector and wall tile.
#[derive(Component)]
pub struct LitWindow {
    sector: usize,
    tile: Tile,
}

/// The window tiles of a town: every third wall tile (doors excepted) along the bottom edge of
/// each building, the wall a player looks at.
pub fn window_tiles(map: &WorldMap) -> Vec<(usize, Tile)> {
    let mut out = Vec::new();
    for (i, s) in map.sectors.iter().enumerate() {
        if s.arenas.is_empty() || s.rect.w < 4 {
            continue;
        }
        let y = s.rect.y + s.rect.h - 1;
        for x in (s.rect.x + 2..s.rect.x + s.rect.w - 2).step_by(3) {
            let t = Tile::new(x, y);
            let beside_door = [Tile::new(x - 1, y), Tile::new(x + 1, y)]
                .iter()
                .any(|n| map.terrain(*n) == Some(crate::sim::map::Terrain::Door));
            if map.terrain(t) == Some(crate::sim::map::Terrain::Wall) && !beside_door {
                out.push((i, t));
            }
        }
    }
    out
}

/// Spawns the windows' glow (hidden by day; after the cameras).
pub fn spawn_windows(
    mut commands: Commands,
    map: Res<WorldMap>,
    camera: Query<Entity, With<crate::game::shared::WorldCamera>>,
) {
    for (sector, tile) in window_tiles(&map) {
        let mut window = commands.spawn((
            LitWindow { sector, tile },
            Node {
                position_type: PositionType::Absolute,
                ..default()
            },
            BackgroundColor(Color::srgba(1.0, 0.82, 0.4, 0.0)),
            GlobalZIndex(-9),
            Visibility::Hidden,
        ));
        if let Some(t) = town_view(&camera) {
            window.insert(t);
        }
    }
}

/// At night, lights the windows of buildings where someone is awake, over the tint.
pub fn light_windows(
    clock: Res<SimClock>,
    map: Res<WorldMap>,
    ui_scale: Res<UiScale>,
    camera: Query<(&Camera, &GlobalTransform, &Projection), With<crate::game::shared::WorldCamera>>,
    people: Query<(&crate::agent::GridPos, &crate::agent::CurrentAction)>,
    mut windows: Query<(&LitWindow, &mut Node, &mut BackgroundColor, &mut Visibility)>,
) {
    let dark = darkness(clock.now.minute_of_day());
    let Ok((cam, cam_tf, proj)) = camera.single() else {
        return;
    };
    let scale = match proj {
        Projection::Orthographic(o) => o.scale,
        _ => 1.0,
    };
    let mut awake = vec![false; map.sectors.len()];
    if dark > 0.3 {
        for (pos, action) in &people {
            if !crate::game::world::people::looks_asleep(action)
                && let Some(s) = map.sector_at(pos.tile)
            {
                awake[s] = true;
            }
        }
    }
    let tile_px = TILE as f32 / scale / ui_scale.0.max(0.1);
    for (w, mut node, mut bg, mut vis) in &mut windows {
        let lit = dark > 0.3 && awake[w.sector];
        let at = lit
            .then(|| {
                cam.world_to_viewport(cam_tf, tile_to_world(&map, w.tile).extend(0.0))
                    .ok()
            })
            .flatten();
        let Some(p) = at else {
            if *vis != Visibility::Hidden {
                *vis = Visibility::Hidden;
            }
            continue;
        };
        // Relative to the town's view (the nodes are laid out in it), in UI units.
        let origin = cam.logical_viewport_rect().map_or(Vec2::ZERO, |r| r.min);
        let p = (p - origin) / ui_scale.0.max(0.1);
        node.left = px(p.x - tile_px * 0.3);
        node.top = px(p.y - tile_px * 0.25);
        node.width = px(tile_px * 0.6);
        node.height = px(tile_px * 0.45);
        // Lit windows stand out against the night: full at dark, fading in with the dusk.
        bg.0 = Color::srgba(1.0, 0.82, 0.4, (1.6 * dark).min(1.0));
        if *vis != Visibility::Inherited {
            *vis = Visibility::Inherited;
        }
    }
}

/// Tints the view by the game's time of day; the tint keeps the size of the town's view (in
/// pixels: the view changes size with the HUD's bars).
pub fn update_daylight(
    clock: Res<SimClock>,
    ui_scale: Res<UiScale>,
    camera: Query<&Camera, With<crate::game::shared::WorldCamera>>,
    mut tint_q: Query<(&mut BackgroundColor, &mut Node), With<NightTint>>,
) {
    let Ok((mut bg, mut node)) = tint_q.single_mut() else {
        return;
    };
    let want = tint(darkness(clock.now.minute_of_day()));
    if bg.0 != want {
        bg.0 = want;
    }
    if let Some(size) = camera.single().ok().and_then(Camera::logical_viewport_size) {
        let size = size / ui_scale.0.max(0.1);
        let (w, h) = (px(size.x.ceil()), px(size.y.ceil()));
        if node.width != w || node.height != h {
            node.width = w;
            node.height = h;
        }
    }
}

/// Adds this part of the window: its resources and systems, each in its place in the frame.
pub(crate) fn plugin(app: &mut App) {
    app.add_systems(
        Startup,
        (spawn_daylight, spawn_windows).after(crate::game::shared::SpawnCamera),
    )
    .add_systems(
        Update,
        update_daylight.in_set(crate::game::shared::Present::Sky),
    )
    .add_systems(
        Update,
        light_windows.in_set(crate::game::shared::Present::Windows),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Grass (the town's commonest colour) under the tint, blended as the renderer blends: in
    /// linear light.
    fn grass_under(dark: f32) -> f32 {
        let lin = |c: f32| {
            if c <= 0.04045 {
                c / 12.92
            } else {
                ((c + 0.055) / 1.055).powf(2.4)
            }
        };
        let srgb = |l: f32| {
            if l <= 0.0031308 {
                l * 12.92
            } else {
                1.055 * l.powf(1.0 / 2.4) - 0.055
            }
        };
        let grass = 152.0 / 255.0; // the green channel, the brightest
        let t = tint(dark).to_srgba();
        let out = lin(grass) * (1.0 - t.alpha) + lin(t.green) * t.alpha;
        srgb(out) / grass
    }

    #[test]
    fn night_leaves_a_quarter_of_the_brightness_and_dusk_more() {
        let night = grass_under(1.0);
        assert!((0.15..0.30).contains(&night), "night leaves {night}");
        let dusk = grass_under(0.5);
        assert!((0.45..0.75).contains(&dusk), "dusk leaves {dusk}");
        assert_eq!(tint(0.0), Color::NONE);
    }

    #[test]
    fn night_dusk_and_dawn() {
        assert_eq!(darkness(0), 1.0);
        assert_eq!(darkness(4 * 60 + 59), 1.0);
        assert_eq!(darkness(12 * 60), 0.0);
        assert_eq!(darkness(7 * 60 + 30), 0.0);
        assert_eq!(darkness(23 * 60), 1.0);
        let dusk = darkness(19 * 60 + 30);
        assert!((dusk - 0.5).abs() < 1e-3, "{dusk}");
        assert!(darkness(6 * 60) > 0.5 && darkness(6 * 60) < 1.0);
        assert_eq!(tint(0.0), Color::NONE);
        assert!(tint(1.0).alpha() > 0.5);
    }

    #[test]
    fn buildings_have_windows_in_their_front_walls() {
        let map = crate::sim::map::load_map(std::path::Path::new("maps/smallville.ron"))
            .expect("the bundled town");
        let windows = window_tiles(&map);
        let cafe = map.sector_by_name("Hobbs Cafe").expect("the cafe");
        assert!(windows.iter().filter(|(s, _)| *s == cafe).count() >= 3);
        for (s, t) in &windows {
            assert_eq!(map.terrain(*t), Some(crate::sim::map::Terrain::Wall));
            assert_eq!(t.y, map.sectors[*s].rect.y + map.sectors[*s].rect.h - 1);
        }
    }
}
