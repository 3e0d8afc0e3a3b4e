//! The data directory's picture store: a picture stored, read back and removed, across a
//! restart, and a write cut short leaves no half picture.

use blog::testing::pictures::{DirectoryStore, Limits, PictureAddress, PictureStore, prepare};

use super::{encoded, photo};

/// Stored, read back (also after the store is opened again), stored again (nothing
/// changes), removed with its post (and again: nothing to remove is no error).
#[tokio::test]
async fn a_picture_store_keeps_a_picture_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let address = {
        let store = DirectoryStore::open(dir.path()).unwrap();
        super::store_then_read(&store).await
    };
    let store = DirectoryStore::open(dir.path()).unwrap();
    super::read_then_remove(&store, &address).await;
}

/// What a write cut short (`kill -9` between its first byte and its rename) leaves is a
/// temporary file under no picture's name: never served, and removed at the next start.
#[tokio::test]
async fn a_write_cut_short_leaves_no_half_picture() {
    let dir = tempfile::tempdir().unwrap();
    let prepared =
        prepare(&encoded(&photo(), image::ImageFormat::Png), &Limits::default()).unwrap().picture;
    let address =
        PictureAddress { owner: "writer".into(), post: "post".into(), name: prepared.name.clone() };
    let store = DirectoryStore::open(dir.path()).unwrap();
    store.put(&address, &prepared.bytes).await.unwrap();
    let post_dir = dir.path().join("pictures").join("writer").join("post");
    let partial = post_dir.join(format!(".partial-{}", uuid::Uuid::new_v4()));
    std::fs::write(&partial, &prepared.bytes[..prepared.bytes.len() / 2]).unwrap();
    let store = DirectoryStore::open(dir.path()).unwrap();
    assert!(!partial.exists(), "removed at the start");
    assert_eq!(std::fs::read_dir(&post_dir).unwrap().count(), 1, "the whole picture stays");
    assert_eq!(store.usage("writer").await.unwrap().pictures, 1);
}
