//! Pictures in posts (issue 32): what an upload must be to be shown, and that nothing but its
//! pixels is kept. The uploads are made here with the same encoders a camera or an editor
//! uses (JPEG, PNG, WebP, GIF), and the EXIF segment is written by hand as the EXIF 2.32
//! standard lays it out (a TIFF header, IFD0 with Orientation and a GPS IFD pointer, the GPS
//! IFD with a latitude), as a phone writes it.

use std::io::Cursor;

use blog::pictures::{Kind, Limits, PictureError, prepare};
use image::{DynamicImage, ImageFormat, Rgb, RgbImage, Rgba, RgbaImage};

fn encoded(image: &DynamicImage, format: ImageFormat) -> Vec<u8> {
    let mut bytes = Cursor::new(Vec::new());
    image.write_to(&mut bytes, format).unwrap();
    bytes.into_inner()
}

/// A 40×20 photo, left half red, right half blue.
fn photo() -> DynamicImage {
    DynamicImage::ImageRgb8(RgbImage::from_fn(40, 20, |x, _| if x < 20 { Rgb([200, 0, 0]) } else { Rgb([0, 0, 200]) }))
}

/// An APP1 EXIF segment: Orientation 6 (the camera was turned: rotate 90° clockwise to show)
/// and a GPS latitude of 48° 51' 29.58".
fn exif_segment() -> Vec<u8> {
    let mut tiff = b"II*\0".to_vec();
    tiff.extend(8_u32.to_le_bytes());
    // IFD0 at 8: two entries, then the next IFD's offset (none).
    tiff.extend(2_u16.to_le_bytes());
    tiff.extend([0x12, 0x01, 3, 0, 1, 0, 0, 0, 6, 0, 0, 0]); // Orientation, SHORT, 1, 6
    tiff.extend([0x25, 0x88, 4, 0, 1, 0, 0, 0]); // GPSInfo, LONG, 1, at:
    tiff.extend(38_u32.to_le_bytes());
    tiff.extend(0_u32.to_le_bytes());
    // The GPS IFD at 38: one entry, GPSLatitude, RATIONAL, 3, at 56.
    tiff.extend(1_u16.to_le_bytes());
    tiff.extend([0x02, 0x00, 5, 0, 3, 0, 0, 0]);
    tiff.extend(56_u32.to_le_bytes());
    tiff.extend(0_u32.to_le_bytes());
    for (numerator, denominator) in [(48_u32, 1_u32), (51, 1), (2958, 100)] {
        tiff.extend(numerator.to_le_bytes());
        tiff.extend(denominator.to_le_bytes());
    }
    let mut payload = b"Exif\0\0".to_vec();
    payload.extend(tiff);
    let mut segment = vec![0xFF, 0xE1];
    segment.extend(u16::try_from(payload.len() + 2).unwrap().to_be_bytes());
    segment.extend(payload);
    segment
}

/// `jpeg` with `segment` right after its start-of-image marker, where a camera writes EXIF.
fn with_segment(jpeg: &[u8], segment: &[u8]) -> Vec<u8> {
    let mut bytes = jpeg[..2].to_vec();
    bytes.extend(segment);
    bytes.extend(&jpeg[2..]);
    bytes
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|window| window == needle)
}

#[test]
fn a_phones_photo_loses_its_gps_position_and_stays_upright() {
    let upload = with_segment(&encoded(&photo(), ImageFormat::Jpeg), &exif_segment());
    assert!(contains(&upload, b"Exif\0\0"), "the upload carries EXIF");
    let prepared = prepare(&upload, &Limits::default()).unwrap();
    let stored = &prepared.picture;
    assert_eq!(stored.kind, Kind::Jpeg);
    assert!(!contains(&stored.bytes, b"Exif"), "no EXIF is kept");
    assert!(!contains(&stored.bytes, &2958_u32.to_le_bytes()), "nor the latitude");
    // Read back as a reader's browser would: upright (turned as the EXIF said), 20×40.
    let shown = image::load_from_memory(&stored.bytes).unwrap();
    assert_eq!((stored.width, stored.height, shown.width(), shown.height()), (20, 40, 20, 40));
    assert!(stored.name.ends_with(".jpg") && stored.name.len() == 64 + 4, "{}", stored.name);
    assert_eq!(prepare(&upload, &Limits::default()).unwrap().picture.name, stored.name, "named by its bytes");
}

#[test]
fn a_jpeg_that_is_also_an_html_page_keeps_only_its_pixels() {
    let mut upload = encoded(&photo(), ImageFormat::Jpeg);
    upload.extend(b"<html><script>alert(document.cookie)</script></html>");
    let comment = [&[0xFF, 0xFE, 0x00, 0x1A][..], b"<script>alert(1)</script>"].concat();
    let upload = with_segment(&upload, &comment);
    let stored = prepare(&upload, &Limits::default()).unwrap().picture;
    assert!(!contains(&stored.bytes, b"<script"), "nothing but pixels");
    assert!(!contains(&stored.bytes, b"<html"));
}

#[test]
fn only_the_four_formats_recognised_by_their_bytes_are_taken() {
    let limits = Limits::default();
    assert_eq!(prepare(b"", &limits).unwrap_err(), PictureError::Empty);
    let svg = br#"<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>"#;
    assert_eq!(prepare(svg, &limits).unwrap_err(), PictureError::NotAPicture(None));
    assert_eq!(prepare(b"<!doctype html><p>hi", &limits).unwrap_err(), PictureError::NotAPicture(None));
    let bmp = b"BM\x3a\0\0\0\0\0\0\0\x36\0\0\0";
    assert!(matches!(prepare(bmp, &limits).unwrap_err(), PictureError::NotAPicture(Some(found)) if found == "Bmp"));
    for (format, kind) in [(ImageFormat::Png, Kind::Png), (ImageFormat::Gif, Kind::Gif)] {
        let stored = prepare(&encoded(&photo(), format), &limits).unwrap().picture;
        assert_eq!((stored.kind, stored.width, stored.height), (kind, 40, 20), "{format:?}");
        assert_eq!(image::guess_format(&stored.bytes).unwrap(), format);
    }
}

#[test]
fn webp_is_kept_as_jpeg_or_as_png_where_it_is_transparent() {
    let limits = Limits::default();
    let opaque = prepare(&encoded(&photo(), ImageFormat::WebP), &limits).unwrap().picture;
    assert_eq!(opaque.kind, Kind::Jpeg);
    let clear = DynamicImage::ImageRgba8(RgbaImage::from_pixel(10, 10, Rgba([0, 0, 0, 0])));
    let transparent = prepare(&encoded(&clear, ImageFormat::WebP), &limits).unwrap().picture;
    assert_eq!(transparent.kind, Kind::Png);
    assert_eq!(image::load_from_memory(&transparent.bytes).unwrap().to_rgba8().get_pixel(0, 0)[3], 0, "still transparent");
}

#[test]
fn a_wide_picture_gets_a_smaller_jpeg_for_phones_and_a_narrow_one_none() {
    let limits = Limits::default();
    let wide = DynamicImage::ImageRgb8(RgbImage::from_pixel(2000, 100, Rgb([10, 120, 10])));
    let prepared = prepare(&encoded(&wide, ImageFormat::Png), &limits).unwrap();
    let phone = prepared.phone.expect("a variant for phones");
    assert_eq!((phone.kind, phone.width, phone.height), (Kind::Jpeg, 960, 48));
    assert!(prepare(&encoded(&photo(), ImageFormat::Png), &limits).unwrap().phone.is_none());
}

#[test]
fn a_small_file_that_says_it_is_huge_is_refused_from_its_header() {
    let limits = Limits::default();
    // 7,000 × 7,000 of one colour: 49 megapixels in a file of a few dozen kilobytes.
    let bomb = encoded(&DynamicImage::ImageLuma8(image::GrayImage::new(7_000, 7_000)), ImageFormat::Png);
    assert!(bomb.len() < 1_000_000, "{} bytes", bomb.len());
    assert!(matches!(prepare(&bomb, &limits).unwrap_err(), PictureError::TooManyPixels { width: 7_000, height: 7_000, .. }));
    let long = encoded(&DynamicImage::ImageLuma8(image::GrayImage::new(8_001, 1)), ImageFormat::Png);
    assert!(matches!(prepare(&long, &limits).unwrap_err(), PictureError::TooManyPixels { .. }));
    let big = vec![0xFF; limits.max_bytes + 1];
    assert!(matches!(prepare(&big, &limits).unwrap_err(), PictureError::TooLarge { .. }));
}

#[test]
fn a_truncated_or_damaged_picture_is_refused() {
    let jpeg = encoded(&photo(), ImageFormat::Jpeg);
    assert!(matches!(prepare(&jpeg[..jpeg.len() / 2], &Limits::default()).unwrap_err(), PictureError::Unreadable(_)));
    let mut png = encoded(&photo(), ImageFormat::Png);
    let middle = png.len() / 2;
    png[middle..middle + 8].copy_from_slice(b"damaged!");
    assert!(matches!(prepare(&png, &Limits::default()).unwrap_err(), PictureError::Unreadable(_)));
}

/// A GIF of `frames` frames of 1×1, as an editor writes it.
fn animated(frames: usize) -> Vec<u8> {
    let mut bytes = Vec::new();
    {
        let mut encoder = gif::Encoder::new(&mut bytes, 1, 1, &[0, 0, 0, 255, 255, 255]).unwrap();
        for n in 0..frames {
            let frame =
                gif::Frame { width: 1, height: 1, buffer: std::borrow::Cow::Owned(vec![(n % 2) as u8]), ..Default::default() };
            encoder.write_frame(&frame).unwrap();
        }
    }
    bytes
}

#[test]
fn an_animation_is_kept_frame_by_frame_within_its_limits() {
    let limits = Limits::default();
    let stored = prepare(&animated(3), &limits).unwrap().picture;
    assert_eq!(stored.kind, Kind::Gif);
    let mut options = gif::DecodeOptions::new();
    options.skip_frame_decoding(true);
    let mut decoder = options.read_info(Cursor::new(&stored.bytes)).unwrap();
    let mut frames = 0;
    while decoder.read_next_frame().unwrap().is_some() {
        frames += 1;
    }
    assert_eq!(frames, 3);
    assert!(matches!(prepare(&animated(10_000), &limits).unwrap_err(), PictureError::TooManyFrames { .. }));
}

mod directory {
    use blog::pictures::{DirectoryStore, Limits, PictureName, PictureStore, prepare};

    use super::{encoded, photo};

    #[test]
    fn a_name_is_a_content_address_never_a_path() {
        let hash = "a".repeat(64);
        for good in [format!("{hash}.jpg"), format!("{hash}.png"), format!("{hash}.gif")] {
            assert!(PictureName::parse(&good).is_some(), "{good}");
        }
        for bad in [
            format!("{hash}.webp"),
            format!("{hash}.jpg.jpg"),
            format!("{}.jpg", "A".repeat(64)),
            format!("{}.jpg", "a".repeat(63)),
            "../../etc/passwd".to_owned(),
            format!("../{hash}.jpg"),
            format!(".partial-{hash}.jpg"),
            String::new(),
        ] {
            assert!(PictureName::parse(&bad).is_none(), "{bad:?}");
        }
    }

    /// Stored, read back (also after the store is opened again), stored again (nothing
    /// changes), removed (and again: nothing to remove is no error).
    #[tokio::test]
    async fn a_picture_is_stored_read_and_removed_and_survives_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let name = {
            let store = DirectoryStore::open(dir.path()).unwrap();
            super::store_then_read(&store).await
        };
        let store = DirectoryStore::open(dir.path()).unwrap();
        super::read_then_remove(&store, &name).await;
    }

    /// What a write cut short (`kill -9` between its first byte and its rename) leaves is a
    /// temporary file under no picture's name: never served, and removed at the next start.
    #[tokio::test]
    async fn a_write_cut_short_leaves_no_half_picture() {
        let dir = tempfile::tempdir().unwrap();
        let prepared = prepare(&encoded(&photo(), image::ImageFormat::Png), &Limits::default()).unwrap().picture;
        let name = PictureName::parse(&prepared.name).unwrap();
        DirectoryStore::open(dir.path()).unwrap();
        let partial = dir.path().join("pictures").join(format!(".partial-{}", uuid::Uuid::new_v4()));
        std::fs::write(&partial, &prepared.bytes[..prepared.bytes.len() / 2]).unwrap();
        let store = DirectoryStore::open(dir.path()).unwrap();
        assert!(!partial.exists(), "removed at the start");
        assert_eq!(store.get(&name).await.unwrap(), None, "never served under its name");
        assert_eq!(std::fs::read_dir(dir.path().join("pictures")).unwrap().count(), 0);
    }
}

/// What every picture store must do, part one: a picture not there is `None`; stored (twice:
/// the second changes nothing), it reads back whole. Returns its name.
async fn store_then_read(store: &dyn blog::pictures::PictureStore) -> blog::pictures::PictureName {
    let prepared = prepare(&encoded(&photo(), ImageFormat::Png), &Limits::default()).unwrap().picture;
    let name = blog::pictures::PictureName::parse(&prepared.name).unwrap();
    assert_eq!(store.get(&name).await.unwrap(), None);
    store.put(&name, &prepared.bytes).await.unwrap();
    store.put(&name, &prepared.bytes).await.unwrap();
    assert_eq!(store.get(&name).await.unwrap().as_deref(), Some(&prepared.bytes[..]));
    name
}

/// Part two: it reads back (also from a store opened anew), and once removed (twice: nothing
/// to remove is no error) it is gone.
async fn read_then_remove(store: &dyn blog::pictures::PictureStore, name: &blog::pictures::PictureName) {
    let bytes = store.get(name).await.unwrap().expect("still there");
    assert_eq!(image::guess_format(&bytes).unwrap(), ImageFormat::Png);
    store.delete(name).await.unwrap();
    store.delete(name).await.unwrap();
    assert_eq!(store.get(name).await.unwrap(), None);
}

mod azurite {
    use std::io::{BufRead, BufReader};
    use std::process::{Child, Command, Stdio};

    use blog::pictures::{BlobStore, PictureStore};

    /// Azurite's well-known development account and key (its `EMULATOR_ACCOUNT_KEY_STR`).
    const ACCOUNT: &str = "devstoreaccount1";
    const KEY: &str = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

    /// An Azurite blob service of the test's own, on a free port, stopped when dropped.
    struct Azurite {
        child: Child,
        endpoint: String,
        _location: tempfile::TempDir,
    }

    impl Azurite {
        fn start() -> Azurite {
            let program = std::env::var("AZURITE_BLOB")
                .expect("AZURITE_BLOB names azurite-blob: run tests/azurite/run.sh, which installs Azurite and sets it");
            let location = tempfile::tempdir().unwrap();
            let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            let mut child = Command::new(program)
                .args(["--blobHost", "127.0.0.1", "--blobPort", &port.to_string(), "--location"])
                .arg(location.path())
                .args(["--skipApiVersionCheck", "--disableTelemetry", "--silent"])
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("azurite-blob starts");
            // Ready once it says where it listens.
            let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
            loop {
                let line = lines.next().expect("azurite-blob said where it listens before it ended").unwrap();
                if line.contains("successfully listens on") {
                    break;
                }
            }
            Azurite { child, endpoint: format!("http://127.0.0.1:{port}"), _location: location }
        }
    }

    impl Drop for Azurite {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    /// The same as the data directory's store, on Blob Storage as Azurite serves it, through
    /// the SDK the deployed build uses; and the container made again is no error.
    #[tokio::test]
    #[ignore = "needs Azurite: run tests/azurite/run.sh"]
    async fn a_picture_is_stored_read_and_removed_in_blob_storage() {
        let azurite = Azurite::start();
        let name = {
            let store = BlobStore::azurite(&azurite.endpoint, ACCOUNT, KEY, "pictures").unwrap();
            store.create_container().await.unwrap();
            super::store_then_read(&store).await
        };
        let store = BlobStore::azurite(&azurite.endpoint, ACCOUNT, KEY, "pictures").unwrap();
        store.create_container().await.unwrap();
        super::read_then_remove(&store, &name).await;
    }

    /// Blob Storage unreachable: the store says it is unavailable (503 to a writer), and
    /// nothing hangs.
    #[tokio::test]
    #[ignore = "needs Azurite: run tests/azurite/run.sh"]
    async fn an_unreachable_blob_storage_is_unavailable() {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let store = BlobStore::azurite(&format!("http://127.0.0.1:{port}"), ACCOUNT, KEY, "pictures").unwrap();
        let name = blog::pictures::PictureName::parse(&format!("{}.png", "a".repeat(64))).unwrap();
        let failed = store.put(&name, b"not stored").await.unwrap_err();
        assert!(matches!(failed, blog::pictures::PictureStoreError::Unavailable(_)), "{failed}");
    }
}
