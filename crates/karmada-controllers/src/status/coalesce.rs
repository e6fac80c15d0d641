//! Fixed-window coalescing of wake-ups: the first wake-up of a key opens a window, every further wake-up of
//! that key inside it is absorbed, and the key comes out once when the window closes. Unlike a trailing
//! debounce, a key woken continuously still comes out every `window`, so a status never lags more than that.
//!
//! The status controllers use it so that a burst of member events (one rollout passing through several
//! statuses, several members reporting at once) turns into one reconcile that reads the latest state from
//! the cache, and so into one write.

use std::collections::{HashSet, VecDeque};
use std::hash::Hash;
use std::time::Duration;

use futures::stream::{FusedStream, Stream, StreamExt};
use tokio::time::Instant;

/// `input` with repeats of a key inside `window` (from its first arrival) folded into one item, emitted when
/// the window closes, in arrival order. Ends when `input` ends (keys still waiting are dropped: the input
/// only ends when its controller stops).
pub fn coalesced<K, S>(input: S, window: Duration) -> impl Stream<Item = K> + Send
where
    K: Clone + Eq + Hash + Send + 'static,
    S: Stream<Item = K> + Send + 'static,
{
    let state = Window {
        input: Box::pin(input.fuse()),
        due: VecDeque::new(),
        waiting: HashSet::new(),
    };
    futures::stream::unfold(state, move |mut state| async move {
        let key = state.next(window).await?;
        Some((key, state))
    })
}

struct Window<K, S> {
    input: std::pin::Pin<Box<futures::stream::Fuse<S>>>,
    /// Keys in arrival order with the end of their window (one window length apart at most, so in order).
    due: VecDeque<(Instant, K)>,
    waiting: HashSet<K>,
}

impl<K, S> Window<K, S>
where
    K: Clone + Eq + Hash,
    S: Stream<Item = K>,
{
    /// Most keys kept room for once the window drains: a burst of thousands of keys grows both collections,
    /// and neither shrinks by itself.
    const KEEP: usize = 1024;

    fn release_after_burst(&mut self) {
        if self.due.is_empty() && self.due.capacity() > Self::KEEP {
            self.due = VecDeque::new();
            self.waiting = HashSet::new();
        }
    }

    async fn next(&mut self, window: Duration) -> Option<K> {
        loop {
            let deadline = self.due.front().map(|(at, _)| *at);
            tokio::select! {
                key = self.input.next(), if !self.input.is_terminated() => {
                    match key {
                        Some(key) => {
                            if self.waiting.insert(key.clone()) {
                                self.due.push_back((Instant::now() + window, key));
                            }
                        }
                        None => return None,
                    }
                }
                () = tokio::time::sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() => {
                    if let Some((_, key)) = self.due.pop_front() {
                        self.waiting.remove(&key);
                        self.release_after_burst();
                        return Some(key);
                    }
                }
                else => return None,
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use futures::channel::mpsc;
    use futures::{SinkExt, StreamExt};

    use super::*;

    const WINDOW: Duration = Duration::from_millis(100);

    #[tokio::test(start_paused = true)]
    async fn a_burst_comes_out_once_when_its_window_closes() {
        let (mut tx, rx) = mpsc::channel(16);
        let mut out = Box::pin(coalesced(rx, WINDOW));
        let start = Instant::now();
        for key in ["a", "b", "a", "a", "b"] {
            tx.send(key).await.unwrap();
        }
        assert_eq!(out.next().await, Some("a"));
        assert_eq!(out.next().await, Some("b"));
        assert_eq!(start.elapsed(), WINDOW, "emitted when the window closes");
        // A key woken again after its window closed opens a new one.
        tx.send("a").await.unwrap();
        assert_eq!(out.next().await, Some("a"));
        assert_eq!(start.elapsed(), WINDOW * 2);
    }

    #[tokio::test(start_paused = true)]
    async fn a_key_woken_continuously_still_comes_out_every_window() {
        let (mut tx, rx) = mpsc::channel(16);
        let mut out = Box::pin(coalesced(rx, WINDOW));
        let start = Instant::now();
        let feeder = tokio::spawn(async move {
            for _ in 0..25 {
                tx.send("busy").await.unwrap();
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        });
        assert_eq!(out.next().await, Some("busy"));
        assert_eq!(
            start.elapsed(),
            WINDOW,
            "not postponed by the later wake-ups"
        );
        assert_eq!(out.next().await, Some("busy"));
        assert!(start.elapsed() <= WINDOW * 2 + Duration::from_millis(10));
        feeder.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn gives_back_the_room_of_a_burst_once_drained() {
        let (mut tx, rx) = mpsc::channel(8192);
        for key in 0..5000_u32 {
            tx.send(key).await.unwrap();
        }
        let mut window = Window {
            input: Box::pin(rx.fuse()),
            due: VecDeque::new(),
            waiting: HashSet::new(),
        };
        let mut out = HashSet::new();
        for _ in 0..5000 {
            out.insert(window.next(WINDOW).await.unwrap());
        }
        assert_eq!(out.len(), 5000, "every key came out once");
        assert_eq!(window.due.capacity(), 0);
        assert_eq!(window.waiting.capacity(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn ends_with_its_input() {
        let (tx, rx) = mpsc::channel::<&str>(1);
        let mut out = Box::pin(coalesced(rx, WINDOW));
        drop(tx);
        assert_eq!(out.next().await, None);
    }
}
