//! Blob Storage that cannot be reached, with a connection string's key (no Azurite needed): the
//! SDK's errors name the URL that failed, which carries the request's SAS; no error and no log
//! line may.

use blog::testing::pictures::{
    BlobStore, PictureAddress, PictureName, PictureStore, PictureStoreError,
};

use super::azurite::{ACCOUNT, KEY};
use super::common::binary::Handler;

/// `http://127.0.0.1:<port>/devstoreaccount1`, where nothing listens.
fn unreachable_service() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    format!("http://127.0.0.1:{port}/{ACCOUNT}")
}

/// Each of the store's calls fails as unavailable, saying where, with no SAS in its text.
#[tokio::test]
async fn a_failed_blob_request_says_where_without_its_signature() {
    let service = unreachable_service();
    let store = BlobStore::with_account_key(&service, ACCOUNT, KEY, "pictures").unwrap();
    let name = PictureName::parse(&format!("{}-1x1.png", "a".repeat(64))).unwrap();
    let address = PictureAddress { owner: "w".into(), post: "p".into(), name };
    let (put, get, contains, usage, removed) = tokio::join!(
        store.put(&address, b"not stored"),
        store.get(&address),
        store.contains(&address),
        store.usage("w"),
        store.remove_post("w", "p"),
    );
    let failures = [
        put.unwrap_err(),
        get.unwrap_err(),
        contains.unwrap_err(),
        usage.unwrap_err(),
        removed.unwrap_err(),
    ];
    for failed in failures {
        let said = failed.to_string();
        assert!(
            matches!(failed, PictureStoreError::Unavailable(_)) && said.contains(&service),
            "unavailable, saying where: {said}"
        );
        assert!(!said.contains("sig") && !said.contains("sv=") && !said.contains(KEY), "{said}");
    }
}

/// The real binary, its SDK's log lines at every level: an upload to unreachable Blob
/// Storage is 503, and neither its answer nor any line on stdout or stderr holds a signature
/// (the SDK's own lines show `sig=REDACTED`) or the key.
#[tokio::test]
async fn no_line_of_the_handler_holds_a_signature() {
    let data = tempfile::tempdir().unwrap();
    let service = unreachable_service();
    let connection_string = format!(
        "DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={KEY};BlobEndpoint={service};"
    );
    let handler = Handler::start(
        data.path(),
        &[
            ("BLOG_PICTURES", &connection_string),
            (
                "RUST_LOG",
                "info,azure_core=trace,typespec_client_core=trace,azure_storage_blob=trace",
            ),
        ],
    );
    let client = reqwest::Client::new();
    let as_writer = |request: reqwest::RequestBuilder| request.header("x-dev-user", "w");
    let post = handler.writers_post("w").await;
    let upload = as_writer(client.post(format!("{}/api/posts/{post}/pictures", handler.base)))
        .header("content-type", "image/png")
        .body(super::common::noise_png(4, 1))
        .send()
        .await
        .unwrap();
    let answer = super::common::read(upload).await;
    answer.problem(503);
    let picture = format!("{}/pictures/w/{post}/{}-4x4.png", handler.base, "a".repeat(64));
    let read = client.get(picture).send().await.unwrap();
    assert!(read.status().is_server_error(), "{}", read.status());
    let read = read.text().await.unwrap();

    let (log, errors) = (handler.log.clone(), handler.errors.clone());
    handler.stop();
    let lines: Vec<String> =
        log.lock().unwrap().iter().chain(errors.lock().unwrap().iter()).cloned().collect();
    for text in lines.iter().chain([&answer.body.to_string(), &read]) {
        let mut rest = text.as_str();
        while let Some(at) = rest.find("sig=") {
            rest = &rest[at + "sig=".len()..];
            assert!(rest.starts_with("REDACTED"), "a signature: {text}");
        }
        assert!(!text.contains(KEY), "the key: {text}");
    }
    assert!(
        lines.iter().any(|line| line.contains("sig=REDACTED")),
        "the SDK's request lines were logged, each with its SAS: {lines:#?}"
    );
    let warned = lines.iter().find(|line| line.contains("the picture store is unavailable"));
    assert!(
        warned.is_some_and(|line| line.contains(&service)),
        "the warning says where: {lines:#?}"
    );
}
