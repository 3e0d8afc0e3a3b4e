//! Pictures in posts: what an upload must be to be shown, and that nothing but its
//! pixels is kept. The uploads are made here with the same encoders a camera or an editor
//! uses (JPEG, PNG, WebP, GIF), and the EXIF segment is written by hand as the EXIF 2.32
//! standard lays it out (a TIFF header, IFD0 with Orientation and a GPS IFD pointer, the GPS
//! IFD with a latitude), as a phone writes it.
//!
//! Then the same uploads through the blog's HTTP API and pages, on each picture store: the data
//! directory, and Blob Storage as the real Azurite serves it (`tests/azurite/run.sh`).

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

#[path = "../common/mod.rs"]
mod common;

use std::io::Cursor;

use blog::testing::pictures::{Kind, Limits, PictureError, prepare};
use common::hostile::{exif_segment, with_segment};
use image::{DynamicImage, ImageFormat, Rgb, RgbImage, Rgba, RgbaImage};

mod azurite;
mod directory;
mod disk_full;
mod encoding;
mod no_credential_in_logs;
mod pages;
mod screen_copies;
mod stored_before_small_copies;
mod uploads;

fn encoded(image: &DynamicImage, format: ImageFormat) -> Vec<u8> {
    let mut bytes = Cursor::new(Vec::new());
    image.write_to(&mut bytes, format).unwrap();
    bytes.into_inner()
}

/// A 40×20 photo, left half red, right half blue.
fn photo() -> DynamicImage {
    DynamicImage::ImageRgb8(RgbImage::from_fn(40, 20, |x, _| {
        if x < 20 { Rgb([200, 0, 0]) } else { Rgb([0, 0, 200]) }
    }))
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|window| window == needle)
}

/// A GIF of `frames` frames of 1×1, as an editor writes it.
fn animated(frames: usize) -> Vec<u8> {
    let mut bytes = Vec::new();
    {
        let mut encoder = gif::Encoder::new(&mut bytes, 1, 1, &[0, 0, 0, 255, 255, 255]).unwrap();
        for n in 0..frames {
            let frame = gif::Frame {
                width: 1,
                height: 1,
                buffer: std::borrow::Cow::Owned(vec![(n % 2) as u8]),
                ..Default::default()
            };
            encoder.write_frame(&frame).unwrap();
        }
    }
    bytes
}

/// What every picture store must do, part one: a picture not there is `None`; stored (twice:
/// the second changes nothing), it reads back whole and counts once in its writer's usage.
async fn store_then_read(
    store: &dyn blog::testing::pictures::PictureStore,
) -> blog::testing::pictures::PictureAddress {
    let prepared =
        prepare(&encoded(&photo(), ImageFormat::Png), &Limits::default()).unwrap().picture;
    let address = blog::testing::pictures::PictureAddress {
        owner: "writer".into(),
        post: "post-1".into(),
        name: prepared.name,
    };
    assert_eq!(store.get(&address).await.unwrap(), None);
    assert_eq!(store.usage("writer").await.unwrap(), blog::testing::pictures::Usage::default());
    store.put(&address, &prepared.bytes).await.unwrap();
    store.put(&address, &prepared.bytes).await.unwrap();
    assert_eq!(store.get(&address).await.unwrap().as_deref(), Some(&prepared.bytes[..]));
    let usage = store.usage("writer").await.unwrap();
    assert_eq!((usage.pictures, usage.bytes), (1, prepared.bytes.len() as u64));
    assert_eq!(store.usage("someone-else").await.unwrap().pictures, 0);
    let folders = store.folders().await.unwrap();
    assert_eq!(folders.len(), 1, "{folders:?}");
    assert_eq!((folders[0].owner.as_str(), folders[0].post.as_str()), ("writer", "post-1"));
    let age =
        std::time::SystemTime::now().duration_since(folders[0].last_written).unwrap_or_default();
    assert!(age < std::time::Duration::from_secs(60), "written just now: {age:?} ago");
    address
}

/// Part two: it reads back (also from a store opened anew), and once its post's pictures are
/// removed (twice: nothing to remove is no error) it is gone.
async fn read_then_remove(
    store: &dyn blog::testing::pictures::PictureStore,
    address: &blog::testing::pictures::PictureAddress,
) {
    let bytes = store.get(address).await.unwrap().expect("still there");
    assert_eq!(image::guess_format(&bytes).unwrap(), ImageFormat::Png);
    assert_eq!(store.remove_post(&address.owner, "another-post").await.unwrap(), 0);
    assert_eq!(store.remove_post(&address.owner, &address.post).await.unwrap(), 1);
    assert_eq!(store.remove_post(&address.owner, &address.post).await.unwrap(), 0);
    assert_eq!(store.get(address).await.unwrap(), None);
    assert_eq!(store.usage(&address.owner).await.unwrap().pictures, 0);
    assert_eq!(store.folders().await.unwrap(), Vec::new(), "no post has pictures");
}
