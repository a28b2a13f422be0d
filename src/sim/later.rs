//! Dropping elsewhere: a value whose drop frees many small allocations (a finished request's
//! prompt, messages and JSON schema) is handed to a background thread, so the simulation's
//! thread does not spend its step freeing memory (in a town of a thousand, freeing the requests
//! whose answers had just been applied was a twentieth of the thread's evening).
//!
//! Values are gathered per thread and sent in batches; a value never dropped late is one whose
//! drop has effects others wait for, so only plain data goes here. When the thread cannot be
//! started, values are dropped where they are.

use std::cell::RefCell;
use std::sync::OnceLock;
use std::sync::mpsc::Sender;

type Item = Box<dyn Send>;

/// Values gathered before a batch is sent.
const BATCH: usize = 256;

thread_local! {
    static HELD: RefCell<Vec<Item>> = const { RefCell::new(Vec::new()) };
}

/// The dropping thread's inbox (`None`: it could not be started).
fn sink() -> Option<&'static Sender<Vec<Item>>> {
    static SINK: OnceLock<Option<Sender<Vec<Item>>>> = OnceLock::new();
    SINK.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Vec<Item>>();
        std::thread::Builder::new()
            .name("simulacra-drop".into())
            .spawn(move || {
                for batch in rx {
                    drop(batch);
                }
            })
            .ok()
            .map(|_| tx)
    })
    .as_ref()
}

/// Drops `value` later, on the dropping thread.
pub fn drop_later<T: Send + 'static>(value: T) {
    if std::mem::needs_drop::<T>() {
        let full = HELD.try_with(|held| {
            let mut held = held.borrow_mut();
            held.push(Box::new(value));
            (held.len() >= BATCH).then(|| std::mem::take(&mut *held))
        });
        // On a thread being torn down `try_with` fails and the closure, with the value in
        // it, is dropped here.
        if let Ok(Some(batch)) = full {
            send(batch);
        }
    }
}

/// Sends what this thread gathered to the dropping thread now.
pub fn flush() {
    if let Ok(batch) = HELD.try_with(|held| std::mem::take(&mut *held.borrow_mut())) {
        send(batch);
    }
}

fn send(batch: Vec<Item>) {
    if batch.is_empty() {
        return;
    }
    match sink() {
        // A send fails only when the thread is gone: the batch comes back and drops here.
        Some(tx) => drop(tx.send(batch)),
        None => drop(batch),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Counted(Arc<AtomicUsize>, std::thread::ThreadId);

    impl Drop for Counted {
        fn drop(&mut self) {
            // Count only drops made off the thread that handed the value over.
            if std::thread::current().id() != self.1 {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
    }

    #[test]
    fn values_are_dropped_on_another_thread_once_sent() {
        let dropped = Arc::new(AtomicUsize::new(0));
        let me = std::thread::current().id();
        for _ in 0..BATCH + 10 {
            drop_later(Counted(dropped.clone(), me));
        }
        flush();
        // Every value is dropped exactly once, elsewhere (the wait is for the other thread, not
        // a timing: it ends as soon as the count is reached).
        let start = std::time::Instant::now();
        while dropped.load(Ordering::SeqCst) < BATCH + 10 {
            assert!(
                start.elapsed() < std::time::Duration::from_secs(30),
                "only {} of {} dropped",
                dropped.load(Ordering::SeqCst),
                BATCH + 10
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(Arc::strong_count(&dropped), 1);
    }
}
