//! Day and night over the town: a tint over the view that darkens and blues it by game time
//! (dusk from 18:00, night from 21:00 to 05:00, dawn until 07:30), and each building's name over
//! it. The tint is a window-sized layer under the HUD: a translucent world sprite does not blend
//! over the tilemap as it should under the software renderer (dark tints came out lighter).

use super::art::TILE;
use super::town::tile_to_world;
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

/// The tint's colour at a darkness: warm at dusk and dawn, deep blue at night.
pub fn tint(dark: f32) -> Color {
    if dark <= 0.0 {
        return Color::NONE;
    }
    let warm = Vec3::new(0.55, 0.25, 0.2);
    let night = Vec3::new(0.02, 0.04, 0.16);
    // Warm while it is still light, blue as it gets dark.
    let c = warm.lerp(night, dark.clamp(0.0, 1.0).sqrt());
    Color::srgba(c.x, c.y, c.z, 0.85 * dark)
}

fn rect_centre(map: &WorldMap, r: &Rect) -> (Vec2, Vec2) {
    let a = tile_to_world(map, Tile::new(r.x, r.y));
    let b = tile_to_world(map, Tile::new(r.x + r.w - 1, r.y + r.h - 1));
    let size = Vec2::new(r.w as f32, r.h as f32) * TILE as f32;
    ((a + b) / 2.0, size)
}

/// Spawns the tint and the buildings' names.
pub fn spawn_daylight(mut commands: Commands, map: Res<WorldMap>) {
    commands.spawn((
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

/// Tints the view by the game's time of day.
pub fn update_daylight(
    clock: Res<SimClock>,
    mut tint_q: Query<&mut BackgroundColor, With<NightTint>>,
    mut last: Local<Option<u32>>,
) {
    let minute = clock.now.minute_of_day();
    if *last == Some(minute) {
        return;
    }
    *last = Some(minute);
    if let Ok(mut bg) = tint_q.single_mut() {
        bg.0 = tint(darkness(minute));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
