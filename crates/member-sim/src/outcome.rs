//! What one controller pass returns: the writes to make, when to look again even if nothing
//! changes (a startup delay or deadline expiring), and per-object problems it could not act on.

use jiff::Timestamp;

use crate::objects::Write;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Outcome {
    pub writes: Vec<Write>,
    /// The earliest time at which a pass may produce writes without any object changing.
    pub requeue_at: Option<Timestamp>,
    /// Objects skipped because their spec is invalid, each with a message saying why.
    pub errors: Vec<String>,
}

impl Outcome {
    pub fn write(&mut self, write: Write) {
        self.writes.push(write);
    }

    /// Asks to run again at `at` (keeps the earliest request).
    pub fn requeue(&mut self, at: Timestamp) {
        self.requeue_at = Some(self.requeue_at.map_or(at, |current| current.min(at)));
    }

    pub fn merge(&mut self, other: Outcome) {
        self.writes.extend(other.writes);
        if let Some(at) = other.requeue_at {
            self.requeue(at);
        }
        self.errors.extend(other.errors);
    }
}
