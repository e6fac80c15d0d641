//! The Webster (Sainte-Laguë) seat dispenser Karmada uses since v1.16 to turn weights into replica counts.
//!
//! Invariants: exactly `seats` seats are handed out when at least one party has a positive vote (none otherwise);
//! the outcome depends only on the votes, the initial seats and the tie-break, never on input order. Priorities
//! `votes / (2·seats + 1)` are compared exactly by cross-multiplication instead of as `f64`, so equal quotients tie
//! the way the rationals do.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap};

/// How equal Webster priorities are broken: fewer seats first, then by name in this direction.
///
/// Karmada derives the direction from the binding's resource uid: ascending when the uid is empty or its
/// FNV-1a-32 hash is even, descending when the hash is odd.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum TieBreak {
    NameAscending,
    NameDescending,
}

impl TieBreak {
    /// The tie-break Karmada's dispenser uses for a binding whose `spec.resource.uid` is `uid`.
    pub fn from_uid(uid: &str) -> Self {
        if uid.is_empty() || fnv1a_32(uid.as_bytes()).is_multiple_of(2) {
            TieBreak::NameAscending
        } else {
            TieBreak::NameDescending
        }
    }
}

/// FNV-1a, 32-bit: the hash Karmada applies to the resource uid for the tie-break.
pub fn fnv1a_32(bytes: &[u8]) -> u32 {
    const OFFSET_BASIS: u32 = 0x811c_9dc5;
    const PRIME: u32 = 0x0100_0193;
    bytes.iter().fold(OFFSET_BASIS, |hash, byte| {
        (hash ^ u32::from(*byte)).wrapping_mul(PRIME)
    })
}

/// One party of a Webster round: its name, its votes (weight) and the seats it already holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Party {
    pub name: String,
    pub votes: i64,
    pub seats: i64,
}

struct Contender<'a> {
    name: &'a str,
    votes: i64,
    seats: i64,
    tie_break: TieBreak,
}

impl Contender<'_> {
    /// `Greater` means `self` wins the next seat before `other`.
    fn precedence(&self, other: &Self) -> Ordering {
        // votes_a / (2·seats_a + 1) vs votes_b / (2·seats_b + 1), denominators positive.
        let lhs = i128::from(self.votes) * i128::from(2 * other.seats + 1);
        let rhs = i128::from(other.votes) * i128::from(2 * self.seats + 1);
        lhs.cmp(&rhs)
            .then_with(|| other.seats.cmp(&self.seats))
            .then_with(|| match self.tie_break {
                TieBreak::NameAscending => other.name.cmp(self.name),
                TieBreak::NameDescending => self.name.cmp(other.name),
            })
    }
}

impl PartialEq for Contender<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.precedence(other) == Ordering::Equal
    }
}
impl Eq for Contender<'_> {}
impl PartialOrd for Contender<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Contender<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.precedence(other)
    }
}

/// Hands out `seats` seats to `parties` one at a time, each to the party with the highest `votes/(2·seats+1)`.
///
/// Parties with non-positive votes never win a seat but keep their initial seats. The result maps every
/// party name to its final seat count (initial + won). When no party has positive votes nothing is handed out.
/// A name listed twice is merged (votes and seats added).
pub fn webster(parties: &[Party], seats: i64, tie_break: TieBreak) -> BTreeMap<String, i64> {
    let mut merged: BTreeMap<&str, (i64, i64)> = BTreeMap::new();
    for party in parties {
        let entry = merged.entry(party.name.as_str()).or_insert((0, 0));
        entry.0 = entry.0.saturating_add(party.votes.max(0));
        entry.1 = entry.1.saturating_add(party.seats.max(0));
    }
    let mut heap: BinaryHeap<Contender<'_>> = merged
        .iter()
        .filter(|(_, (votes, _))| *votes > 0)
        .map(|(name, (votes, seats))| Contender {
            name,
            votes: *votes,
            seats: *seats,
            tie_break,
        })
        .collect();
    let mut result: BTreeMap<String, i64> = merged
        .iter()
        .map(|(name, (_, seats))| ((*name).to_string(), *seats))
        .collect();
    if heap.is_empty() {
        return result;
    }
    let mut remaining = seats.max(0);
    if merged.values().all(|(_, seats)| *seats == 0) {
        remaining -= award_certain_seats(&mut heap, remaining);
    }
    for _ in 0..remaining {
        let Some(mut winner) = heap.pop() else { break };
        winner.seats += 1;
        heap.push(winner);
    }
    for contender in heap {
        result.insert(contender.name.to_string(), contender.seats);
    }
    result
}

/// Awards at once the seats every sequential run would award, and returns how many.
///
/// Sequential Webster from zero seats hands out the `n` largest quotients `v/(2k+1)` (ties ordered by the
/// tie-break). Σ over parties of #{k : v/(2k+1) ≥ t} ≤ (V/t + P)/2, so the n-th largest quotient is at most
/// T = V/(2n − P); every quotient strictly above T is certainly awarded. Only the few seats left are then
/// handed out one by one, which keeps the dispenser O(P log P) for large replica counts.
fn award_certain_seats(heap: &mut BinaryHeap<Contender<'_>>, seats: i64) -> i64 {
    let parties = heap.len() as i128;
    let total: i128 = heap.iter().map(|c| i128::from(c.votes)).sum();
    let spread = 2 * i128::from(seats) - parties;
    if spread <= 0 || total <= 0 {
        return 0;
    }
    let mut contenders: Vec<Contender<'_>> = std::mem::take(heap).into_vec();
    let mut awarded = 0;
    for contender in &mut contenders {
        // Odd m with m·V < v·(2n − P): the quotients v/m strictly above T.
        let bound = i128::from(contender.votes) * spread;
        let largest_odd_count = ((bound - 1) / total + 1) / 2;
        let certain = i64::try_from(largest_odd_count.max(0)).unwrap_or(0);
        contender.seats += certain;
        awarded += certain;
    }
    *heap = BinaryHeap::from(contenders);
    awarded
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parties(votes: &[(&str, i64)]) -> Vec<Party> {
        votes
            .iter()
            .map(|(name, votes)| Party {
                name: (*name).into(),
                votes: *votes,
                seats: 0,
            })
            .collect()
    }

    #[test]
    fn fnv1a_matches_the_published_test_vectors() {
        assert_eq!(fnv1a_32(b""), 0x811c_9dc5);
        assert_eq!(fnv1a_32(b"a"), 0xe40c_292c);
        assert_eq!(fnv1a_32(b"foobar"), 0xbf9c_f968);
    }

    /// The textbook procedure: one seat at a time, no shortcut.
    fn sequential(parties: &[Party], seats: i64, tie_break: TieBreak) -> BTreeMap<String, i64> {
        let mut state: Vec<(String, i64, i64)> = parties
            .iter()
            .map(|p| (p.name.clone(), p.votes, p.seats))
            .collect();
        for _ in 0..seats {
            let winner = state
                .iter()
                .enumerate()
                .filter(|(_, (_, votes, _))| *votes > 0)
                .max_by(|(_, a), (_, b)| {
                    Contender {
                        name: &a.0,
                        votes: a.1,
                        seats: a.2,
                        tie_break,
                    }
                    .precedence(&Contender {
                        name: &b.0,
                        votes: b.1,
                        seats: b.2,
                        tie_break,
                    })
                })
                .map(|(index, _)| index);
            let Some(winner) = winner else { break };
            state[winner].2 += 1;
        }
        state
            .into_iter()
            .map(|(name, _, seats)| (name, seats))
            .collect()
    }

    proptest::proptest! {
        #[test]
        fn the_shortcut_awards_what_one_at_a_time_does(
            votes in proptest::collection::vec(0i64..1_000, 1..8),
            seats in 0i64..400,
            descending in proptest::bool::ANY,
        ) {
            let tie_break = if descending { TieBreak::NameDescending } else { TieBreak::NameAscending };
            let parties: Vec<Party> = votes.iter().enumerate().map(|(i, v)| Party { name: format!("p{i}"), votes: *v, seats: 0 }).collect();
            proptest::prop_assert_eq!(webster(&parties, seats, tie_break), sequential(&parties, seats, tie_break));
        }
    }

    #[test]
    fn zero_votes_hand_out_nothing() {
        let result = webster(&parties(&[("a", 0), ("b", 0)]), 5, TieBreak::NameAscending);
        assert_eq!(result.values().sum::<i64>(), 0);
    }

    #[test]
    fn descending_tie_break_prefers_the_later_name() {
        let result = webster(&parties(&[("a", 1), ("b", 1)]), 1, TieBreak::NameDescending);
        assert_eq!(result["b"], 1);
        assert_eq!(result["a"], 0);
    }
}
