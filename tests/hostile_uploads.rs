//! What a hostile writer, signed in and with a post of their own, can send as a picture, on the
//! real `handler` binary as `cargo run` starts it: each file is refused with a 4xx that says
//! why, nothing of it is stored, the process stays up, and its memory stays within what the
//! docs/configuration.md states (its own at rest, plus `BLOG_PICTURE_MEMORY_MB`, plus the bodies being read).

// Test code: a failed unwrap is a failed test (Cargo.toml's unwrap_used is for the code that runs).
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::time::Duration;

use common::binary::Handler;
use common::{files_under, hostile};
use reqwest::StatusCode;

const MIB: u64 = 1024 * 1024;

/// The answer to uploading `bytes` to `post`: its status and body.
async fn upload(
    client: &reqwest::Client,
    handler: &Handler,
    writer: &str,
    post: &str,
    bytes: Vec<u8>,
) -> (StatusCode, String, Option<String>) {
    let answer = client
        .post(format!("{}/api/posts/{post}/pictures", handler.base))
        .header("x-dev-user", writer)
        .header("content-type", "application/octet-stream")
        .body(bytes)
        .send()
        .await
        .unwrap();
    let status = answer.status();
    let retry_after =
        answer.headers().get("retry-after").map(|value| value.to_str().unwrap().to_owned());
    (status, answer.text().await.unwrap(), retry_after)
}

/// The handler's memory at rest, once it has served a picture (so that the decoders' code and
/// the allocator's arenas are counted as its own).
async fn memory_at_rest(
    client: &reqwest::Client,
    handler: &Handler,
    writer: &str,
    post: &str,
) -> u64 {
    let (status, body, _) =
        upload(client, handler, writer, post, hostile::photo_jpeg(640, 480, 1)).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    handler.memory().0
}

#[tokio::test]
async fn each_hostile_file_is_refused_leaving_nothing() {
    // Made before the handler starts: the client's connection is not left idle meanwhile.
    let half_photo = {
        let photo = hostile::photo_jpeg(1600, 900, 2);
        photo[..photo.len() / 2].to_vec()
    };
    let first_700_bytes = hostile::photo_jpeg(1600, 900, 3)[..700].to_vec();
    let first_1000_bytes_and_the_end_marker =
        [&hostile::photo_jpeg(160, 120, 4)[..1000], &[0xFF, 0xD9]].concat();
    let cases: [(&str, Vec<u8>, &str); 5] = [
        (
            "a 6,000 × 6,000 GIF with 300 frames of one pixel",
            hostile::gif_canvas_with_tiny_frames(),
            "frames",
        ),
        (
            "a PNG whose colour profile inflates to 1 GiB",
            hostile::png_with_inflating_profile(),
            "colour profile",
        ),
        ("half of a 1600 × 900 JPEG", half_photo, "cut off"),
        ("the first 700 bytes of a JPEG", first_700_bytes, "cut off"),
        (
            "the first 1,000 bytes of a JPEG with its end marker put back",
            first_1000_bytes_and_the_end_marker,
            "cut off",
        ),
    ];
    let data = tempfile::tempdir().unwrap();
    let mut handler = Handler::start(data.path(), &[]);
    let client = reqwest::Client::new();
    let post = handler.writers_post("mallory").await;
    let at_rest = memory_at_rest(&client, &handler, "mallory", &post).await;
    let stored_before = files_under(&data.path().join("pictures"));
    for (what, bytes, said) in cases {
        let size = bytes.len();
        let (status, body, _) = upload(&client, &handler, "mallory", &post, bytes).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{what} ({size} bytes): {body}");
        assert!(body.contains(said), "{what}: the answer says why ({said}): {body}");
        assert_eq!(
            files_under(&data.path().join("pictures")),
            stored_before,
            "{what}: nothing is stored"
        );
        assert!(handler.is_alive(), "{what}: the handler is up");
    }
    let (_, peak) = handler.memory();
    let budget = 256 * MIB;
    eprintln!("hostile files: at rest {} MiB, peak {} MiB", at_rest / MIB, peak / MIB);
    assert!(
        peak <= at_rest + budget,
        "the peak ({} MiB) stays within the memory at rest ({} MiB) and the pictures' memory ({} MiB)",
        peak / MIB,
        at_rest / MIB,
        budget / MIB
    );
}

/// Eight uploads at once, each a photo whose decoding needs more than half of a 256 MiB budget:
/// one is prepared at a time, the others wait a moment and are told to come back (503 with
/// `Retry-After`); reads keep answering; the memory stays within the budget and the bodies.
#[tokio::test]
async fn eight_large_uploads_at_once_stay_within_the_budget() {
    // The same photo eight times: each upload is decoded whole, whatever the others are.
    let photo = hostile::photo_jpeg(6_000, 4_000, 10);
    assert!(photo.len() < 10 * 1024 * 1024, "a photo of {} bytes is taken", photo.len());
    let photos = vec![photo; 8];
    let data = tempfile::tempdir().unwrap();
    let handler = Handler::start(data.path(), &[]);
    let client = reqwest::Client::builder().timeout(Duration::from_secs(120)).build().unwrap();
    let post = handler.writers_post("crowd").await;
    let at_rest = memory_at_rest(&client, &handler, "crowd", &post).await;
    let bodies: u64 = photos.iter().map(|photo| photo.len() as u64).sum();
    let uploads = photos.into_iter().map(|photo| {
        let (client, handler, post) = (&client, &handler, &post);
        async move { upload(client, handler, "crowd", post, photo).await }
    });
    let reads = async {
        let mut answered = 0;
        for _ in 0..20 {
            let front_page = client.get(format!("{}/", handler.base)).send().await.unwrap();
            assert_eq!(
                front_page.status(),
                StatusCode::OK,
                "reads answer while pictures are prepared"
            );
            answered += 1;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        answered
    };
    let (answers, read) = tokio::join!(futures::future::join_all(uploads), reads);
    assert_eq!(read, 20);
    let created = answers.iter().filter(|(status, ..)| *status == StatusCode::CREATED).count();
    assert!(created >= 1, "at least one is taken: {answers:?}");
    for (status, body, retry_after) in &answers {
        match *status {
            StatusCode::CREATED => {}
            StatusCode::SERVICE_UNAVAILABLE => {
                assert!(retry_after.is_some(), "a 503 says when to come back: {body}");
                assert!(body.contains("memory"), "{body}");
            }
            other => panic!("{other}: {body}"),
        }
    }
    let (_, peak) = handler.memory();
    let budget = 256 * MIB;
    eprintln!(
        "eight at once: at rest {} MiB, peak {} MiB, bodies {} MiB, answers {:?}",
        at_rest / MIB,
        peak / MIB,
        bodies / MIB,
        answers.iter().map(|answer| answer.0.as_u16()).collect::<Vec<_>>()
    );
    assert!(
        peak <= at_rest + budget + bodies,
        "the peak ({} MiB) stays within the memory at rest ({} MiB), the pictures' memory ({} MiB) and the bodies ({} MiB)",
        peak / MIB,
        at_rest / MIB,
        budget / MIB,
        bodies / MIB
    );
}

/// A full disk between the picture's two copies: the phones' copy fits, the picture does not.
/// The answer is 507, and the phones' copy is taken back, so nothing of the upload is served or
/// counted. The pictures' directory is a small tmpfs of the test's own (mounting needs root:
/// without it the test says so and passes, except under CI, where it fails).
#[tokio::test]
async fn a_disk_full_between_the_two_copies_leaves_nothing() {
    let data = tempfile::tempdir().unwrap();
    let pictures = data.path().join("pictures");
    std::fs::create_dir_all(&pictures).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=600k", "tmpfs"])
        .arg(&pictures)
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !mounted {
        assert!(std::env::var_os("CI").is_none(), "CI runs as root: mounting a tmpfs must work");
        eprintln!(
            "a_disk_full_between_the_two_copies_leaves_nothing: not run, mounting a tmpfs needs root"
        );
        return;
    }
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(self.0).status();
        }
    }
    let _unmount = Unmount(&pictures);
    // Noise: its PNG (about 1.4 MB) does not fit in 600 KB, its 960-pixel JPEG does.
    let wide = common::noise_png_of(1_200, 400, 7);
    let handler = Handler::start(data.path(), &[]);
    let client = reqwest::Client::new();
    let post = handler.writers_post("filler").await;
    let (status, body, _) = upload(&client, &handler, "filler", &post, wide).await;
    assert_eq!(status, StatusCode::INSUFFICIENT_STORAGE, "{body}");
    assert!(body.contains("disk is full"), "{body}");
    // (The writer's quota counts the files there are: none.)
    assert_eq!(files_under(&pictures), Vec::<std::path::PathBuf>::new(), "neither copy is left");
}

/// A picture whose bytes on disk are no longer those its name says (changed by hand, or by a
/// failing disk) is never served under its name, which browsers and CDNs keep for a year: the
/// answer is 500, and the log names the file.
#[tokio::test]
async fn a_picture_changed_on_disk_is_not_served_as_the_original() {
    let data = tempfile::tempdir().unwrap();
    let handler = Handler::start(data.path(), &[]);
    let client = reqwest::Client::new();
    let post = handler.writers_post("keeper").await;
    let (status, body, _) =
        upload(&client, &handler, "keeper", &post, hostile::photo_jpeg(320, 200, 4)).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let url = serde_json::from_str::<serde_json::Value>(&body).unwrap()["url"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        client.get(format!("{}{url}", handler.base)).send().await.unwrap().status(),
        StatusCode::OK
    );
    // The picture, and its two small copies for the lists.
    let stored = files_under(&data.path().join("pictures"));
    assert_eq!(stored.len(), 3, "{stored:?}");
    let file = stored
        .iter()
        .find(|file| url.ends_with(file.file_name().unwrap().to_str().unwrap()))
        .unwrap();
    let mut bytes = std::fs::read(file).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xFF;
    std::fs::write(file, bytes).unwrap();
    let answer = client.get(format!("{}{url}", handler.base)).send().await.unwrap();
    assert_eq!(answer.status(), StatusCode::INTERNAL_SERVER_ERROR);
    assert!(
        answer
            .headers()
            .get("cache-control")
            .is_none_or(|value| !value.to_str().unwrap().contains("immutable"))
    );
    let name = file.file_name().unwrap().to_str().unwrap().to_owned();
    let logged = || {
        handler
            .errors
            .lock()
            .unwrap()
            .iter()
            .any(|line| line.contains("not the ones its name says") && line.contains(&name))
    };
    for _ in 0..50 {
        if logged() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(logged(), "the log names the file: {:?}", handler.errors.lock().unwrap());
    // Nor is a small copy made of it, where it has none yet (stored before they were made).
    let small = url.replace("320x200", "128x96");
    std::fs::remove_file(data.path().join(small.trim_start_matches('/'))).unwrap();
    let answer = client.get(format!("{}{small}", handler.base)).send().await.unwrap();
    assert_eq!(answer.status(), StatusCode::INTERNAL_SERVER_ERROR, "{small}");
    assert!(!data.path().join(small.trim_start_matches('/')).exists(), "no copy stored");
}

/// A picture checked once and then served without being hashed again is still never served
/// once its file changes in place: its version (inode, length, times, the change time above
/// all) is no longer the one checked, so it is checked anew and refused. Two pictures, served
/// once their files are older than the two seconds a version needs to settle
/// (`src/pictures/directory.rs`, `SETTLED_AFTER`), so that both are served from the set of
/// checked versions; then one is changed keeping its length and modification time, the other
/// made longer, and both are asked for at once and again once the changes have settled.
#[tokio::test]
async fn a_picture_served_then_changed_in_place_is_refused() {
    let data = tempfile::tempdir().unwrap();
    let handler = Handler::start(data.path(), &[]);
    let client = reqwest::Client::new();
    let post = handler.writers_post("keeper").await;
    let mut urls = Vec::new();
    for seed in [5, 6] {
        let (status, body, _) =
            upload(&client, &handler, "keeper", &post, hostile::photo_jpeg(320, 200, seed)).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        urls.push(
            serde_json::from_str::<serde_json::Value>(&body).unwrap()["url"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    tokio::time::sleep(Duration::from_millis(2_100)).await;
    let get = |url: String| {
        let client = client.clone();
        let base = handler.base.clone();
        async move { client.get(format!("{base}{url}")).send().await.unwrap() }
    };
    let file_of = |url: &str| data.path().join(url.trim_start_matches('/'));
    for url in &urls {
        for _ in 0..2 {
            let answer = get(url.clone()).await;
            assert_eq!(answer.status(), StatusCode::OK, "{url}");
            assert_eq!(
                answer.bytes().await.unwrap(),
                std::fs::read(file_of(url)).unwrap(),
                "{url}"
            );
        }
    }

    let [same_length, longer] = urls.as_slice() else { unreachable!() };
    let change = |url: &str, edit: &dyn Fn(&mut Vec<u8>)| {
        let path = file_of(url);
        let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        edit(&mut bytes);
        let mut file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        std::io::Write::write_all(&mut file, &bytes).unwrap();
        file.set_modified(modified).unwrap();
    };
    change(same_length, &|bytes| {
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0xFF;
    });
    change(longer, &|bytes| bytes.extend_from_slice(b"and more"));
    // At once (a version changed within the last two seconds is always hashed), and once the
    // changed files have settled too (their version is then told, and is not the one checked).
    for wait in [0, 2_100] {
        tokio::time::sleep(Duration::from_millis(wait)).await;
        for url in [longer, same_length] {
            let answer = get(url.clone()).await;
            assert_eq!(
                answer.status(),
                StatusCode::INTERNAL_SERVER_ERROR,
                "{url} changed on disk is not served ({wait} ms after)"
            );
            assert!(
                answer
                    .headers()
                    .get("cache-control")
                    .is_none_or(|value| !value.to_str().unwrap().contains("immutable"))
            );
        }
    }
}

/// A picture too large to be kept in memory is read whole and checked at its first view, then
/// sent from the disk in pieces while its version is the one checked: with its length said, the
/// same bytes as the file. Changed in place after that, it is refused.
#[tokio::test]
async fn a_large_picture_checked_once_is_sent_from_the_disk() {
    let data = tempfile::tempdir().unwrap();
    let handler = Handler::start(data.path(), &[]);
    let client = reqwest::Client::new();
    let post = handler.writers_post("photographer").await;
    let photo = hostile::photo_jpeg_with_grain(1600, 1200, 7, 20);
    let (status, body, _) = upload(&client, &handler, "photographer", &post, photo).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let url = serde_json::from_str::<serde_json::Value>(&body).unwrap()["url"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = data.path().join(url.trim_start_matches('/'));
    let stored = std::fs::read(&path).unwrap();
    assert!(stored.len() > 512 * 1024, "larger than the largest file kept: {}", stored.len());
    tokio::time::sleep(Duration::from_millis(2_100)).await;
    for view in ["checked", "sent in pieces", "sent in pieces again"] {
        let answer = client.get(format!("{}{url}", handler.base)).send().await.unwrap();
        assert_eq!(answer.status(), StatusCode::OK, "{view}");
        assert_eq!(answer.content_length(), Some(stored.len() as u64), "{view}");
        assert_eq!(answer.bytes().await.unwrap(), stored, "{view}");
    }

    let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
    let mut changed = stored.clone();
    changed[stored.len() / 2] ^= 0xFF;
    let mut file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    std::io::Write::write_all(&mut file, &changed).unwrap();
    file.set_modified(modified).unwrap();
    for wait in [0, 2_100] {
        tokio::time::sleep(Duration::from_millis(wait)).await;
        let answer = client.get(format!("{}{url}", handler.base)).send().await.unwrap();
        assert_eq!(answer.status(), StatusCode::INTERNAL_SERVER_ERROR, "{wait} ms after");
    }
}

/// A picture uploaded exactly as wide as a phones' copy (960 pixels) is its own picture, not a
/// copy: changed on disk, it is refused like any other, though a copy of that size, with no hash
/// recorded beside it in the data directory, is let through as its picture's.
#[tokio::test]
async fn a_picture_of_a_copys_size_changed_on_disk_is_refused() {
    let data = tempfile::tempdir().unwrap();
    let handler = Handler::start(data.path(), &[]);
    let client = reqwest::Client::new();
    let post = handler.writers_post("phone-sized").await;
    let (status, body, _) =
        upload(&client, &handler, "phone-sized", &post, hostile::photo_jpeg(960, 720, 7)).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let url = serde_json::from_str::<serde_json::Value>(&body).unwrap()["url"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(url.ends_with("-960x720.jpg"), "{url}");
    let path = data.path().join(url.trim_start_matches('/'));
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend_from_slice(b"and more");
    std::fs::write(&path, &bytes).unwrap();
    let answer = client.get(format!("{}{url}", handler.base)).send().await.unwrap();
    assert_eq!(
        answer.status(),
        StatusCode::INTERNAL_SERVER_ERROR,
        "{url} changed on disk is not served"
    );
}

/// A request cut off by its time budget leaves its decoding running (a blocking task cannot be
/// stopped), and that decoding keeps its share of the pictures' memory until it ends: an upload
/// sent meanwhile is told to come back, instead of a second decoding starting beside it.
#[tokio::test]
async fn a_decode_cut_off_by_the_request_budget_keeps_its_memory() {
    let photo = hostile::photo_jpeg(6_000, 4_000, 20);
    let data = tempfile::tempdir().unwrap();
    // One second a request, and memory for one such photo at a time.
    let handler = Handler::start(
        data.path(),
        &[("BLOG_REQUEST_TIMEOUT", "1"), ("BLOG_PICTURE_MEMORY_MB", "256")],
    );
    let client = reqwest::Client::new();
    let post = handler.writers_post("hasty").await;
    let (status, body, _) = upload(&client, &handler, "hasty", &post, photo.clone()).await;
    assert_eq!(
        status,
        StatusCode::SERVICE_UNAVAILABLE,
        "the first is cut off by the budget: {body}"
    );
    assert!(body.contains("did not answer within 1 s"), "{body}");
    // The second finds the memory held by the first one's decoding, and waits (it is then cut
    // off by its own second, or told to come back: either way, no second decoding beside it).
    let (status, body, retry_after) = upload(&client, &handler, "hasty", &post, photo).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert!(retry_after.is_some());
    let waited = handler
        .log
        .lock()
        .unwrap()
        .iter()
        .any(|line| line.contains("a picture waits for the memory others hold"));
    assert!(
        waited,
        "the first one's decoding still held the memory: {:?}",
        handler.log.lock().unwrap()
    );
}
