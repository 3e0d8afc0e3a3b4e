//! Locks by stripe: a fixed number of async locks, a key taking the one its hash picks. So what
//! shares a key takes turns, and keys that share a stripe merely wait for each other. There is
//! no map of locks that would grow with the keys. The pictures' writers and the in-process
//! scripts' partitions take their turns on one.

use std::hash::{BuildHasher, Hash};

/// A fixed number of async locks, picked by a key's hash.
pub(crate) struct StripedLock {
    stripes: Box<[tokio::sync::Mutex<()>]>,
}

impl StripedLock {
    /// `stripes` locks (at least one).
    pub(crate) fn new(stripes: usize) -> StripedLock {
        StripedLock { stripes: (0..stripes.max(1)).map(|_| tokio::sync::Mutex::new(())).collect() }
    }

    /// The lock `key` takes, the same for equal keys. It hashes with std's SipHash with its
    /// fixed keys (`DefaultHasher::new`). Keys come from callers, and a keyed hash spreads them
    /// however they are chosen; fixed keys keep a key's stripe the same for the whole process.
    pub(crate) fn of(&self, key: impl Hash) -> &tokio::sync::Mutex<()> {
        let hash =
            std::hash::BuildHasherDefault::<std::hash::DefaultHasher>::default().hash_one(key);
        &self.stripes[(hash % self.stripes.len() as u64) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_always_takes_the_same_stripe() {
        let locks = StripedLock::new(64);
        let of = |key: &str| std::ptr::from_ref(locks.of(key));
        assert_eq!(of("alice"), of("alice"));
        let taken: std::collections::HashSet<_> =
            (0..1000).map(|n| of(&format!("user-{n}"))).collect();
        assert_eq!(taken.len(), 64, "a thousand keys reach every stripe");
    }
}
