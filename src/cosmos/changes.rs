//! Which items of the embedded store changed after a position in its write numbering: what the local
//! change-feed processors follow, in place of the SDK's change feed.
//!
//! The in-memory emulator answers each change-feed poll by copying every item of the polled
//! feed range and keeping the newer ones. So following it costs time proportional to all the
//! data on every poll; under a steady write load the processors fell further behind as the data
//! grew. The database already numbers every write in the order the store applied it. This index
//! keeps each live item's latest number, so "what changed after n" costs what changed.
//!
//! It has the change feed's "latest version" meaning: an item written twice is listed once, at
//! its last write, and a deleted item not at all.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use super::{Changed, Container};

/// The live items of every container by the number of their last write.
#[derive(Default)]
pub(crate) struct ChangeIndex {
    /// The number of the last write recorded: every write up to it is in the index.
    last_seq: u64,
    /// Per container: (write number, item) of each live item.
    by_seq: HashMap<Container, BTreeSet<(u64, ItemKey)>>,
    /// Each live item's write number, to find its entry in `by_seq` when it is written again.
    latest: HashMap<(Container, ItemKey), u64>,
}

/// An item's partition key and id, in one allocation that both maps share: the index holds an
/// entry for every live item, so its size grows with the data.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct ItemKey {
    /// The partition key, then the id.
    text: Arc<str>,
    /// Where the id starts.
    split: u32,
}

impl ItemKey {
    fn new(partition_key: &str, id: &str) -> ItemKey {
        let split = u32::try_from(partition_key.len()).expect("a partition key is at most 2 KB");
        ItemKey { text: format!("{partition_key}{id}").into(), split }
    }

    /// The smallest key: where a write number's entries begin.
    fn first() -> ItemKey {
        ItemKey { text: Arc::from(""), split: 0 }
    }

    fn parts(&self) -> (String, String) {
        let (partition_key, id) = self.text.split_at(self.split as usize);
        (partition_key.to_owned(), id.to_owned())
    }
}

impl ChangeIndex {
    /// Records write number `seq` of one item: `live` is false for a deletion. Writes must be
    /// recorded in the order of their numbers.
    pub(crate) fn record(
        &mut self,
        container: Container,
        partition_key: &str,
        id: &str,
        seq: u64,
        live: bool,
    ) {
        let key = (container, ItemKey::new(partition_key, id));
        let entries = self.by_seq.entry(container).or_default();
        if let Some(previous) = self.latest.remove(&key) {
            entries.remove(&(previous, key.1.clone()));
        }
        if live {
            entries.insert((seq, key.1.clone()));
            self.latest.insert(key, seq);
        }
        self.last_seq = self.last_seq.max(seq);
    }

    /// The number of the last write of a live item (`None` when it is deleted or never written).
    pub(crate) fn last_write(
        &self,
        container: Container,
        partition_key: &str,
        id: &str,
    ) -> Option<u64> {
        self.latest.get(&(container, ItemKey::new(partition_key, id))).copied()
    }

    /// At most `limit` items of `container` whose last write is numbered after `after` and at
    /// most `settled`. A reader is never taken past a write that is not on disk yet. A crash
    /// would lose that write, and the numbers after the restart would start again below its
    /// position.
    pub(crate) fn changed_after(
        &self,
        container: Container,
        after: u64,
        settled: u64,
        limit: usize,
    ) -> Changed {
        let mut items = Vec::new();
        let mut through = settled;
        let later = self
            .by_seq
            .get(&container)
            .into_iter()
            .flat_map(|entries| entries.range((after + 1, ItemKey::first())..));
        for (seq, key) in later {
            if *seq > settled {
                break;
            }
            if items.len() == limit {
                // Stop before this write; the next page starts with it.
                through = seq - 1;
                break;
            }
            items.push(key.parts());
        }
        Changed { items, through: through.max(after) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(changed: &Changed) -> Vec<&str> {
        changed.items.iter().map(|(_, id)| id.as_str()).collect()
    }

    #[test]
    fn lists_each_item_once_at_its_last_write() {
        let mut index = ChangeIndex::default();
        index.record(Container::Posts, "p1", "p1", 1, true);
        index.record(Container::Posts, "p2", "p2", 2, true);
        index.record(Container::Users, "u1", "u1", 3, true);
        index.record(Container::Posts, "p1", "p1", 4, true);
        index.record(Container::Posts, "p2", "c1", 5, true);
        index.record(Container::Posts, "p2", "c1", 6, false);

        let all = index.changed_after(Container::Posts, 0, 6, 100);
        assert_eq!(
            ids(&all),
            ["p2", "p1"],
            "p1 at its second write; the deleted comment not at all"
        );
        assert_eq!(all.through, 6);
        assert_eq!(ids(&index.changed_after(Container::Posts, 2, 6, 100)), ["p1"]);
        assert_eq!(
            index.changed_after(Container::Posts, 6, 6, 100),
            Changed { items: vec![], through: 6 }
        );
        assert_eq!(ids(&index.changed_after(Container::Users, 0, 6, 100)), ["u1"]);
    }

    #[test]
    fn a_page_ends_before_the_first_item_it_leaves_out() {
        let mut index = ChangeIndex::default();
        for seq in 1..=5 {
            index.record(Container::Feed, "post", &format!("f{seq}"), seq, true);
        }
        let first = index.changed_after(Container::Feed, 0, 5, 2);
        assert_eq!((ids(&first), first.through), (vec!["f1", "f2"], 2));
        let second = index.changed_after(Container::Feed, first.through, 5, 2);
        assert_eq!((ids(&second), second.through), (vec!["f3", "f4"], 4));
        let last = index.changed_after(Container::Feed, second.through, 5, 2);
        assert_eq!((ids(&last), last.through), (vec!["f5"], 5));
    }

    #[test]
    fn a_reader_is_never_taken_past_a_write_that_is_not_settled() {
        let mut index = ChangeIndex::default();
        index.record(Container::Posts, "p1", "p1", 1, true);
        index.record(Container::Users, "u1", "u1", 2, true);
        index.record(Container::Posts, "p2", "p2", 3, true);
        // Writes 2 and 3 are applied but not on disk yet.
        assert_eq!(
            index.changed_after(Container::Posts, 0, 1, 100),
            Changed { items: vec![("p1".into(), "p1".into())], through: 1 }
        );
        assert_eq!(
            index.changed_after(Container::Posts, 1, 1, 100),
            Changed { items: vec![], through: 1 }
        );
        assert_eq!(ids(&index.changed_after(Container::Posts, 1, 3, 100)), ["p2"]);
    }
}
