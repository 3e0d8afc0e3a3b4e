//! The picture store's checks and the uploads on Blob Storage as the real Azurite serves it
//! (ignored by a plain `cargo test`: `tests/azurite/run.sh` runs them).

use blog::testing::pictures::{BlobStore, PictureStore};

pub(super) use super::common::azurite::{ACCOUNT, Azurite, KEY};

/// The same as the data directory's store, on Blob Storage as Azurite serves it, through
/// the SDK the deployed build uses; the container is made by the first upload.
#[tokio::test]
#[ignore = "needs Azurite: run tests/azurite/run.sh"]
async fn blob_storage_keeps_a_picture_as_the_directory_does() {
    let azurite = Azurite::start();
    let address = {
        let store =
            BlobStore::from_connection_string(&azurite.connection_string(), "pictures").unwrap();
        super::store_then_read(&store).await
    };
    let store = BlobStore::with_account_key(&azurite.service, ACCOUNT, KEY, "pictures").unwrap();
    super::read_then_remove(&store, &address).await;
}

/// The blog's pictures in a container of `azurite`.
fn pictures_on(azurite: &Azurite) -> blog::PictureStorage {
    blog::PictureStorage::ConnectionString {
        connection_string: azurite.connection_string(),
        container: "pictures".into(),
    }
}

/// Everything an upload must do, through the blog, on Azurite.
#[tokio::test]
#[ignore = "needs Azurite: run tests/azurite/run.sh"]
async fn uploads_on_azurite() {
    let azurite = Azurite::start();
    let app = super::uploads::blog_with(pictures_on(&azurite)).await;
    super::uploads::everything_an_upload_must_do(&app).await;
}

/// A picture checked at its write is served without being hashed again while its blob's
/// ETag is the same; a blob put in its place under its name (another ETag) is checked anew
/// and, its bytes not being the ones the name says, refused by an instance that reads it. The
/// instance that kept the checked bytes serves them, and never the blob put in their place.
#[tokio::test]
#[ignore = "needs Azurite: run tests/azurite/run.sh"]
async fn a_blob_replaced_under_its_name_is_refused() {
    use blog::testing::pictures::{PictureAddress, PictureName};
    let azurite = Azurite::start();
    let app = super::uploads::blog_with(pictures_on(&azurite)).await;
    let (_, _, added) = super::uploads::a_photo_uploaded(&app, "kite-keeper").await;
    let url = added.body["url"].as_str().unwrap().to_owned();
    let mut served = Vec::new();
    for _ in 0..2 {
        let (status, _, bytes) = super::uploads::fetch(&app, &url, &[]).await;
        assert_eq!(status, reqwest::StatusCode::OK);
        served = bytes;
    }
    let [owner, post, name] =
        url.trim_start_matches("/pictures/").splitn(3, '/').collect::<Vec<_>>()[..]
    else {
        panic!("{url}")
    };
    let address = PictureAddress {
        owner: owner.into(),
        post: post.into(),
        name: PictureName::parse(name).unwrap(),
    };
    let store =
        BlobStore::from_connection_string(&azurite.connection_string(), "pictures").unwrap();
    store.remove(&address).await.unwrap();
    store.put(&address, b"not the picture its name says").await.unwrap();
    let (status, _, kept) = super::uploads::fetch(&app, &url, &[]).await;
    assert_eq!(
        (status, kept.len()),
        (reqwest::StatusCode::OK, served.len()),
        "the bytes checked, kept"
    );
    assert_eq!(kept, served);
    let other_instance = super::uploads::blog_with(pictures_on(&azurite)).await;
    let (status, headers, _) = super::uploads::fetch(&other_instance, &url, &[]).await;
    assert_eq!(status, reqwest::StatusCode::INTERNAL_SERVER_ERROR);
    assert!(
        headers
            .get("cache-control")
            .is_none_or(|value| !value.to_str().unwrap().contains("immutable"))
    );
}

/// Blob Storage unreachable: the store says it is unavailable, the writer gets 503 with
/// `Retry-After`, the post is unchanged, and nothing hangs.
#[tokio::test]
#[ignore = "needs Azurite: run tests/azurite/run.sh"]
async fn an_unreachable_blob_storage_changes_nothing() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let service = format!("http://127.0.0.1:{port}/{ACCOUNT}");
    let store = BlobStore::with_account_key(&service, ACCOUNT, KEY, "pictures").unwrap();
    let name = blog::testing::pictures::PictureName::parse(&format!("{}-1x1.png", "a".repeat(64)))
        .unwrap();
    let address =
        blog::testing::pictures::PictureAddress { owner: "w".into(), post: "p".into(), name };
    let failed = store.put(&address, b"not stored").await.unwrap_err();
    assert!(
        matches!(failed, blog::testing::pictures::PictureStoreError::Unavailable(_)),
        "{failed}"
    );

    let connection_string = format!(
        "DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={KEY};BlobEndpoint={service};"
    );
    let storage =
        blog::PictureStorage::ConnectionString { connection_string, container: "pictures".into() };
    let app = super::uploads::blog_with(storage).await;
    let writer = app.user("unlucky").await;
    let post = app.post_by(&writer, "Unchanged").await;
    let before = app.get(&format!("/api/posts/{post}")).await.body;
    let answer = app
        .client
        .post(format!("{}/api/posts/{post}/pictures", app.base))
        .header("x-dev-user", &writer)
        .header("content-type", "image/png")
        .body(super::encoded(&super::photo(), image::ImageFormat::Png))
        .send()
        .await
        .unwrap();
    let answer = super::common::read(answer).await;
    answer.problem(503);
    assert!(answer.header("retry-after").is_some());
    assert_eq!(app.get(&format!("/api/posts/{post}")).await.body, before, "the post is unchanged");
}
