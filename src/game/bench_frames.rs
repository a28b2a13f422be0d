//! The frame-time bench (`simulacra bench frames`): the real window, every frame's time, and the
//! part of it the simulation and cognition took (the `Simulate` systems: answers delivered and
//! steps run), for a number of seconds after a warm-up; then the figures and the window closes.

use crate::AppSystems;
use bevy::prelude::*;
use std::time::{Duration, Instant};

/// What the bench measures and has measured.
#[derive(Resource)]
pub struct FrameBench {
    /// Frames to let pass before measuring (start-up, first layout, text rasterised).
    pub warmup_frames: u32,
    /// Seconds to measure.
    pub seconds: f32,
    frames_seen: u32,
    started: Option<Instant>,
    sim_started: Option<Instant>,
    sim_this_frame: Duration,
    /// Each measured frame: (frame time, time in the simulation) in milliseconds.
    pub samples: Vec<(f64, f64)>,
    steps_at_start: u64,
    /// Simulation steps run while measuring.
    pub steps: u64,
}

impl FrameBench {
    /// A bench that measures `seconds` after `warmup_frames`.
    pub fn new(seconds: f32, warmup_frames: u32) -> Self {
        Self {
            warmup_frames,
            seconds,
            frames_seen: 0,
            started: None,
            sim_started: None,
            sim_this_frame: Duration::ZERO,
            samples: Vec::new(),
            steps_at_start: 0,
            steps: 0,
        }
    }
}

/// Adds the bench's systems.
pub fn add(app: &mut App, bench: FrameBench) {
    app.insert_resource(bench)
        .add_systems(First, record_frame)
        .add_systems(
            Update,
            (
                sim_started
                    .after(AppSystems::Input)
                    .before(AppSystems::Simulate),
                sim_ended
                    .after(AppSystems::Simulate)
                    .before(AppSystems::Present),
            ),
        );
}

fn sim_started(mut bench: ResMut<FrameBench>) {
    bench.sim_started = Some(Instant::now());
}

fn sim_ended(mut bench: ResMut<FrameBench>) {
    if let Some(s) = bench.sim_started.take() {
        bench.sim_this_frame = s.elapsed();
    }
}

/// At the start of each frame: the last frame's time and its simulation share.
fn record_frame(
    time: Res<Time<Real>>,
    clock: Res<crate::sim::clock::SimClock>,
    pace: Res<crate::sim::clock::SimPace>,
    mut bench: ResMut<FrameBench>,
    mut exit: MessageWriter<AppExit>,
) {
    let sim = std::mem::take(&mut bench.sim_this_frame);
    if pace.requested > 0 && bench.started.is_none() {
        return; // still skipping ahead to the start (`--skip-steps`)
    }
    bench.frames_seen += 1;
    if bench.frames_seen <= bench.warmup_frames {
        return;
    }
    let Some(started) = bench.started else {
        bench.started = Some(Instant::now());
        bench.steps_at_start = clock.step;
        return;
    };
    bench
        .samples
        .push((time.delta_secs_f64() * 1000.0, sim.as_secs_f64() * 1000.0));
    if started.elapsed().as_secs_f32() >= bench.seconds {
        bench.steps = clock.step - bench.steps_at_start;
        let f = figures(&bench.samples);
        println!(
            "{}",
            report(&f, bench.steps, started.elapsed().as_secs_f64())
        );
        exit.write(AppExit::Success);
    }
}

/// The figures of a finished bench.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameFigures {
    /// Frames measured.
    pub frames: usize,
    /// Frame time: median, 99th percentile, the longest (ms).
    pub median: f64,
    /// See [`FrameFigures::median`].
    pub p99: f64,
    /// See [`FrameFigures::median`].
    pub max: f64,
    /// Frames over 33 ms.
    pub over_33: usize,
    /// Frames whose simulation part alone was over 33 ms.
    pub sim_over_33: usize,
    /// Simulation time per frame: median and 99th percentile (ms).
    pub sim_median: f64,
    /// See [`FrameFigures::sim_median`].
    pub sim_p99: f64,
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Median, 99th percentile and the rest from the samples.
pub fn figures(samples: &[(f64, f64)]) -> FrameFigures {
    let mut frame: Vec<f64> = samples.iter().map(|s| s.0).collect();
    let mut sim: Vec<f64> = samples.iter().map(|s| s.1).collect();
    frame.sort_by(f64::total_cmp);
    sim.sort_by(f64::total_cmp);
    FrameFigures {
        frames: samples.len(),
        median: percentile(&frame, 0.5),
        p99: percentile(&frame, 0.99),
        max: frame.last().copied().unwrap_or(0.0),
        over_33: samples.iter().filter(|s| s.0 > 33.0).count(),
        sim_over_33: samples.iter().filter(|s| s.1 > 33.0).count(),
        sim_median: percentile(&sim, 0.5),
        sim_p99: percentile(&sim, 0.99),
    }
}

/// The bench's lines.
pub fn report(f: &FrameFigures, steps: u64, seconds: f64) -> String {
    format!(
        "frames: {} in {seconds:.1} s ({:.1} per second), {steps} simulation steps ({:.1} game minutes per real second)\n\
         frame time: median {:.1} ms, 99th percentile {:.1} ms, longest {:.1} ms; {} frame(s) over 33 ms\n\
         simulation and cognition per frame: median {:.2} ms, 99th percentile {:.2} ms; {} frame(s) where they alone took over 33 ms",
        f.frames,
        f.frames as f64 / seconds.max(0.001),
        steps as f64 * 10.0 / 60.0 / seconds.max(0.001),
        f.median,
        f.p99,
        f.max,
        f.over_33,
        f.sim_median,
        f.sim_p99,
        f.sim_over_33,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_take_percentiles_and_count_slow_frames() {
        let samples: Vec<(f64, f64)> = (1..=100)
            .map(|i| (i as f64, if i == 100 { 40.0 } else { 1.0 }))
            .collect();
        let f = figures(&samples);
        assert_eq!(f.frames, 100);
        assert_eq!(f.median, 51.0);
        assert_eq!(f.p99, 99.0);
        assert_eq!(f.max, 100.0);
        assert_eq!(f.over_33, 67);
        assert_eq!(f.sim_over_33, 1);
        assert_eq!(f.sim_median, 1.0);
    }
}
