//! The pictures in Blob Storage: a container of the function app's storage account on Azure,
//! reached with its managed identity (no keys), or of Azurite (or an account named by a
//! connection string with its key).
//!
//! The SDK (`azure_storage_blob`) authenticates with Entra ID tokens only, and only over https
//! (`BlobClient::new`). Azurite takes tokens only over https too, so with a connection string
//! the client goes without a credential and each request is signed, as it leaves, with a
//! service SAS for the one container, made from the account key ([`SignWithSas`]). The key
//! itself never leaves the process, and no error text the SDK gives carries a URL's query
//! string past [`unavailable`] and [`unusable`].
//!
//! A blob read is told apart from its other versions by its ETag ([`Version::Blob`]). Blob
//! Storage gives a blob a new ETag at every change of its content, metadata or properties
//! (Microsoft Learn, "Manage concurrency in Blob Storage"). The SDK reads a blob larger than
//! one request in ranges, each held to the first range's ETag with `If-Match`
//! (`azure_storage_blob` 1.1, `partitioned_transfer/download.rs`, `etag_lock`). So the bytes
//! answered are all of the version that ETag names. Each blob is written with the SHA-256 of
//! its bytes in its metadata ([`SHA256_METADATA`]), returned with them. A phones' copy, whose
//! name is its picture's hash, is checked against it.

use std::sync::Arc;

use async_trait::async_trait;
use azure_core::credentials::{Secret, TokenCredential};
use azure_core::http::policies::{Policy, PolicyResult};
use azure_core::http::{
    ClientOptions, Context, ExponentialRetryOptions, Request, RequestContent, RetryOptions,
    StatusCode, Url,
};
use azure_core::time::Duration;
use azure_storage_blob::models::{BlobClientUploadOptions, BlobContainerClientListBlobsOptions};
use azure_storage_blob::{
    BlobContainerClient, BlobContainerClientOptions, BlobServiceClient, BlobServiceClientOptions,
};
use futures::TryStreamExt;

use super::store::{PictureStore, PictureStoreError, PostFolder, Stored, Usage, Version};
use crate::model::picture::{PictureAddress, PictureName};

/// A picture's `Cache-Control`: its name is its content's hash, so it never changes.
pub(crate) const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// The metadata that holds the SHA-256 (hex) of a blob's bytes, written with them.
///
/// Not the blob's `Content-MD5`: the service stores and returns that property without checking
/// it against the bytes. Microsoft Learn says so of `BlobRequestOptions.StoreBlobContentMD5`:
/// "not validated by the Azure Storage service on upload or download". A picture over 4 MiB
/// goes up in blocks, whose list takes it unchecked (Put Block List's `x-ms-blob-content-md5`).
/// So it is a recorded checksum as this one is, and would need an MD5 of our own. Either
/// changes the blob's ETag when it changes.
const SHA256_METADATA: &str = "sha256";

/// A container of pictures in Blob Storage.
pub struct BlobStore {
    container: BlobContainerClient,
    /// The client that creates the container when it is missing at an upload (a connection
    /// string's account: Azurite starts empty, and may start after the blog). None on Azure,
    /// where `infra/` makes it and the identity has data rights only.
    creator: Option<BlobContainerClient>,
}

impl BlobStore {
    /// The container `container` of the account at `account_url`
    /// (`https://<account>.blob.core.windows.net`), reached with `credential`.
    pub(crate) fn on_azure(
        account_url: &str,
        container: &str,
        credential: Arc<dyn TokenCredential>,
    ) -> Result<BlobStore, PictureStoreError> {
        let url = Url::parse(account_url).map_err(|error| unusable(account_url, error))?;
        let options =
            BlobServiceClientOptions { client_options: client_options(None), ..Default::default() };
        let service = BlobServiceClient::new(url, Some(credential), Some(options))
            .map_err(|error| unusable(account_url, error))?;
        Ok(BlobStore { container: service.blob_container_client(container), creator: None })
    }

    /// The container `container` of the account a connection string names, with its key. The
    /// string is `UseDevelopmentStorage=true` (Azurite on its usual port), or `AccountName` and
    /// `AccountKey` with one of two more. With `BlobEndpoint=` it is Azurite elsewhere; with
    /// `DefaultEndpointsProtocol=` and `EndpointSuffix=` it is an account on Azure (`infra/`
    /// uses Entra ID instead, [`BlobStore::on_azure`]). Signed as
    /// [`BlobStore::with_account_key`] says.
    pub fn from_connection_string(
        connection_string: &str,
        container: &str,
    ) -> Result<BlobStore, PictureStoreError> {
        let (service, account, key) = parse_connection_string(connection_string)?;
        BlobStore::with_account_key(&service, &account, &key, container)
    }

    /// The container `container` of the blob service at `service_url` (Azurite:
    /// `http://127.0.0.1:10000/devstoreaccount1`), account `account` with key `key` (base64).
    ///
    /// The key only signs: each try of each request carries a SAS made for it as it leaves,
    /// valid 15 minutes. That is a service SAS for this container (read, write, delete, list;
    /// nothing else of the account). The request that creates the container (which no service
    /// SAS may do) gets an account SAS that can only create containers. So what reaches the
    /// wire, and so any proxy's log or a log line that would quote a URL, opens one container
    /// for minutes, never the account. A key of an account on Azure is taken too, and signs the
    /// same way. Refusing it would not take it out of the setting, and a key is what a machine
    /// off Azure has (on Azure, `infra/` gives the managed identity instead,
    /// [`BlobStore::on_azure`]).
    pub fn with_account_key(
        service_url: &str,
        account: &str,
        key: &str,
        container: &str,
    ) -> Result<BlobStore, PictureStoreError> {
        let mut url = Url::parse(service_url).map_err(|error| unusable(service_url, error))?;
        url.path_segments_mut()
            .map_err(|()| unusable(service_url, "not a base URL"))?
            .pop_if_empty()
            .push(container);
        let key = Arc::new(AccountKey {
            account: account.to_owned(),
            container: container.to_owned(),
            key: Secret::new(key.to_owned()),
            protocol: if url.scheme() == "https" { "https" } else { "https,http" },
        });
        // A key that is not base64 is said now, not at each request.
        key.sas(Scope::Container, time::OffsetDateTime::now_utc())
            .map_err(|error| unusable("the account key", error))?;
        let client = |scope: Scope| {
            let signer: Arc<dyn Policy> = Arc::new(SignWithSas { key: key.clone(), scope });
            let options = BlobContainerClientOptions {
                client_options: client_options(Some(signer)),
                ..Default::default()
            };
            BlobContainerClient::new(url.clone(), None, Some(options))
                .map_err(|error| unusable(service_url, error))
        };
        Ok(BlobStore {
            container: client(Scope::Container)?,
            creator: Some(client(Scope::CreateContainer)?),
        })
    }

    /// Creates the container if it is not there (a connection string's account; on Azure,
    /// `infra/` creates it, and this does nothing).
    pub(crate) async fn create_container(&self) -> Result<(), PictureStoreError> {
        let Some(creator) = &self.creator else { return Ok(()) };
        match creator.create(None).await {
            Ok(_) => Ok(()),
            Err(error) if error.http_status() == Some(StatusCode::Conflict) => Ok(()),
            Err(error) => Err(unavailable(error)),
        }
    }
}

/// How long a small picture checked against its name is served from memory without a read of
/// its blob. It is an hour, so that each instance reads each picture it serves at most once an
/// hour instead of at every view. A read operation is billed, about $0.004 per 10,000, as much
/// as the view's execution. What waits that long on another instance: a deleted post's
/// pictures, which no page links any more and which readers' browsers keep a year anyway. Also
/// a blob put in a picture's place, which is refused at the next read while the checked bytes
/// are served till then.
const KEPT_UNASKED: std::time::Duration = std::time::Duration::from_secs(3600);

#[async_trait]
impl PictureStore for BlobStore {
    fn kept_unasked_for(&self) -> Option<std::time::Duration> {
        Some(KEPT_UNASKED)
    }

    async fn put(
        &self,
        address: &PictureAddress,
        bytes: &[u8],
    ) -> Result<Option<Version>, PictureStoreError> {
        let sha256 = crate::model::hex(&<sha2::Sha256 as sha2::Digest>::digest(bytes));
        let options = BlobClientUploadOptions {
            blob_content_type: Some(address.name.kind().media_type().to_owned()),
            blob_cache_control: Some(IMMUTABLE.to_owned()),
            metadata: Some([(SHA256_METADATA.to_owned(), sha256)].into()),
            ..Default::default()
        }
        .if_not_exists();
        let blob = self.container.blob_client(&address.key());
        let mut made_container = false;
        loop {
            match blob.upload(RequestContent::from(bytes.to_vec()), Some(options.clone())).await {
                Ok(written) => {
                    return Ok(written
                        .etag
                        .map(|etag| Version::Blob(AsRef::<str>::as_ref(&etag).to_owned())));
                }
                // There already: the same bytes, since the name is their hash (checked at its
                // first read, as it was not written here).
                Err(error) if error.http_status() == Some(StatusCode::Conflict) => return Ok(None),
                // No container yet (Azurite's first upload): made, and the upload sent again.
                Err(error)
                    if error.http_status() == Some(StatusCode::NotFound)
                        && self.creator.is_some()
                        && !made_container =>
                {
                    self.create_container().await?;
                    made_container = true;
                }
                Err(error) => return Err(unavailable(error)),
            }
        }
    }

    async fn read(&self, address: &PictureAddress) -> Result<Option<Stored>, PictureStoreError> {
        match self.container.blob_client(&address.key()).download(None).await {
            Ok(download) => {
                let version = download
                    .properties
                    .etag
                    .as_ref()
                    .map(|etag| Version::Blob(AsRef::<str>::as_ref(etag).to_owned()));
                let recorded_sha256 = download.properties.metadata.get(SHA256_METADATA).cloned();
                let bytes = download.body.collect().await.map_err(unavailable)?.to_vec();
                Ok(Some(Stored { bytes, version, recorded_sha256 }))
            }
            Err(error) if error.http_status() == Some(StatusCode::NotFound) => Ok(None),
            Err(error) => Err(unavailable(error)),
        }
    }

    async fn contains(&self, address: &PictureAddress) -> Result<bool, PictureStoreError> {
        self.container.blob_client(&address.key()).exists().await.map_err(unavailable)
    }

    async fn remove(&self, address: &PictureAddress) -> Result<(), PictureStoreError> {
        match self.container.blob_client(&address.key()).delete(None).await {
            Ok(_) => Ok(()),
            Err(error) if error.http_status() == Some(StatusCode::NotFound) => Ok(()),
            Err(error) => Err(unavailable(error)),
        }
    }

    async fn remove_post(&self, owner: &str, post: &str) -> Result<usize, PictureStoreError> {
        let names = self.list(&format!("{owner}/{post}/")).await?;
        for Listed { name, .. } in &names {
            match self.container.blob_client(name).delete(None).await {
                Ok(_) => {}
                Err(error) if error.http_status() == Some(StatusCode::NotFound) => {}
                Err(error) => return Err(unavailable(error)),
            }
        }
        Ok(names.len())
    }

    async fn post_pictures(
        &self,
        owner: &str,
        post: &str,
    ) -> Result<Vec<PictureName>, PictureStoreError> {
        let blobs = self.list(&format!("{owner}/{post}/")).await?;
        Ok(blobs
            .iter()
            .filter_map(|blob| PictureName::parse(blob.name.rsplit('/').next().unwrap_or_default()))
            .collect())
    }

    async fn usage(&self, owner: &str) -> Result<Usage, PictureStoreError> {
        let files = self.list(&format!("{owner}/")).await?;
        let last_part = |key: &str| key.rsplit('/').next().unwrap_or_default().to_owned();
        let files: Vec<(String, u64)> =
            files.into_iter().map(|blob| (last_part(&blob.name), blob.size)).collect();
        Ok(Usage::of(files.iter().map(|(name, size)| (name.as_str(), *size))))
    }

    async fn folders(&self) -> Result<Vec<PostFolder>, PictureStoreError> {
        let mut folders: std::collections::BTreeMap<(String, String), std::time::SystemTime> =
            Default::default();
        for blob in self.list("").await? {
            let mut parts = blob.name.splitn(3, '/');
            let (Some(owner), Some(post), Some(_)) = (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            let newest = folders
                .entry((owner.to_owned(), post.to_owned()))
                .or_insert(std::time::SystemTime::UNIX_EPOCH);
            *newest = (*newest).max(blob.last_modified);
        }
        Ok(folders
            .into_iter()
            .map(|((owner, post), last_written)| PostFolder { owner, post, last_written })
            .collect())
    }
}

/// A blob as listed: its name, size and last write.
struct Listed {
    name: String,
    size: u64,
    last_modified: std::time::SystemTime,
}

impl BlobStore {
    /// Every blob whose name starts with `prefix`, with its size: page after page (5,000 a page).
    async fn list(&self, prefix: &str) -> Result<Vec<Listed>, PictureStoreError> {
        let options = BlobContainerClientListBlobsOptions {
            prefix: Some(prefix.to_owned()),
            ..Default::default()
        };
        let mut pages = self.container.list_blobs(Some(options)).map_err(unavailable)?.into_pages();
        let mut found = Vec::new();
        loop {
            let page = match pages.try_next().await {
                Ok(Some(page)) => page,
                Ok(None) => break,
                // No container yet: nothing in it.
                Err(error) if error.http_status() == Some(StatusCode::NotFound) => break,
                Err(error) => return Err(unavailable(error)),
            };
            for blob in page.into_model().map_err(unavailable)?.blob_items {
                let size = blob
                    .properties
                    .as_ref()
                    .and_then(|properties| properties.content_length)
                    .unwrap_or(0);
                let last_modified = blob
                    .properties
                    .as_ref()
                    .and_then(|properties| properties.last_modified)
                    .map_or(std::time::SystemTime::UNIX_EPOCH, std::time::SystemTime::from);
                if let Some(name) = blob.name {
                    found.push(Listed { name, size, last_modified });
                }
            }
        }
        Ok(found)
    }
}

/// Azurite's well-known development account and key (Azurite's `EMULATOR_ACCOUNT_KEY_STR`;
/// the same in every Azurite, and documented as such).
const AZURITE_ACCOUNT: &str = "devstoreaccount1";
const AZURITE_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

/// The blob service's address, the account and its key, from a connection string, read as
/// the Storage SDKs read one: `key=value` pairs separated by `;`, keys in any case.
fn parse_connection_string(text: &str) -> Result<(String, String, String), PictureStoreError> {
    let pairs: Vec<(String, String)> = text
        .split(';')
        .filter(|pair| !pair.trim().is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (key.trim().to_ascii_lowercase(), value.trim().to_owned())
        })
        .collect();
    let get =
        |name: &str| pairs.iter().find(|(key, _)| key == name).map(|(_, value)| value.clone());
    if get("usedevelopmentstorage").is_some_and(|value| value.eq_ignore_ascii_case("true")) {
        let service = get("developmentstorageproxyuri")
            .unwrap_or_else(|| "http://127.0.0.1:10000".to_owned());
        return Ok((
            format!("{}/{AZURITE_ACCOUNT}", service.trim_end_matches('/')),
            AZURITE_ACCOUNT.into(),
            AZURITE_KEY.into(),
        ));
    }
    let missing = |what: &str| {
        PictureStoreError::Unusable(format!(
            "the connection string has no {what}: give UseDevelopmentStorage=true (Azurite), or AccountName, AccountKey \
             and BlobEndpoint (or DefaultEndpointsProtocol and EndpointSuffix)"
        ))
    };
    let account = get("accountname").ok_or_else(|| missing("AccountName"))?;
    let key = get("accountkey").ok_or_else(|| missing("AccountKey"))?;
    let service = match get("blobendpoint") {
        Some(endpoint) => endpoint.trim_end_matches('/').to_owned(),
        None => {
            let protocol = get("defaultendpointsprotocol").unwrap_or_else(|| "https".to_owned());
            let suffix = get("endpointsuffix").unwrap_or_else(|| "core.windows.net".to_owned());
            format!("{protocol}://{account}.blob.{suffix}")
        }
    };
    Ok((service, account, key))
}

/// A few quick retries, within seconds. The SDK's default (8 retries within a minute) held a
/// writer for 80 s when the storage could not be reached, longer than a request may take
/// (`BLOG_REQUEST_TIMEOUT`). The writer is better told to come back. `signer`, if any, signs
/// each try.
fn client_options(signer: Option<Arc<dyn Policy>>) -> ClientOptions {
    let retry = ExponentialRetryOptions {
        initial_delay: Duration::milliseconds(200),
        max_retries: 3,
        max_total_elapsed: Duration::seconds(10),
        max_delay: Duration::seconds(2),
    };
    ClientOptions {
        retry: RetryOptions::exponential(retry),
        per_try_policies: signer.into_iter().collect(),
        ..Default::default()
    }
}

/// How long a request's SAS is valid. Each try is signed anew, so it only has to outlast the
/// way to the service and a difference between clocks; a SAS copied from one request opens the
/// container for no longer.
const SAS_LIFE: Duration = Duration::minutes(15);

/// The storage service version a SAS is signed for (2020-12-06 or later: the strings to sign
/// below).
const SAS_VERSION: &str = "2022-11-02";

/// The query parameters a SAS of ours is made of, replaced at each try.
const SAS_PARAMETERS: [&str; 8] = ["sv", "ss", "srt", "sr", "sp", "se", "spr", "sig"];

/// An account's key, and the container its SASes are for.
#[derive(Debug)]
struct AccountKey {
    account: String,
    container: String,
    /// Its `Debug` shows no key.
    key: Secret,
    /// `https`, or `https,http` for a service reached over http (Azurite).
    protocol: &'static str,
}

/// What a SAS allows.
#[derive(Clone, Copy, Debug)]
enum Scope {
    /// The container's blobs: read (get, exists), write (upload), delete, list. A service SAS
    /// (`sr=c`), so nothing outside the container.
    Container,
    /// Creating a container: an account SAS (no service SAS may create its own container) for
    /// containers (`srt=c`) that allows only that (`sp=c`): it cannot read, write, list or delete
    /// anything.
    CreateContainer,
}

impl AccountKey {
    /// The SAS for `scope`, valid from now to `now` + [`SAS_LIFE`], as a query string.
    fn sas(&self, scope: Scope, now: time::OffsetDateTime) -> azure_core::Result<String> {
        let expiry = (now + SAS_LIFE)
            .format(time::macros::format_description!(
                "[year]-[month]-[day]T[hour]:[minute]:[second]Z"
            ))
            .map_err(|error| {
                azure_core::Error::with_message(
                    azure_core::error::ErrorKind::Other,
                    error.to_string(),
                )
            })?;
        let (account, protocol, version) = (&self.account, self.protocol, SAS_VERSION);
        let (to_sign, parameters) = match scope {
            // "Create a service SAS", version 2020-12-06 and later: permissions, start, expiry,
            // canonical resource, identifier, IP, protocol, version, resource, snapshot time,
            // encryption scope, then the five response headers, one a line (as Azurite's
            // `generateBlobSASSignature20201206` checks it).
            Scope::Container => {
                let resource = format!("/blob/{account}/{}", self.container);
                let to_sign = [
                    "rwdl", "", &expiry, &resource, "", "", protocol, version, "c", "", "", "", "",
                    "", "", "",
                ];
                (
                    to_sign.join("\n"),
                    vec![
                        ("sv", version),
                        ("sr", "c"),
                        ("sp", "rwdl"),
                        ("se", &expiry),
                        ("spr", protocol),
                    ],
                )
            }
            // "Create an account SAS", version 2020-12-06 and later: account, permissions,
            // services, resource types, start, expiry, IP, protocol, version, encryption scope,
            // each followed by a newline.
            Scope::CreateContainer => {
                let to_sign =
                    [account.as_str(), "c", "b", "c", "", &expiry, "", protocol, version, "", ""];
                let parameters = vec![
                    ("sv", version),
                    ("ss", "b"),
                    ("srt", "c"),
                    ("sp", "c"),
                    ("se", &expiry),
                    ("spr", protocol),
                ];
                (to_sign.join("\n"), parameters)
            }
        };
        let signature = azure_core::hmac::hmac_sha256(&to_sign, &self.key)?;
        let mut query: String =
            parameters.iter().map(|(name, value)| format!("{name}={}&", encoded(value))).collect();
        query.push_str(&format!("sig={}", encoded(&signature)));
        Ok(query)
    }
}

/// Signs each try of a request, as it leaves, with a SAS of its own ([`AccountKey::sas`]). The
/// SAS is fresh for every try, so none lapses however long the process runs, and none lives
/// long. (The SDK's log lines show a request's URL with `sig` redacted.)
#[derive(Debug)]
struct SignWithSas {
    key: Arc<AccountKey>,
    scope: Scope,
}

#[async_trait]
impl Policy for SignWithSas {
    async fn send(
        &self,
        ctx: &Context,
        request: &mut Request,
        next: &[Arc<dyn Policy>],
    ) -> PolicyResult {
        let sas = self.key.sas(self.scope, time::OffsetDateTime::now_utc())?;
        with_sas(request.url_mut(), &sas);
        next[0].send(ctx, request, &next[1..]).await
    }
}

/// `url` with `sas` in its query string in place of any SAS an earlier try put there; the
/// operation's own parameters kept as the SDK wrote them.
fn with_sas(url: &mut Url, sas: &str) {
    let mut query: String = url
        .query()
        .unwrap_or_default()
        .split('&')
        .filter(|pair| {
            !pair.is_empty()
                && !SAS_PARAMETERS.contains(&pair.split('=').next().unwrap_or_default())
        })
        .flat_map(|pair| [pair, "&"])
        .collect();
    query.push_str(sas);
    url.set_query(Some(&query));
}

/// `value` percent-encoded for a query string: all but RFC 3986's unreserved characters.
fn encoded(value: &str) -> String {
    value
        .bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (byte as char).to_string()
            }
            _ => format!("%{byte:02X}"),
        })
        .collect()
}

/// `text` with the query string of every http(s) URL in it replaced by `?…`, and the value of
/// any other `sig=` by `…`. An SDK error says which URL failed, SAS included (reqwest's "error
/// sending request for url (…?…&sig=…)"), and what becomes a [`PictureStoreError`] is logged
/// and may be shown: no credential may be in it. Punctuation that closes the URL is kept.
fn scrubbed(text: &str) -> String {
    const CLOSING: &[char] = &[')', ']', '}', '>', '"', '\'', ',', '.', ':', ';'];
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while let Some(start) =
        [lower[at..].find("http://"), lower[at..].find("https://")].into_iter().flatten().min()
    {
        let start = at + start;
        let end =
            text[start..].find(char::is_whitespace).map_or(text.len(), |length| start + length);
        let url = &text[start..end];
        match url.find('?') {
            Some(query) => {
                out.push_str(&text[at..start + query]);
                out.push_str("?…");
                out.push_str(&url[url.trim_end_matches(CLOSING).len().max(query + 1)..]);
            }
            None => out.push_str(&text[at..end]),
        }
        at = end;
    }
    out.push_str(&text[at..]);
    // A signature outside a URL (an error body quoting a query): its value goes too.
    let mut rest = out.as_str();
    let mut cleaned = String::with_capacity(out.len());
    while let Some(found) = rest.to_ascii_lowercase().find("sig=") {
        let value = found + "sig=".len();
        cleaned.push_str(&rest[..value]);
        let length = rest[value..]
            .find(|c: char| c == '&' || c.is_whitespace() || CLOSING.contains(&c) || c == '<');
        let length = length.unwrap_or(rest.len() - value);
        if length > 0 {
            cleaned.push('…');
        }
        rest = &rest[value + length..];
    }
    cleaned.push_str(rest);
    cleaned
}

fn unusable(what: &str, error: impl std::fmt::Display) -> PictureStoreError {
    PictureStoreError::Unusable(scrubbed(&format!("{what}: {error}")))
}

fn unavailable(error: azure_core::Error) -> PictureStoreError {
    PictureStoreError::Unavailable(scrubbed(&crate::logging::with_causes(&error)))
}

#[cfg(test)]
mod tests;
