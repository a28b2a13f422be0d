//! The HUD: date, time and speed; LLM state (ok, slow, down, starting; queue); the place under
//! the cursor; the controls.

use super::view::cursor_tile;
use crate::agent::GridPos;
use crate::agent::avatar::Avatar;
use crate::llm::LlmStatusView;
use crate::llm::backend::Health;
use crate::sim::clock::{SimClock, SimPace};
use crate::sim::map::WorldMap;
use bevy::prelude::*;
use bevy::window::PrimaryWindow;

/// The HUD's status text.
#[derive(Component)]
pub struct HudText;

/// The controls line.
pub const CONTROLS: &str = "WASD/arrows walk | click a person: details (Esc closes) | wheel zoom | F free camera | Space pause | +/- speed | F12 screenshot";

/// Spawns the HUD panels.
pub fn spawn_hud(mut commands: Commands) {
    let font = TextFont { font_size: FontSize::Px(15.0), ..default() };
    commands.spawn((
        Node { position_type: PositionType::Absolute, top: px(8.0), left: px(8.0), padding: UiRect::all(px(6.0)), ..default() },
        BackgroundColor(Color::srgba(0.05, 0.06, 0.1, 0.78)),
        children![(Text::new("Smallville"), font.clone(), TextColor(Color::WHITE), HudText)],
    ));
    commands.spawn((
        Node { position_type: PositionType::Absolute, bottom: px(8.0), left: px(8.0), padding: UiRect::all(px(5.0)), ..default() },
        BackgroundColor(Color::srgba(0.05, 0.06, 0.1, 0.7)),
        children![(Text::new(CONTROLS), TextFont { font_size: FontSize::Px(13.0), ..default() }, TextColor(Color::srgb(0.85, 0.88, 0.95)))],
    ));
}

/// Rewrites the HUD text.
pub fn update_hud(
    clock: Res<SimClock>,
    pace: Res<SimPace>,
    llm: Res<LlmStatusView>,
    map: Res<WorldMap>,
    window: Query<&Window, With<PrimaryWindow>>,
    camera: Query<(&Camera, &GlobalTransform)>,
    avatar: Query<&GridPos, With<Avatar>>,
    mut text: Query<&mut Text, With<HudText>>,
) {
    let Ok(mut text) = text.single_mut() else { return };
    let speed = if pace.paused { "paused".to_string() } else { pace.speed.label() };
    let health = match llm.status.overall() {
        Health::Ok => "ok",
        Health::Slow => "slow",
        Health::Down => "DOWN (agents use their routine)",
        Health::Starting => "starting",
    };
    let names: Vec<&str> = llm.status.backends.iter().map(|b| b.name.as_str()).collect();
    let mut s = format!(
        "{} {} | {} | {}  (step {})\nLLM {}: {health} | queue {} | running {} | {} calls, {} cached, {} fail-safe",
        clock.now.weekday(),
        clock.now.date_string(),
        clock.now.clock_12h(),
        speed,
        clock.step,
        names.join("+"),
        llm.status.queued(),
        llm.status.in_flight(),
        llm.totals.calls,
        llm.totals.cache_hits,
        llm.totals.fallbacks,
    );
    if llm.status.overall() == Health::Down
        && let Some(b) = llm.status.backends.iter().find(|b| b.health == Health::Down)
    {
        let detail: String = b.detail.chars().take(110).collect();
        s.push_str(&format!("\n  {detail}"));
    }
    if let Ok(a) = avatar.single() {
        s.push_str(&format!("\nYou: {}", map.address(a.tile)));
    }
    if let (Ok(w), Ok(cam)) = (window.single(), camera.single())
        && let Some(t) = cursor_tile(w, cam, &map)
    {
        s.push_str(&format!("\nCursor {t}: {}", map.address(t)));
    }
    if text.0 != s {
        text.0 = s;
    }
}
