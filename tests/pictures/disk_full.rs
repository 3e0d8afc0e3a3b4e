//! Disk full under the embedded store's pictures: 507, as for every write, and nothing of the
//! picture left. The pictures' directory is a 256 KiB tmpfs of the test's own (mounting needs
//! root: without it the test says so and passes, except under CI, where it fails).

use reqwest::StatusCode;

use super::common::{TestApp, noise_png, read};

/// A small tmpfs at `path`, unmounted when dropped.
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    fn mount(path: &std::path::Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(path).unwrap();
        let status = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(path)
            .stderr(std::process::Stdio::null())
            .status()
            .ok()?;
        status.success().then(|| Tmpfs(path.to_owned()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

#[tokio::test]
async fn a_full_disk_under_the_pictures_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let pictures = dir.path().join("pictures");
    let Some(_tmpfs) = Tmpfs::mount(&pictures, "256k") else {
        assert!(std::env::var_os("CI").is_none(), "CI runs as root: mounting a tmpfs must work");
        eprintln!(
            "a_full_disk_under_the_pictures_leaves_nothing: not run, mounting a tmpfs needs root"
        );
        return;
    };
    let config = blog::Config {
        pictures: blog::PictureStorage::DataDirectory(dir.path().to_owned()),
        ..TestApp::config(dir.path())
    };
    let app = TestApp::start_configured(config).await;
    let writer = app.user("filler").await;
    let post = app.post_by(&writer, "Too big for the disk").await;
    let send = |bytes: Vec<u8>| {
        let request = app
            .client
            .post(format!("{}/api/posts/{post}/pictures", app.base))
            .header("x-dev-user", &writer)
            .header("content-type", "image/png")
            .body(bytes);
        async move { read(request.send().await.unwrap()).await }
    };
    let refused = send(noise_png(400, 1)).await;
    assert!(refused.problem(507).contains("disk is full"), "{}", refused.body);
    let left = super::common::files_under(&pictures);
    assert!(left.is_empty(), "nothing of the picture is left: {left:?}");
    let small = send(noise_png(8, 2)).await;
    assert_eq!(small.status, StatusCode::CREATED, "{}", small.body);
    drop(app);
}
