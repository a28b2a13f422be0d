//! Click a person to see who they are and what their day looks like (the original's persona
//! state viewer, in the game): traits, what they are doing and where, and today's plan with the
//! current entry marked. Click empty ground or press Escape to close.

use super::view::cursor_tile;
use crate::agent::{CurrentAction, DayPlan, GridPos, Identity, Resident};
use crate::sim::map::WorldMap;
use bevy::prelude::*;
use bevy::window::PrimaryWindow;

/// The person shown in the panel.
#[derive(Resource, Default)]
pub struct Selected(pub Option<Entity>);

/// The panel's root node.
#[derive(Component)]
pub struct InspectPanel;

/// The panel's text.
#[derive(Component)]
pub struct InspectText;

/// Spawns the (hidden) panel.
pub fn spawn_panel(mut commands: Commands) {
    commands.spawn((
        InspectPanel,
        Node { position_type: PositionType::Absolute, top: px(8.0), right: px(8.0), width: px(380.0), padding: UiRect::all(px(8.0)), ..default() },
        BackgroundColor(Color::srgba(0.05, 0.06, 0.1, 0.85)),
        Visibility::Hidden,
        children![(Text::new(""), TextFont { font_size: FontSize::Px(13.0), ..default() }, TextColor(Color::srgb(0.92, 0.94, 0.98)), InspectText)],
    ));
}

/// Left click selects the person on (or next to) the clicked tile.
pub fn select_on_click(
    buttons: Res<ButtonInput<MouseButton>>,
    keys: Res<ButtonInput<KeyCode>>,
    map: Res<WorldMap>,
    window: Query<&Window, With<PrimaryWindow>>,
    camera: Query<(&Camera, &GlobalTransform)>,
    people: Query<(Entity, &GridPos), With<Identity>>,
    mut selected: ResMut<Selected>,
) {
    if keys.just_pressed(KeyCode::Escape) {
        selected.0 = None;
    }
    if !buttons.just_pressed(MouseButton::Left) {
        return;
    }
    let (Ok(w), Ok(cam)) = (window.single(), camera.single()) else { return };
    let Some(t) = cursor_tile(w, cam, &map) else { return };
    selected.0 = people.iter().filter(|(_, p)| p.tile.manhattan(t) <= 1).min_by_key(|(_, p)| p.tile.manhattan(t)).map(|(e, _)| e);
}

/// Fills the panel for the selected person.
pub fn update_panel(
    selected: Res<Selected>,
    map: Res<WorldMap>,
    people: Query<(&Identity, &GridPos, &CurrentAction, Option<&Resident>, Option<&DayPlan>)>,
    mut panel: Query<&mut Visibility, With<InspectPanel>>,
    mut text: Query<&mut Text, With<InspectText>>,
) {
    let (Ok(mut vis), Ok(mut text)) = (panel.single_mut(), text.single_mut()) else { return };
    let Some(Ok((id, pos, action, resident, plan))) = selected.0.map(|e| people.get(e)) else {
        *vis = Visibility::Hidden;
        return;
    };
    *vis = Visibility::Inherited;
    let mut s = format!("{} ({})\n", id.name, id.age);
    if let Some(r) = resident {
        let p = &r.persona.spec;
        s.push_str(&format!("Traits: {}\n{}\nCurrently: {}\n", p.innate, p.learned, p.currently));
    } else {
        s.push_str(&format!("{}\n", id.description));
    }
    let here = map.address(pos.tile).to_string();
    s.push_str(&format!("\nNow: {}\nAt: {here}\n", action.description));
    if !action.address.is_empty() && here != action.address {
        s.push_str(&format!("Going to: {}\n", action.address));
    }
    if let Some(plan) = plan {
        s.push_str("\nToday (daily routine):\n");
        for (i, b) in plan.blocks.iter().enumerate() {
            let mark = if plan.current == Some(i) { ">" } else { " " };
            s.push_str(&format!("{mark} {:02}:{:02}-{:02}:{:02} {}\n", b.start / 60, b.start % 60, b.end / 60, b.end % 60, b.description));
        }
    }
    if text.0 != s {
        text.0 = s;
    }
}

/// A person to select by name once they exist (`play --select NAME`).
#[derive(Resource)]
pub struct SelectByName(pub String);

/// Applies [`SelectByName`].
pub fn select_by_name(mut commands: Commands, wanted: Option<Res<SelectByName>>, people: Query<(Entity, &Identity)>, mut selected: ResMut<Selected>) {
    let Some(wanted) = wanted else { return };
    if let Some((e, _)) = people.iter().find(|(_, id)| id.name.eq_ignore_ascii_case(&wanted.0)) {
        selected.0 = Some(e);
        commands.remove_resource::<SelectByName>();
    }
}
