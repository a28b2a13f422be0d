//! The HUD: date, time and speed; LLM state (ok, slow, down, starting; queue); the place under
//! the cursor; the controls.

use crate::agent::GridPos;
use crate::agent::avatar::Avatar;
use crate::agent::{CurrentAction, Resident};
use crate::game::shared::cursor_tile;
use crate::game::shared::{Bar, NightSkip};
use crate::llm::LlmStatusView;
use crate::llm::backend::Health;
use crate::sim::clock::{SimClock, SimPace, Speed, StepGate};
use crate::sim::map::WorldMap;
use bevy::prelude::*;
use bevy::window::PrimaryWindow;

/// The HUD's status text (left of the top bar).
#[derive(Component)]
pub struct HudText;

/// Where the player is and what is under the mouse (right of the top bar).
#[derive(Component)]
pub struct HudWhere;

/// A short notice under the top bar: the console's answer to a key (F5 "saved …", F9), shown
/// for a few seconds while the console is closed.
#[derive(Component)]
pub struct Toast {
    until: f64,
}

/// The controls line.
pub const CONTROLS: &str = "WASD/arrows walk | T talk | ` console | P people | L conversations | M map | F follow | O settings | H help | click a person: inspector | wheel zoom, right-drag pan | Space pause | +/- speed | F5 save | F2 saves | F12 screenshot";

/// The keys of a replay.
pub const REPLAY_CONTROLS: &str = "Space play/pause | +/- speed | arrows: a minute (Shift: ten) | PgUp/PgDn an hour | Home/End | WASD pan, F follow | click a person: inspector";

/// N turns skipping nights on and off.
pub fn toggle_night_skip(keys: Res<ButtonInput<KeyCode>>, mut skip: ResMut<NightSkip>) {
    if keys.just_pressed(KeyCode::KeyN) {
        skip.enabled = !skip.enabled;
    }
}

/// Runs time at full speed while everyone sleeps, back to the chosen speed when someone wakes.
pub fn skip_nights(
    mut skip: ResMut<NightSkip>,
    mut pace: ResMut<SimPace>,
    gate: Res<StepGate>,
    replay: Option<Res<crate::save::replay::Replay>>,
    people: Query<&CurrentAction, With<Resident>>,
) {
    if replay.is_some() {
        return; // a replay's speed is the viewer's
    }
    let all_asleep = !people.is_empty() && people.iter().all(CurrentAction::is_asleep);
    let want = skip.enabled && all_asleep && gate.waiting == 0 && !pace.paused;
    if want && !skip.active {
        skip.saved = pace.speed;
        pace.speed = Speed::Max;
        skip.active = true;
    } else if !want && skip.active {
        if pace.speed == Speed::Max {
            pace.speed = skip.saved;
        }
        skip.active = false;
    }
}

/// Spawns the HUD panels.
pub fn spawn_hud(mut commands: Commands, replay: Option<Res<crate::save::replay::Replay>>) {
    let bar = Color::srgb(0.05, 0.06, 0.1);
    commands.spawn((
        Bar::Top,
        Node {
            position_type: PositionType::Absolute,
            top: px(0.0),
            left: px(0.0),
            right: px(0.0),
            padding: UiRect::axes(px(8.0), px(4.0)),
            justify_content: JustifyContent::SpaceBetween,
            column_gap: px(16.0),
            ..default()
        },
        BackgroundColor(bar),
        children![
            (
                Text::new(""),
                TextFont {
                    font_size: FontSize::Px(14.0),
                    ..default()
                },
                TextColor(Color::WHITE),
                HudText
            ),
            (
                Text::new(""),
                TextFont {
                    font_size: FontSize::Px(13.0),
                    ..default()
                },
                TextColor(Color::srgb(0.8, 0.85, 0.95)),
                TextLayout::justify(Justify::Right),
                HudWhere
            )
        ],
    ));
    commands.spawn((
        Bar::Bottom,
        Node {
            position_type: PositionType::Absolute,
            bottom: px(0.0),
            left: px(0.0),
            right: px(0.0),
            padding: UiRect::axes(px(8.0), px(3.0)),
            ..default()
        },
        BackgroundColor(bar),
        children![(
            Text::new(if replay.is_some() {
                REPLAY_CONTROLS
            } else {
                CONTROLS
            }),
            TextFont {
                font_size: FontSize::Px(13.0),
                ..default()
            },
            TextColor(Color::srgb(0.85, 0.88, 0.95))
        )],
    ));
    commands.spawn((
        Node {
            position_type: PositionType::Absolute,
            top: px(96.0),
            left: percent(30.0),
            right: percent(30.0),
            justify_content: JustifyContent::Center,
            ..default()
        },
        Visibility::Hidden,
        Toast { until: 0.0 },
        children![(
            Text::new(""),
            TextFont {
                font_size: FontSize::Px(15.0),
                ..default()
            },
            TextColor(Color::WHITE),
            TextBackgroundColor(Color::srgba(0.1, 0.25, 0.15, 0.9)),
        )],
    ));
}

/// Shows the console's newest answers as a notice while the console is closed (F5's "saved …").
pub fn show_toasts(
    log: Res<crate::play::ConsoleLog>,
    panels: Res<crate::game::shared::Panels>,
    time: Res<Time<Real>>,
    mut seen: Local<usize>,
    mut toast: Query<(&mut Toast, &mut Visibility, &Children)>,
    mut texts: Query<&mut Text>,
) {
    let Ok((mut toast, mut vis, children)) = toast.single_mut() else {
        return;
    };
    let now = time.elapsed_secs_f64();
    let n = log.lines.len();
    if n > *seen && !panels.console {
        let new: Vec<&str> = log.lines[(*seen).max(n.saturating_sub(2))..]
            .iter()
            .map(|(_, l)| l.as_str())
            .collect();
        if let Some(mut t) = children.first().and_then(|c| texts.get_mut(*c).ok()) {
            t.0 = format!(" {} ", new.join("\n "));
        }
        toast.until = now + 4.0;
    }
    *seen = n;
    let want = if now < toast.until {
        Visibility::Inherited
    } else {
        Visibility::Hidden
    };
    if *vis != want {
        *vis = want;
    }
}

/// Rewrites the HUD text.
pub fn update_hud(
    replay: Option<Res<crate::save::replay::Replay>>,
    clock: Res<SimClock>,
    pace: Res<SimPace>,
    gate: Res<StepGate>,
    skip: Res<NightSkip>,
    llm: Res<LlmStatusView>,
    map: Res<WorldMap>,
    window: Query<&Window, With<PrimaryWindow>>,
    camera: Query<(&Camera, &GlobalTransform), With<crate::game::shared::WorldCamera>>,
    avatar: Query<&GridPos, With<Avatar>>,
    planning: Query<&crate::cognition::ask::pending::Pending, With<Resident>>,
    cog: Res<crate::cognition::config::Cognition>,
    mut text: Query<&mut Text, (With<HudText>, Without<HudWhere>)>,
    mut place: Query<&mut Text, With<HudWhere>>,
) {
    let replay = replay.as_deref();
    let (Ok(mut text), Ok(mut place)) = (text.single_mut(), place.single_mut()) else {
        return;
    };
    let speed = if pace.paused {
        "paused".to_string()
    } else {
        pace.speed.label()
    };
    let health = match llm.status.overall() {
        Health::Ok => "ok",
        Health::Slow => "slow",
        Health::Down => "DOWN (agents use their routine)",
        Health::Starting => "starting",
    };
    let names: Vec<String> = llm.status.backends.iter().map(|b| b.label()).collect();
    let when = format!(
        "{} {} | {} | {}  (step {}",
        clock.now.weekday(),
        clock.now.date_string(),
        clock.now.clock_12h(),
        speed,
        clock.step
    );
    let mut s = match replay {
        Some(r) => format!(
            "{when}; recorded {} to {})\nReplay of {}: no model runs; what people did, where and what they said",
            r.first, r.last, r.name
        ),
        None => format!(
            "{when})\nLLM {}: {health} | queue {} | running {} | {} calls, {} cached, {} fail-safe",
            names.join("+"),
            llm.status.queued(),
            llm.status.in_flight(),
            llm.totals.calls,
            llm.totals.cache_hits,
            llm.totals.fallbacks,
        ),
    };
    if llm.status.overall() == Health::Down
        && let Some(b) = llm
            .status
            .backends
            .iter()
            .find(|b| b.health == Health::Down)
    {
        let detail: String = b.detail.chars().take(110).collect();
        s.push_str(&format!("\n  {detail}"));
    }
    if replay.is_none()
        && let Some(line) = planning_line(&planning, &cog)
    {
        s.push('\n');
        s.push_str(&line);
    }
    if replay.is_none() && !cog.0.aids.on().is_empty() {
        s.push_str(&format!(
            "\nAids on: {} (rules make some of what residents say, hear or do)",
            cog.0.aids.words()
        ));
    }
    if gate.waiting > 0 {
        s.push_str(&format!(
            "\nWaiting on {} decision(s) from the model (a thought mark shows who is thinking)",
            gate.waiting
        ));
    }
    if skip.active {
        s.push_str("\nEveryone is asleep: time runs ahead (N turns this off)");
    }
    let mut at = String::new();
    if let Ok(a) = avatar.single() {
        at.push_str(&format!("You: {}", map.address(a.tile)));
    }
    if let (Ok(w), Ok(cam)) = (window.single(), camera.single())
        && let Some(t) = cursor_tile(w, cam, &map)
    {
        at.push_str(&format!("\nCursor {t}: {}", map.address(t)));
    }
    if text.0 != s {
        text.0 = s;
    }
    if place.0 != at {
        place.0 = at;
    }
}

/// "Plans: 12 of 25 in …" while residents wait on the model for their day's plan (none when
/// every plan is in).
fn planning_line(
    planning: &Query<&crate::cognition::ask::pending::Pending, With<Resident>>,
    cog: &crate::cognition::config::Cognition,
) -> Option<String> {
    let total = planning.iter().count();
    let waiting = planning
        .iter()
        .filter(|p| p.any(crate::cognition::ask::job::Job::makes_the_day_plan))
        .count();
    (waiting > 0).then(|| {
        let meanwhile = match cog.0.pacing {
            crate::cognition::config::Pacing::Wait => "time waits for the rest",
            _ => "the rest follow their routine meanwhile",
        };
        format!(
            "Plans: {} of {total} made by the model; {meanwhile}",
            total - waiting
        )
    })
}

/// Adds this part of the window: its resources and systems, each in its place in the frame.
pub(crate) fn plugin(app: &mut App) {
    app.add_systems(Startup, spawn_hud)
        .add_systems(
            Update,
            (
                toggle_night_skip.run_if(not(bevy_egui::input::egui_wants_any_keyboard_input)),
                skip_nights,
            )
                .in_set(crate::AppSystems::Input),
        )
        .add_systems(
            Update,
            (update_hud, show_toasts)
                .chain()
                .in_set(crate::game::shared::Present::Hud),
        );
}
