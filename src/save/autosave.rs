//! Autosaves: the state is taken in the frame, then written on a thread of its own.

use super::{SaveContext, capture, disk};
use crate::play::ConsoleLog;
use crate::sim::clock::SimClock;
use bevy::prelude::*;
use std::path::PathBuf;

/// An autosave being written on a thread of its own (the frame only takes the state).
#[derive(Resource, Default)]
pub struct AutosaveWriter(Option<std::thread::JoinHandle<Result<PathBuf, String>>>);

impl AutosaveWriter {
    /// Waits for the autosave being written, if any, and returns how it went.
    pub fn finish(&mut self) -> Option<Result<PathBuf, String>> {
        let h = self.0.take()?;
        Some(
            h.join()
                .unwrap_or_else(|_| Err("the autosave thread stopped unexpectedly".into())),
        )
    }

    fn busy(&self) -> bool {
        self.0.as_ref().is_some_and(|h| !h.is_finished())
    }
}

impl Drop for AutosaveWriter {
    fn drop(&mut self) {
        // An autosave being written is finished before the program ends.
        let _ = self.finish();
    }
}

/// Notes how an autosave went (a failure shows once in the console, the game goes on).
fn report_autosave(world: &mut World, result: Result<PathBuf, String>) {
    let mut ctx = world.resource_mut::<SaveContext>();
    match result {
        Ok(_) => ctx.last_error = None,
        Err(e) => {
            let first = ctx.last_error.is_none();
            ctx.last_error = Some(e.clone());
            if first {
                world
                    .resource_mut::<ConsoleLog>()
                    .err(format!("autosave failed (the game goes on): {e}"));
            }
        }
    }
}

/// Autosaves every `autosave_minutes` game minutes, keeping the newest `autosave_keep`: the
/// state is taken in the frame, then written (files, sync, rename, pruning) on a thread, so a
/// big town does not stall the game while its save is written.
pub fn autosave(world: &mut World) {
    if world.contains_resource::<crate::sim::clock::Frozen>() {
        return;
    }
    let done = {
        let mut w = world.resource_mut::<AutosaveWriter>();
        if w.busy() { None } else { w.finish() }
    };
    if let Some(result) = done {
        report_autosave(world, result);
    }
    let Some(ctx) = world.get_resource::<SaveContext>() else {
        return;
    };
    let every = ctx.settings.autosave_minutes as u64;
    if every == 0 {
        return;
    }
    let clock = world.resource::<SimClock>();
    let steps = (every * 60).div_ceil(clock.sec_per_step.max(1) as u64);
    let step = clock.step;
    if step == 0 || step < ctx.last_autosave + steps {
        return;
    }
    // The previous autosave is still being written (game time ran an autosave period ahead
    // of the disk): wait for it, so that every period is saved.
    finish_autosave(world);
    let ctx = world.resource::<SaveContext>();
    let (root, base, keep) = (ctx.root(), ctx.base.clone(), ctx.settings.autosave_keep);
    let name = disk::autosave_name(&base, step);
    world.resource_mut::<SaveContext>().last_autosave = step;
    let data = match capture(world, &name) {
        Ok(d) => d,
        Err(e) => return report_autosave(world, Err(e)),
    };
    let handle = std::thread::Builder::new()
        .name("autosave".into())
        .spawn(move || {
            let dir = root.join(&name);
            disk::write_save(&dir, &data)?;
            disk::prune_autosaves(&root, &base, keep)?;
            Ok(dir)
        });
    match handle {
        Ok(h) => world.resource_mut::<AutosaveWriter>().0 = Some(h),
        Err(e) => report_autosave(world, Err(format!("cannot start the autosave thread: {e}"))),
    }
}

/// Waits for an autosave being written (headless runs call it before they end).
pub fn finish_autosave(world: &mut World) {
    let done = world
        .get_resource_mut::<AutosaveWriter>()
        .and_then(|mut w| w.finish());
    if let Some(result) = done {
        report_autosave(world, result);
    }
}
