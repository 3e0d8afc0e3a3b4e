//! The pictures in Blob Storage: a container of the function app's storage account on Azure,
//! reached with its managed identity (no keys), or of Azurite locally.
//!
//! The SDK (`azure_storage_blob`) authenticates with Entra ID tokens only, and only over https
//! (`BlobClient::new`). Azurite takes tokens only over https too, so locally the client goes
//! without a credential and signs its requests with an account SAS made from Azurite's
//! well-known key ([`BlobStore::azurite`]): the query string of the service's address, which
//! every client derived from it keeps.

use std::sync::Arc;

use async_trait::async_trait;
use azure_core::credentials::{Secret, TokenCredential};
use azure_core::http::{ClientOptions, ExponentialRetryOptions, RequestContent, RetryOptions, StatusCode, Url};
use azure_core::time::Duration;
use azure_storage_blob::models::BlobClientUploadOptions;
use azure_storage_blob::{BlobContainerClient, BlobServiceClient, BlobServiceClientOptions};

use super::store::{PictureName, PictureStore, PictureStoreError};

/// A picture's `Cache-Control`: its name is its content's hash, so it never changes.
pub const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// A container of pictures in Blob Storage.
pub struct BlobStore {
    container: BlobContainerClient,
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
        Ok(BlobStore { container: service.blob_container_client(container) })
    }

    /// The container `container` of Azurite's account `account` (key `key`, base64) at
    /// `endpoint` (`http://127.0.0.1:10000`), signed with an account SAS for blobs.
    pub fn azurite(endpoint: &str, account: &str, key: &str, container: &str) -> Result<BlobStore, PictureStoreError> {
        let address = format!("{}/{account}", endpoint.trim_end_matches('/'));
        let mut url = Url::parse(&address).map_err(|error| unusable(endpoint, error))?;
        url.query_pairs_mut().extend_pairs(account_sas(account, key)?);
        let service = BlobServiceClient::new(url, None, Some(options())).map_err(|error| unusable(endpoint, error))?;
        Ok(BlobStore { container: service.blob_container_client(container) })
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
    async fn put(&self, name: &PictureName, bytes: &[u8]) -> Result<(), PictureStoreError> {
        let options = BlobClientUploadOptions {
            blob_content_type: Some(name.kind().media_type().to_owned()),
            blob_cache_control: Some(IMMUTABLE.to_owned()),
            ..Default::default()
        }
        .if_not_exists();
        let blob = self.container.blob_client(name.as_str());
        match blob.upload(RequestContent::from(bytes.to_vec()), Some(options)).await {
            Ok(_) => Ok(()),
            // There already: the same bytes, since the name is their hash.
            Err(error) if error.http_status() == Some(StatusCode::Conflict) => Ok(()),
            Err(error) => Err(unavailable(error)),
        }
    }

    async fn get(&self, name: &PictureName) -> Result<Option<Vec<u8>>, PictureStoreError> {
        match self.container.blob_client(name.as_str()).download(None).await {
            Ok(download) => download.body.collect().await.map(|bytes| Some(bytes.to_vec())).map_err(unavailable),
            Err(error) if error.http_status() == Some(StatusCode::NotFound) => Ok(None),
            Err(error) => Err(unavailable(error)),
        }
    }

    async fn delete(&self, name: &PictureName) -> Result<(), PictureStoreError> {
        match self.container.blob_client(name.as_str()).delete(None).await {
            Ok(_) => Ok(()),
            Err(error) if error.http_status() == Some(StatusCode::NotFound) => Ok(()),
            Err(error) => Err(unavailable(error)),
        }
    }
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
