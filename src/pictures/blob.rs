//! The pictures in Blob Storage: a container of the function app's storage account on Azure,
//! reached with its managed identity (no keys), or of Azurite locally.
//!
//! The SDK (`azure_storage_blob`) authenticates with Entra ID tokens only, and only over https
//! (`BlobClient::new`). Azurite takes tokens only over https too, so locally the client goes
//! without a credential and signs its requests with an account SAS made from Azurite's
//! well-known key ([`BlobStore::from_connection_string`]): the query string of the service's
//! address, which every client derived from it keeps.

use std::sync::Arc;

use async_trait::async_trait;
use azure_core::credentials::{Secret, TokenCredential};
use azure_core::http::{ClientOptions, ExponentialRetryOptions, RequestContent, RetryOptions, StatusCode, Url};
use azure_core::time::Duration;
use azure_storage_blob::models::{BlobClientUploadOptions, BlobContainerClientListBlobsOptions};
use azure_storage_blob::{BlobContainerClient, BlobServiceClient, BlobServiceClientOptions};
use futures::TryStreamExt;

use super::store::{PictureStore, PictureStoreError, PostFolder, Usage};
use crate::model::picture::PictureAddress;

/// A picture's `Cache-Control`: its name is its content's hash, so it never changes.
pub const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// A container of pictures in Blob Storage.
pub struct BlobStore {
    container: BlobContainerClient,
    /// Whether a missing container is created at the first upload (a connection string's
    /// account: Azurite starts empty, and may start after the blog). On Azure, `infra/` makes
    /// it, and the identity has data rights only.
    creates_container: bool,
}

impl BlobStore {
    /// The container `container` of the account at `account_url`
    /// (`https://<account>.blob.core.windows.net`), reached with `credential`.
    pub fn on_azure(
        account_url: &str,
        container: &str,
        credential: Arc<dyn TokenCredential>,
    ) -> Result<BlobStore, PictureStoreError> {
        let url = Url::parse(account_url).map_err(|error| unusable(account_url, error))?;
        let service =
            BlobServiceClient::new(url, Some(credential), Some(options())).map_err(|error| unusable(account_url, error))?;
        Ok(BlobStore { container: service.blob_container_client(container), creates_container: false })
    }

    /// The container `container` of the account a connection string names, signed with an
    /// account SAS made from its key: `UseDevelopmentStorage=true` (Azurite on its usual port),
    /// or `AccountName` and `AccountKey` with `BlobEndpoint=` (Azurite elsewhere) or
    /// `DefaultEndpointsProtocol=` and `EndpointSuffix=` (an account on Azure, where a key is
    /// allowed: `infra/` uses Entra ID instead, [`BlobStore::on_azure`]).
    pub fn from_connection_string(connection_string: &str, container: &str) -> Result<BlobStore, PictureStoreError> {
        let (service, account, key) = parse_connection_string(connection_string)?;
        BlobStore::with_account_key(&service, &account, &key, container)
    }

    /// The container `container` of the blob service at `service_url` (Azurite:
    /// `http://127.0.0.1:10000/devstoreaccount1`), account `account` with key `key` (base64),
    /// signed with an account SAS for blobs.
    pub fn with_account_key(
        service_url: &str,
        account: &str,
        key: &str,
        container: &str,
    ) -> Result<BlobStore, PictureStoreError> {
        let mut url = Url::parse(service_url).map_err(|error| unusable(service_url, error))?;
        url.query_pairs_mut().extend_pairs(account_sas(account, key)?);
        let service = BlobServiceClient::new(url, None, Some(options())).map_err(|error| unusable(service_url, error))?;
        Ok(BlobStore { container: service.blob_container_client(container), creates_container: true })
    }

    /// Creates the container if it is not there (Azurite; on Azure, `infra/` creates it).
    pub async fn create_container(&self) -> Result<(), PictureStoreError> {
        match self.container.create(None).await {
            Ok(_) => Ok(()),
            Err(error) if error.http_status() == Some(StatusCode::Conflict) => Ok(()),
            Err(error) => Err(unavailable(error)),
        }
    }
}

#[async_trait]
impl PictureStore for BlobStore {
    async fn put(&self, address: &PictureAddress, bytes: &[u8]) -> Result<(), PictureStoreError> {
        let options = BlobClientUploadOptions {
            blob_content_type: Some(address.name.kind().media_type().to_owned()),
            blob_cache_control: Some(IMMUTABLE.to_owned()),
            ..Default::default()
        }
        .if_not_exists();
        let blob = self.container.blob_client(&address.key());
        let mut made_container = false;
        loop {
            match blob.upload(RequestContent::from(bytes.to_vec()), Some(options.clone())).await {
                Ok(_) => return Ok(()),
                // There already: the same bytes, since the name is their hash.
                Err(error) if error.http_status() == Some(StatusCode::Conflict) => return Ok(()),
                // No container yet (Azurite's first upload): made, and the upload sent again.
                Err(error) if error.http_status() == Some(StatusCode::NotFound) && self.creates_container && !made_container => {
                    self.create_container().await?;
                    made_container = true;
                }
                Err(error) => return Err(unavailable(error)),
            }
        }
    }

    async fn get(&self, address: &PictureAddress) -> Result<Option<Vec<u8>>, PictureStoreError> {
        match self.container.blob_client(&address.key()).download(None).await {
            Ok(download) => download.body.collect().await.map(|bytes| Some(bytes.to_vec())).map_err(unavailable),
            Err(error) if error.http_status() == Some(StatusCode::NotFound) => Ok(None),
            Err(error) => Err(unavailable(error)),
        }
    }

    async fn contains(&self, address: &PictureAddress) -> Result<bool, PictureStoreError> {
        self.container.blob_client(&address.key()).exists().await.map_err(unavailable)
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

    async fn usage(&self, owner: &str) -> Result<Usage, PictureStoreError> {
        let files = self.list(&format!("{owner}/")).await?;
        let last_part = |key: &str| key.rsplit('/').next().unwrap_or_default().to_owned();
        let files: Vec<(String, u64)> = files.into_iter().map(|blob| (last_part(&blob.name), blob.size)).collect();
        Ok(Usage::of(files.iter().map(|(name, size)| (name.as_str(), *size))))
    }

    async fn folders(&self) -> Result<Vec<PostFolder>, PictureStoreError> {
        let mut folders: std::collections::BTreeMap<(String, String), std::time::SystemTime> = Default::default();
        for blob in self.list("").await? {
            let mut parts = blob.name.splitn(3, '/');
            let (Some(owner), Some(post), Some(_)) = (parts.next(), parts.next(), parts.next()) else { continue };
            let newest = folders.entry((owner.to_owned(), post.to_owned())).or_insert(std::time::SystemTime::UNIX_EPOCH);
            *newest = (*newest).max(blob.last_modified);
        }
        Ok(folders.into_iter().map(|((owner, post), last_written)| PostFolder { owner, post, last_written }).collect())
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
        let options = BlobContainerClientListBlobsOptions { prefix: Some(prefix.to_owned()), ..Default::default() };
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
                let size = blob.properties.as_ref().and_then(|properties| properties.content_length).unwrap_or(0);
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
const AZURITE_KEY: &str = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

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
    let get = |name: &str| pairs.iter().find(|(key, _)| key == name).map(|(_, value)| value.clone());
    if get("usedevelopmentstorage").is_some_and(|value| value.eq_ignore_ascii_case("true")) {
        let service = get("developmentstorageproxyuri").unwrap_or_else(|| "http://127.0.0.1:10000".to_owned());
        return Ok((format!("{}/{AZURITE_ACCOUNT}", service.trim_end_matches('/')), AZURITE_ACCOUNT.into(), AZURITE_KEY.into()));
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

/// A few quick retries, within seconds: the SDK's default (8 retries within a minute) held a
/// writer for 80 s when the storage could not be reached, longer than a request may take
/// (`BLOG_REQUEST_TIMEOUT`); the writer is better told to come back.
fn options() -> BlobServiceClientOptions {
    let retry = ExponentialRetryOptions {
        initial_delay: Duration::milliseconds(200),
        max_retries: 3,
        max_total_elapsed: Duration::seconds(10),
        max_delay: Duration::seconds(2),
    };
    BlobServiceClientOptions {
        client_options: ClientOptions { retry: RetryOptions::exponential(retry), ..Default::default() },
        ..Default::default()
    }
}

/// An account SAS for the blob service (read, write, delete, list, add, create; on the
/// service, containers and blobs; over http or https), valid until 2099, signed with `key`: the
/// string to sign of service version 2020-12-06 and later (account, permissions, services,
/// resource types, start, expiry, IP, protocol, version, encryption scope, each on its line).
fn account_sas(account: &str, key: &str) -> Result<[(&'static str, String); 7], PictureStoreError> {
    let (permissions, services, types, expiry, protocol, version) =
        ("rwdlac", "b", "sco", "2099-01-01T00:00:00Z", "http,https", "2022-11-02");
    let to_sign = format!("{account}\n{permissions}\n{services}\n{types}\n\n{expiry}\n\n{protocol}\n{version}\n\n");
    let signature = azure_core::hmac::hmac_sha256(&to_sign, &Secret::new(key.to_owned()))
        .map_err(|error| unusable("the Azurite account key", error))?;
    Ok([
        ("sv", version.to_owned()),
        ("ss", services.to_owned()),
        ("srt", types.to_owned()),
        ("sp", permissions.to_owned()),
        ("se", expiry.to_owned()),
        ("spr", protocol.to_owned()),
        ("sig", signature),
    ])
}

fn unusable(what: &str, error: impl std::fmt::Display) -> PictureStoreError {
    PictureStoreError::Unusable(format!("{what}: {error}"))
}

fn unavailable(error: azure_core::Error) -> PictureStoreError {
    PictureStoreError::Unavailable(crate::logging::with_causes(&error))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_string_names_the_service_the_account_and_its_key() {
        let local = parse_connection_string("UseDevelopmentStorage=true").unwrap();
        assert_eq!(local, ("http://127.0.0.1:10000/devstoreaccount1".into(), AZURITE_ACCOUNT.into(), AZURITE_KEY.into()));
        // Azurite's README's full connection string, and one of an account on Azure.
        let full = format!(
            "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={AZURITE_KEY};BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;"
        );
        assert_eq!(parse_connection_string(&full).unwrap().0, "http://127.0.0.1:10000/devstoreaccount1");
        let azure = format!(
            "DefaultEndpointsProtocol=https;AccountName=blogpics;AccountKey={AZURITE_KEY};EndpointSuffix=core.windows.net"
        );
        let (service, account, _) = parse_connection_string(&azure).unwrap();
        assert_eq!((service.as_str(), account.as_str()), ("https://blogpics.blob.core.windows.net", "blogpics"));
        for bad in ["", "AccountName=a", &format!("AccountKey={AZURITE_KEY}")] {
            assert!(matches!(parse_connection_string(bad), Err(PictureStoreError::Unusable(_))), "{bad:?}");
        }
    }
}
