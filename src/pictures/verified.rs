//! The stored pictures this process has checked against their names, each by the version it was
//! read at ([`Version`]). A picture whose version is held is served without being hashed again.
//! Any other version of it is hashed before it is served, as an unknown one is.
//!
//! An entry of a small file (at most [`KEPT_BYTES`]: a phones' copy, a small picture) also
//! keeps its bytes. So a store that tells a file's version without reading it (the data
//! directory, from one `stat`) serves it from memory while its version is the same.
//!
//! A store that cannot tell a version without a billed request (Blob Storage: a read operation
//! each time) serves a kept file from memory without asking. It does so for
//! [`PictureStore::kept_unasked_for`] after the file was checked. A name holds one picture for
//! good, so the bytes kept are always the ones the name says. What is left to learn (the post
//! deleted, a blob put in its place) waits that long on an instance that did not make the
//! change. A post's pictures removed by this instance are forgotten at once
//! ([`Verified::forget_post`]).
//!
//! [`PictureStore::kept_unasked_for`]: super::store::PictureStore::kept_unasked_for
//!
//! The set is bounded, in entries and in bytes ([`Verified::DEFAULT`]: 16,384 entries and
//! 32 MiB with the bytes kept, whichever is reached first). Past the bound the oldest entries go
//! first; a picture whose entry went is read and hashed again at its next view and held again.
//! Nothing is ever served because it is missing from the set.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::store::Version;

/// The largest file whose bytes an entry keeps: a phones' copy (960 pixels wide, 50 to 250 KB)
/// and a screens' copy (1,440 pixels wide, 140 to 370 KB) fit, a photo does not.
pub(crate) const KEPT_BYTES: usize = 512 * 1024;

/// Versions of stored pictures checked against their names, by the picture's key.
pub(crate) struct Verified {
    held: Mutex<Held>,
    bound: Bound,
}

/// How much the set may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Bound {
    /// Entries (one a stored file: a picture and its phones' copy are two).
    pub entries: usize,
    /// Bytes, as [`entry_bytes`] counts them.
    pub bytes: usize,
}

#[derive(Default)]
struct Held {
    versions: HashMap<String, Entry>,
    /// Keys in the order they were first held: the oldest go first past the bound.
    order: VecDeque<String>,
    bytes: usize,
}

/// A checked version, with the file's bytes where it is small, and when it was checked.
struct Entry {
    version: Version,
    bytes: Option<Bytes>,
    checked: Instant,
}

impl Entry {
    fn heap_bytes(&self) -> usize {
        self.version.heap_bytes() + self.bytes.as_ref().map_or(0, Bytes::len)
    }
}

impl Verified {
    /// 16,384 files (the quotas of 40 writers who keep all they may, their phones' copies
    /// included) and 32 MiB. That is about 400 bytes an entry without its bytes, and the bytes
    /// of the small files held last (a front page's ten phones' copies are 0.5 to 2.5 MB).
    pub(crate) const DEFAULT: Bound = Bound { entries: 16_384, bytes: 32 * 1024 * 1024 };

    pub(crate) fn new(bound: Bound) -> Verified {
        Verified { held: Mutex::default(), bound }
    }

    /// Whether `version` of the picture `key` was checked.
    pub(crate) fn holds(&self, key: &str, version: &Version) -> bool {
        self.held
            .lock()
            .expect("not poisoned")
            .versions
            .get(key)
            .is_some_and(|entry| entry.version == *version)
    }

    /// The bytes kept of `version` of the picture `key`, if that version was checked and the
    /// file is small.
    pub(crate) fn kept(&self, key: &str, version: &Version) -> Option<Bytes> {
        let held = self.held.lock().expect("not poisoned");
        held.versions
            .get(key)
            .filter(|entry| entry.version == *version)
            .and_then(|entry| entry.bytes.clone())
    }

    /// The bytes kept of the picture `key` where they were checked at most `age` ago, whatever
    /// version the store holds now.
    pub(crate) fn kept_within(&self, key: &str, age: Duration) -> Option<Bytes> {
        let held = self.held.lock().expect("not poisoned");
        held.versions
            .get(key)
            .filter(|entry| entry.checked.elapsed() <= age)
            .and_then(|entry| entry.bytes.clone())
    }

    /// Forgets the pictures of `owner`'s post `post`, removed: none is served from memory again.
    pub(crate) fn forget_post(&self, owner: &str, post: &str) {
        let prefix = format!("{owner}/{post}/");
        let mut held = self.held.lock().expect("not poisoned");
        let held = &mut *held;
        let keys: Vec<String> =
            held.versions.keys().filter(|key| key.starts_with(&prefix)).cloned().collect();
        for key in keys {
            if let Some(entry) = held.versions.remove(&key) {
                held.bytes -= entry_bytes(&key, &entry);
            }
        }
        held.order.retain(|key| !key.starts_with(&prefix));
    }

    /// Holds `version` of `key` as checked (in place of an earlier version of it), with `bytes`
    /// (the bytes checked) kept where they are at most [`KEPT_BYTES`]; the oldest entries let
    /// go as the bound needs.
    pub(crate) fn hold(&self, key: &str, version: Version, bytes: Option<&Bytes>) {
        let entry = Entry {
            version,
            bytes: bytes.filter(|bytes| bytes.len() <= KEPT_BYTES).cloned(),
            checked: Instant::now(),
        };
        let mut held = self.held.lock().expect("not poisoned");
        let held = &mut *held;
        if let Some(earlier) = held.versions.get_mut(key) {
            held.bytes = held.bytes - earlier.heap_bytes() + entry.heap_bytes();
            *earlier = entry;
        } else {
            held.bytes += entry_bytes(key, &entry);
            held.versions.insert(key.to_owned(), entry);
            held.order.push_back(key.to_owned());
        }
        while held.versions.len() > self.bound.entries || held.bytes > self.bound.bytes {
            let Some(oldest) = held.order.pop_front() else { break };
            if let Some(entry) = held.versions.remove(&oldest) {
                held.bytes -= entry_bytes(&oldest, &entry);
            }
        }
    }

    /// How many entries it holds, and their bytes.
    #[cfg(test)]
    fn size(&self) -> (usize, usize) {
        let held = self.held.lock().expect("not poisoned");
        (held.versions.len(), held.bytes)
    }
}

/// What one entry takes: its key twice (the map's and the order's), its version and bytes,
/// and the fixed parts of both (the map's slot counted as its key and value with 16 bytes of the
/// table's own).
fn entry_bytes(key: &str, entry: &Entry) -> usize {
    2 * (key.len() + std::mem::size_of::<String>())
        + std::mem::size_of::<Entry>()
        + entry.heap_bytes()
        + 16
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::{Bound, Entry, KEPT_BYTES, Verified, entry_bytes};
    use crate::pictures::store::Version;

    fn file(changed_ns: i128) -> Version {
        Version::File { device: 1, inode: 2, length: 3, modified_ns: 4, changed_ns }
    }

    /// Only the version that was checked is held: another version of the same picture is not.
    #[test]
    fn a_picture_is_held_at_its_checked_version_only() {
        let verified = Verified::new(Verified::DEFAULT);
        verified.hold("w/p/a", file(1), None);
        assert!(verified.holds("w/p/a", &file(1)));
        assert!(!verified.holds("w/p/a", &file(2)));
        assert!(!verified.holds("w/p/b", &file(1)));
        assert!(!verified.holds("w/p/a", &Version::Blob("\"0x1\"".into())));
        verified.hold("w/p/a", file(2), None);
        assert!(verified.holds("w/p/a", &file(2)) && !verified.holds("w/p/a", &file(1)));
        assert_eq!(verified.size().0, 1);
    }

    /// Past either bound the oldest entries go, and the set stays within both.
    #[test]
    fn the_oldest_go_past_the_bound() {
        let verified = Verified::new(Bound { entries: 3, bytes: usize::MAX });
        for n in 0..5 {
            verified.hold(&format!("w/p/{n}"), file(n), None);
        }
        assert_eq!(verified.size().0, 3);
        assert!(!verified.holds("w/p/0", &file(0)) && !verified.holds("w/p/1", &file(1)));
        assert!((2..5).all(|n| verified.holds(&format!("w/p/{n}"), &file(n))));

        let blob = Version::Blob("\"0x8DB0000000000A\"".into());
        let one = entry_bytes(
            "w/p/0",
            &Entry { version: blob, bytes: None, checked: std::time::Instant::now() },
        );
        let verified = Verified::new(Bound { entries: usize::MAX, bytes: 2 * one });
        for n in 0..4 {
            verified.hold(&format!("w/p/{n}"), Version::Blob("\"0x8DB0000000000A\"".into()), None);
        }
        assert_eq!(verified.size(), (2, 2 * one));
        assert!(verified.holds("w/p/3", &Version::Blob("\"0x8DB0000000000A\"".into())));
        assert!(!verified.holds("w/p/1", &Version::Blob("\"0x8DB0000000000A\"".into())));
    }

    /// A small file's bytes are kept with its version, and given for that version only; a
    /// large file's are not kept; the bytes kept count against the bound.
    #[test]
    fn a_small_files_bytes_are_kept_for_its_version_only() {
        let verified = Verified::new(Bound { entries: usize::MAX, bytes: 3 * KEPT_BYTES });
        let small = Bytes::from(vec![7; KEPT_BYTES]);
        verified.hold("w/p/small", file(1), Some(&small));
        verified.hold("w/p/large", file(1), Some(&Bytes::from(vec![7; KEPT_BYTES + 1])));
        assert_eq!(verified.kept("w/p/small", &file(1)), Some(small.clone()));
        assert_eq!(verified.kept("w/p/small", &file(2)), None);
        assert!(
            verified.holds("w/p/large", &file(1)) && verified.kept("w/p/large", &file(1)).is_none()
        );
        verified.hold("w/p/second", file(1), Some(&small));
        verified.hold("w/p/third", file(1), Some(&small));
        assert!(verified.size().1 <= 3 * KEPT_BYTES);
        assert_eq!(verified.kept("w/p/small", &file(1)), None, "the oldest went first");
        assert_eq!(verified.kept("w/p/third", &file(1)), Some(small));
    }

    /// Without a version to compare, kept bytes are given for as long as asked since their
    /// check, and never after their post's pictures are forgotten.
    #[test]
    fn kept_bytes_are_given_within_an_age_until_their_post_is_forgotten() {
        let verified = Verified::new(Verified::DEFAULT);
        let bytes = Bytes::from_static(b"a small picture");
        let blob = || Version::Blob("\"0x1\"".into());
        verified.hold("w/p/a", blob(), Some(&bytes));
        verified.hold("w/p/b", blob(), Some(&bytes));
        verified.hold("w/q/a", blob(), Some(&bytes));
        assert_eq!(
            verified.kept_within("w/p/a", std::time::Duration::from_secs(60)),
            Some(bytes.clone())
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
        assert_eq!(
            verified.kept_within("w/p/a", std::time::Duration::from_millis(1)),
            None,
            "checked too long ago"
        );
        verified.forget_post("w", "p");
        assert_eq!(verified.kept_within("w/p/a", std::time::Duration::from_secs(60)), None);
        assert!(!verified.holds("w/p/b", &blob()));
        assert_eq!(
            verified.kept_within("w/q/a", std::time::Duration::from_secs(60)),
            Some(bytes),
            "another post's"
        );
        assert_eq!(verified.size().0, 1);
    }
}
