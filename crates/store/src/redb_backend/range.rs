//! Range reads of the redb backend inside one read transaction, at the current revision or
//! rebuilt at an older one.
//!
//! An older revision `R` is served by overlaying, on the current rows, the state at `R` of
//! every key changed after `R`: the previous value carried by its first event after `R` (or
//! absence, for a key created after `R`). Current rows and overlay are merged lazily in key
//! order, so a page costs O(events after R + keys returned). The overlay holds only each key's
//! first revision after `R`, read from the events' uncompressed key; an event is decoded only
//! when its key is merged into the page. Why: a paged LIST at `R` (an informer's relist) decoded
//! every later event of its range on every page, while writes kept adding to them, so its cost grew
//! with pages × events.
//!
//! Invariant: the result equals the state at `R` restricted to the prefix and `start_after`,
//! because every event above the compacted revision is in the `events` table.

use std::collections::BTreeMap;
use std::iter::Peekable;
use std::ops::Bound;

use redb::ReadTransaction;

use super::codec::{decode_event, decode_kv, event_key};
use super::{EVENTS, KV, backend_error, read_counters};
use crate::{KeyValue, RangeRequest, RangeResult, Revision, StoreError, StoreResult};

fn lower_bound<'a>(prefix: &'a str, start_after: Option<&'a str>) -> Bound<&'a str> {
    match start_after {
        Some(after) if after >= prefix => Bound::Excluded(after),
        _ => Bound::Included(prefix),
    }
}

/// A range read inside one snapshot.
pub(super) fn range_in(txn: &ReadTransaction, req: &RangeRequest) -> StoreResult<RangeResult> {
    let (current, compacted) = read_counters(txn)?;
    let revision = req.revision.unwrap_or(current);
    if revision > current {
        return Err(StoreError::FutureRevision {
            requested: revision,
            current,
        });
    }
    if revision < compacted {
        return Err(StoreError::Compacted {
            requested: revision,
            compacted,
        });
    }
    let lower = lower_bound(&req.prefix, req.start_after.as_deref());
    let in_range = |key: &str| {
        key.starts_with(&req.prefix)
            && match lower {
                Bound::Excluded(after) => key > after,
                _ => true,
            }
    };
    // Every key changed since `revision`, with its first change after it: the event whose previous
    // value is the key's state at `revision`.
    let mut overlay: BTreeMap<String, Revision> = BTreeMap::new();
    let events = txn.open_table(EVENTS).map_err(backend_error)?;
    if revision < current {
        for entry in events
            .range((Bound::Excluded(revision), Bound::Unbounded))
            .map_err(backend_error)?
        {
            let (changed_at, record) = entry.map_err(backend_error)?;
            let key = event_key(record.value())?;
            if in_range(key) && !overlay.contains_key(key) {
                overlay.insert(key.to_string(), changed_at.value());
            }
        }
    }
    let state_before = |changed_at: Revision| -> StoreResult<Option<KeyValue>> {
        let record = events
            .get(changed_at)
            .map_err(backend_error)?
            .ok_or_else(|| {
                StoreError::Backend(format!("event {changed_at} vanished from its snapshot"))
            })?;
        Ok(decode_event(record.value())?.prev)
    };
    let kv = txn.open_table(KV).map_err(backend_error)?;
    let current_rows = kv
        .range::<&str>((lower, Bound::Unbounded))
        .map_err(backend_error)?
        .map(|entry| -> StoreResult<(String, Vec<u8>)> {
            let (key, record) = entry.map_err(backend_error)?;
            Ok((key.value().to_string(), record.value().to_vec()))
        })
        .take_while(|row| {
            row.as_ref()
                .map_or(true, |(key, _)| key.starts_with(&req.prefix))
        });
    let merged = Merge {
        current: current_rows.peekable(),
        overlay: overlay.into_iter().peekable(),
        state_before,
    };
    let limit = if req.limit == 0 {
        usize::MAX
    } else {
        req.limit
    };
    let mut kvs = Vec::new();
    let mut more = false;
    for kv in merged {
        let kv = kv?;
        if kvs.len() == limit {
            more = true;
            break;
        }
        kvs.push(kv);
    }
    Ok(RangeResult {
        kvs,
        more,
        revision,
    })
}

/// Merges the current rows with the overlay of older states, in key order; overlay entries
/// replace (or hide, when the key did not exist then) the current row of the same key.
struct Merge<C, O, S>
where
    C: Iterator<Item = StoreResult<(String, Vec<u8>)>>,
    O: Iterator<Item = (String, Revision)>,
    S: Fn(Revision) -> StoreResult<Option<KeyValue>>,
{
    current: Peekable<C>,
    overlay: Peekable<O>,
    /// A key's state before the change at the given revision.
    state_before: S,
}

impl<C, O, S> Iterator for Merge<C, O, S>
where
    C: Iterator<Item = StoreResult<(String, Vec<u8>)>>,
    O: Iterator<Item = (String, Revision)>,
    S: Fn(Revision) -> StoreResult<Option<KeyValue>>,
{
    type Item = StoreResult<KeyValue>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let take_overlay = match (self.current.peek(), self.overlay.peek()) {
                (None, None) => return None,
                (Some(Err(_)), _) | (Some(Ok(_)), None) => false,
                (None, Some(_)) => true,
                (Some(Ok((current_key, _))), Some((overlay_key, _))) => {
                    if current_key == overlay_key {
                        // The current row is superseded by the overlay's older state.
                        self.current.next();
                        true
                    } else {
                        overlay_key < current_key
                    }
                }
            };
            if take_overlay {
                let (_, changed_at) = self.overlay.next()?;
                match (self.state_before)(changed_at) {
                    Ok(Some(kv)) => return Some(Ok(kv)),
                    Ok(None) => {}
                    Err(error) => return Some(Err(error)),
                }
            } else {
                return self
                    .current
                    .next()
                    .map(|row| row.and_then(|(key, record)| decode_kv(&key, &record)));
            }
        }
    }
}
