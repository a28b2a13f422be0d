//! Threads chosen from the load: llama.cpp's threads meet at a barrier after every operation and
//! spin there, so when another program holds one of the cores a thread that has none holds up
//! the other, which spins (on 2 cores the 3-resident planning hour ran at 37 % of its idle speed
//! beside one busy core). Before each decode the worker asks [`LoadWatch`] how many cores the
//! other programs leave and decodes on that many threads.
//!
//! With flash attention off every result llama.cpp computes on the CPU is the same with any
//! thread count (each output row is one thread's work; the flash-attention kernel splits a long
//! cache between the threads and sums the parts in a thread-dependent order), so the thread
//! count chosen never changes an answer. (A 25-resident town beside a busy core still made other
//! requests than on an idle machine: the timing changed which requests shared a pass, and a
//! token alone in a pass takes other kernels; `batch_invariant` lays batches out so that none
//! is: `worker/layout.rs`.)

use llama_cpp_2::context::LlamaContext;
use std::time::{Duration, Instant};

/// How long the load is averaged over before the thread count may change.
const WINDOW: Duration = Duration::from_millis(500);

/// Watches the CPU time other programs take on the cores this process may run on.
pub struct LoadWatch {
    /// The most threads (the config's `threads`).
    max: i32,
    /// The CPUs this process may run on (their numbers), from its affinity.
    cpus: Vec<usize>,
    last: Option<(Instant, Sample)>,
    current: i32,
}

/// Clock ticks at one moment: every allowed CPU's busy and total ticks, and this process's.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Sample {
    busy: u64,
    total: u64,
    own: u64,
}

impl LoadWatch {
    /// A watch that starts at `max` threads; `adapt: false` (or a system without `/proc`) keeps
    /// them.
    pub fn new(max: i32, adapt: bool) -> Self {
        let cpus = if adapt { allowed_cpus() } else { Vec::new() };
        Self {
            max: max.max(1),
            cpus,
            last: None,
            current: max.max(1),
        }
    }

    /// Threads for the next decode: the cores other programs left over the last half second,
    /// at most `max`, at least one.
    pub fn threads(&mut self) -> i32 {
        if self.cpus.is_empty() || self.max == 1 {
            return self.current;
        }
        let now = Instant::now();
        if self.last.is_some_and(|(t, _)| now < t + WINDOW) {
            return self.current;
        }
        let Some(sample) = read_sample(&self.cpus) else {
            self.cpus.clear(); // no /proc: keep the configured count
            return self.current;
        };
        if let Some((_, prev)) = self.last {
            let others = others_cores(prev, sample, self.cpus.len());
            self.current = threads_for(self.max, self.cpus.len(), others);
        }
        self.last = Some((now, sample));
        self.current
    }
}

/// Cores' worth of CPU time taken by other programs between two samples.
fn others_cores(a: Sample, b: Sample, cpus: usize) -> f64 {
    let total = b.total.saturating_sub(a.total) as f64;
    if total <= 0.0 {
        return 0.0;
    }
    let busy = b.busy.saturating_sub(a.busy) as f64;
    let own = b.own.saturating_sub(a.own) as f64;
    // Ticks per CPU over the window: the busy ticks of others over that is their cores' worth.
    let per_cpu = total / cpus as f64;
    ((busy - own) / per_cpu).max(0.0)
}

/// Threads for `cores` CPUs of which other programs take `others` cores' worth: what is left,
/// rounded, at most `max`, at least one.
pub fn threads_for(max: i32, cores: usize, others: f64) -> i32 {
    let left = (cores as f64 - others).round() as i32;
    left.clamp(1, max.max(1))
}

/// The CPUs this process may run on.
fn allowed_cpus() -> Vec<usize> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity writes at most its
        // size, and CPU_ISSET reads within it.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
                return Vec::new();
            }
            (0..libc::CPU_SETSIZE as usize)
                .filter(|c| libc::CPU_ISSET(*c, &set))
                .collect()
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        Vec::new()
    }
}

/// Reads the allowed CPUs' ticks from `/proc/stat` and this process's from `/proc/self/stat`.
fn read_sample(cpus: &[usize]) -> Option<Sample> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let own = std::fs::read_to_string("/proc/self/stat").ok()?;
    parse_sample(&stat, &own, cpus)
}

fn parse_sample(stat: &str, own: &str, cpus: &[usize]) -> Option<Sample> {
    let (mut busy, mut total, mut seen) = (0u64, 0u64, 0usize);
    for line in stat.lines() {
        let Some(rest) = line.strip_prefix("cpu") else {
            continue;
        };
        if !rest.starts_with(|c: char| c.is_ascii_digit()) {
            continue; // the "cpu" line of all CPUs together
        }
        let mut f = rest.split_ascii_whitespace();
        let Some(Ok(n)) = f.next().map(str::parse::<usize>) else {
            continue;
        };
        if !cpus.contains(&n) {
            continue;
        }
        // user nice system idle iowait irq softirq steal (guest time is inside user)
        let v: Vec<u64> = f.take(8).filter_map(|x| x.parse().ok()).collect();
        if v.len() < 5 {
            return None;
        }
        let t: u64 = v.iter().sum();
        total += t;
        busy += t - v[3] - v[4];
        seen += 1;
    }
    if seen == 0 {
        return None;
    }
    // /proc/self/stat: "pid (comm) state ..." where comm may hold spaces; utime and stime are
    // the 12th and 13th fields after the closing parenthesis.
    let after = &own[own.rfind(')')? + 1..];
    let f: Vec<&str> = after.split_ascii_whitespace().collect();
    let own = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some(Sample { busy, total, own })
}

/// Sets the threads a context decodes with. The crate has no call for it, so the context's
/// address is read from its `Debug` form (`LlamaContext { context: 0x… }`, which prints the
/// pointer it wraps) and checked against the context's own size before use; false when it
/// cannot be read.
pub fn set_threads(ctx: &LlamaContext, n: i32) -> bool {
    let Some(ptr) = raw_context(ctx) else {
        return false;
    };
    // SAFETY: `ptr` is the live context `ctx` wraps (checked by `raw_context`), which the
    // caller holds; llama_set_n_threads only writes the context's thread counts.
    unsafe { llama_cpp_sys_2::llama_set_n_threads(ptr, n, n) };
    true
}

/// The threads a context decodes with (generation, prompts), or None when unreadable.
pub fn context_threads(ctx: &LlamaContext) -> Option<(i32, i32)> {
    let ptr = raw_context(ctx)?;
    // SAFETY: as in `set_threads`; these only read.
    unsafe {
        Some((
            llama_cpp_sys_2::llama_n_threads(ptr),
            llama_cpp_sys_2::llama_n_threads_batch(ptr),
        ))
    }
}

fn raw_context(ctx: &LlamaContext) -> Option<*mut llama_cpp_sys_2::llama_context> {
    let text = format!("{ctx:?}");
    let hex = text.split("0x").nth(1)?;
    let hex: String = hex.chars().take_while(char::is_ascii_hexdigit).collect();
    let addr = usize::from_str_radix(&hex, 16).ok()?;
    if addr == 0 || addr % std::mem::align_of::<usize>() != 0 {
        return None;
    }
    let ptr = addr as *mut llama_cpp_sys_2::llama_context;
    // SAFETY: the address is the one the crate's Debug prints for the pointer it holds (pinned
    // crate version); reading n_ctx through it is a read of that context.
    let n_ctx = unsafe { llama_cpp_sys_2::llama_n_ctx(ptr) };
    (n_ctx == ctx.n_ctx()).then_some(ptr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_are_the_cores_other_programs_leave() {
        assert_eq!(threads_for(2, 2, 0.0), 2);
        assert_eq!(threads_for(2, 2, 0.3), 2);
        // A program spinning on one core beside our two spinning threads gets about two thirds
        // of a core: one thread is what is left.
        assert_eq!(threads_for(2, 2, 0.67), 1);
        assert_eq!(threads_for(2, 2, 1.0), 1);
        assert_eq!(threads_for(2, 2, 2.0), 1, "never fewer than one");
        assert_eq!(threads_for(1, 2, 0.0), 1, "never more than the config's");
        assert_eq!(threads_for(8, 16, 10.2), 6);
    }

    #[test]
    fn other_programs_time_is_all_busy_time_but_ours() {
        let stat = |busy: u64, idle: u64| {
            format!(
                "cpu  1 1 1 1 1 0 0 0 0 0\ncpu0 {busy} 0 0 {idle} 0 0 0 0 0 0\ncpu1 {busy} 0 0 {idle} 0 0 0 0 0 0\ncpu7 999 0 0 0 0 0 0 0 0 0\nintr 5\n"
            )
        };
        let own = |t: u64| format!("42 (a (weird) name) R 1 2 3 4 5 6 7 8 9 10 {t} 0 0 0");
        let a = parse_sample(&stat(100, 100), &own(50), &[0, 1]).unwrap();
        assert_eq!(
            a,
            Sample {
                busy: 200,
                total: 400,
                own: 50
            }
        );
        // 50 ticks per CPU later: all 100 busy ticks were ours → nobody else.
        let b = parse_sample(&stat(150, 100), &own(150), &[0, 1]).unwrap();
        assert!(others_cores(a, b, 2).abs() < 1e-9);
        // Both CPUs busy, half of it ours → others hold one core.
        let c = parse_sample(&stat(200, 100), &own(200), &[0, 1]).unwrap();
        assert!((others_cores(b, c, 2) - 1.0).abs() < 1e-9);
        // Idle CPUs and no process time → none.
        let d = parse_sample(&stat(200, 150), &own(200), &[0, 1]).unwrap();
        assert!(others_cores(c, d, 2).abs() < 1e-9);
        assert!(
            parse_sample(&stat(1, 1), &own(1), &[3]).is_none(),
            "no allowed CPU listed"
        );
        assert!(parse_sample(&stat(1, 1), "garbage", &[0]).is_none());
    }

    #[test]
    fn a_watch_without_adapting_keeps_its_threads() {
        let mut w = LoadWatch::new(2, false);
        assert_eq!(w.threads(), 2);
        assert_eq!(w.threads(), 2);
    }
}
