//! The blob store's tests: connection strings read, and SASes signed as the service checks them.

use super::*;

#[test]
fn a_connection_string_gives_the_service_with_its_account_key() {
    let local = parse_connection_string("UseDevelopmentStorage=true").unwrap();
    assert_eq!(
        local,
        (
            "http://127.0.0.1:10000/devstoreaccount1".into(),
            AZURITE_ACCOUNT.into(),
            AZURITE_KEY.into()
        )
    );
    // Azurite's README's full connection string, and one of an account on Azure.
    let full = format!(
        "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={AZURITE_KEY};BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;"
    );
    assert_eq!(
        parse_connection_string(&full).unwrap().0,
        "http://127.0.0.1:10000/devstoreaccount1"
    );
    let azure = format!(
        "DefaultEndpointsProtocol=https;AccountName=blogpics;AccountKey={AZURITE_KEY};EndpointSuffix=core.windows.net"
    );
    let (service, account, _) = parse_connection_string(&azure).unwrap();
    assert_eq!(
        (service.as_str(), account.as_str()),
        ("https://blogpics.blob.core.windows.net", "blogpics")
    );
    for bad in ["", "AccountName=a", &format!("AccountKey={AZURITE_KEY}")] {
        assert!(
            matches!(parse_connection_string(bad), Err(PictureStoreError::Unusable(_))),
            "{bad:?}"
        );
    }
}

/// The SASes as Azurite 3.37 computes them from the same values (its
/// `generateBlobSASSignature` and `generateAccountSASSignature`, run with Node), so a change
/// to a string to sign shows here, not only against Azurite.
#[test]
fn sases_are_signed_as_the_service_checks_them() {
    let key = AccountKey {
        account: AZURITE_ACCOUNT.into(),
        container: "pictures".into(),
        key: Secret::new(AZURITE_KEY),
        protocol: "https,http",
    };
    let now = time::macros::datetime!(2025-06-01 12:00:00.250 UTC);
    assert_eq!(
        key.sas(Scope::Container, now).unwrap(),
        "sv=2022-11-02&sr=c&sp=rwdl&se=2025-06-01T12%3A15%3A00Z&spr=https%2Chttp\
         &sig=W%2B%2BQyO3HycaJpZ8Rx8zMpvuubbRVNFDRBxrgO9fTR0c%3D"
    );
    assert_eq!(
        key.sas(Scope::CreateContainer, now).unwrap(),
        "sv=2022-11-02&ss=b&srt=c&sp=c&se=2025-06-01T12%3A15%3A00Z&spr=https%2Chttp\
         &sig=nMyjv5hPDBctCPTmHED%2BG7KOPT%2Bz8WMzNvQ1PcJBzoM%3D"
    );
}

/// A retried request is signed again: one SAS, the last, and the operation's parameters as
/// the SDK encoded them.
#[test]
fn each_try_carries_one_sas() {
    let mut url =
        Url::parse("http://127.0.0.1:10000/devstoreaccount1/pictures?restype=container&comp=list&prefix=w%2Fp+q%2F").unwrap();
    with_sas(&mut url, "sv=1&sr=c&sig=a");
    with_sas(&mut url, "sv=2&sr=c&sig=b");
    assert_eq!(url.query(), Some("restype=container&comp=list&prefix=w%2Fp+q%2F&sv=2&sr=c&sig=b"));
}

/// A request that cannot be sent: the SDK's error, as its reqwest transport and its retry
/// policy make it, names the URL with the SAS; what becomes a `PictureStoreError` does not.
#[tokio::test]
async fn no_error_text_carries_the_signature() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let key = AccountKey {
        account: AZURITE_ACCOUNT.into(),
        container: "pictures".into(),
        key: Secret::new(AZURITE_KEY),
        protocol: "https,http",
    };
    let mut url = Url::parse(&format!(
        "http://127.0.0.1:{port}/{AZURITE_ACCOUNT}/pictures/w%2Fp%2Fa.png?comp=tags"
    ))
    .unwrap();
    with_sas(&mut url, &key.sas(Scope::Container, time::OffsetDateTime::now_utc()).unwrap());
    let refused = reqwest::Client::new().get(url.as_str()).send().await.unwrap_err();
    let error = azure_core::Error::with_error(
        azure_core::error::ErrorKind::Connection,
        refused,
        "failed to execute `reqwest` request",
    )
    .with_context("retry policy expired and the request will no longer be retried");
    let raw = crate::logging::with_causes(&error);
    assert!(raw.contains("&sig="), "the SDK's own text has it: {raw}");
    let PictureStoreError::Unavailable(said) = unavailable(error) else { panic!("unavailable") };
    assert!(!said.contains("sig") && !said.contains("sv="), "{said}");
    let url =
        format!("for url (http://127.0.0.1:{port}/{AZURITE_ACCOUNT}/pictures/w%2Fp%2Fa.png?…): ");
    assert!(
        said.starts_with("retry policy expired") && said.contains(&url),
        "where it failed is still said: {said}"
    );
}

#[test]
fn urls_lose_only_their_query_strings() {
    let same = "at https://a.blob.core.windows.net/pictures (no query), or none";
    assert_eq!(scrubbed(same), same);
    assert_eq!(
        scrubbed("'HTTPS://A/b?sv=1&sig=x%3D', then (http://c/d?e=f)."),
        "'HTTPS://A/b?…', then (http://c/d?…)."
    );
    assert_eq!(
        scrubbed("<Value>se=1&SIG=abc%2B</Value> sig= sig=x"),
        "<Value>se=1&SIG=…</Value> sig= sig=…"
    );
}

/// A key that is not base64 is refused when the store is made, without being shown.
#[test]
fn a_key_that_cannot_sign_is_refused_at_once() {
    let refused =
        BlobStore::with_account_key("http://127.0.0.1:1/a", "a", "not a key!", "pictures")
            .err()
            .unwrap();
    assert!(
        matches!(refused, PictureStoreError::Unusable(_))
            && !refused.to_string().contains("not a key"),
        "{refused}"
    );
}
