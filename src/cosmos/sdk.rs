//! The SDK at our boundary: clients for each backend, every call bounded in time and metered,
//! items to and from JSON.

use std::sync::Arc;

use azure_core::credentials::TokenCredential;
use azure_data_cosmos::options::{ConnectionPoolOptions, Region, ServerCertificateValidation};
use azure_data_cosmos::{
    AccountReference, CosmosClient, CosmosError, CosmosRuntimeBuilder, RoutingStrategy,
};
use serde::Serialize;
use serde_json::Value;

use super::error::{CALL_TIMEOUT, StoreError};
use super::open_error::OpenError;
use super::schema::Container;
use super::{Meter, Scope};

pub(crate) fn to_document<T: Serialize>(item: &T) -> Result<Value, StoreError> {
    serde_json::to_value(item)
        .map_err(|error| StoreError::json("an item does not serialize", error))
}

pub(crate) fn document_id(document: &Value) -> Result<String, StoreError> {
    document.get("id").and_then(Value::as_str).map(str::to_owned).ok_or(StoreError::NoId)
}

/// Runs one Cosmos call within [`CALL_TIMEOUT`], mapping its error.
pub(crate) async fn bounded<T>(
    call: impl Future<Output = azure_data_cosmos::Result<T>>,
) -> Result<T, StoreError> {
    // Boxed: an SDK call's future is tens of kilobytes, and kept inline it is copied into every
    // future that awaits it, up to the change-feed processors' concurrent copies, whose stack
    // then overflowed a 2 MiB thread in debug builds.
    match tokio::time::timeout(CALL_TIMEOUT, Box::pin(call)).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(StoreError::from_cosmos(error)),
        Err(_) => Err(StoreError::Timeout),
    }
}

/// A point operation or batch: bounded, and counted with its charge (failed ones too: Cosmos
/// bills them).
pub(crate) async fn metered<R: HasCharge>(
    scope: Scope,
    call: impl Future<Output = azure_data_cosmos::Result<R>>,
) -> Result<R, StoreError> {
    // Boxed, as in `bounded`.
    match tokio::time::timeout(CALL_TIMEOUT, Box::pin(call)).await {
        Ok(Ok(response)) => {
            Meter::record(scope, response.charge());
            Ok(response)
        }
        Ok(Err(error)) => {
            Meter::record(
                scope,
                error
                    .diagnostics()
                    .map_or(0.0, |diagnostics| f64::from(diagnostics.total_request_charge())),
            );
            Err(StoreError::from_cosmos(error))
        }
        Err(_) => {
            Meter::record(scope, 0.0);
            Err(StoreError::Timeout)
        }
    }
}

pub(crate) trait HasCharge {
    fn charge(&self) -> f64;
}

impl HasCharge for azure_data_cosmos::models::ItemResponse {
    fn charge(&self) -> f64 {
        response_charge(self.headers())
    }
}

impl HasCharge for azure_data_cosmos::models::BatchResponse {
    fn charge(&self) -> f64 {
        response_charge(self.headers())
    }
}

/// The request charge a response reports (0 when it reports none).
pub(crate) fn response_charge(headers: &azure_data_cosmos::models::ResponseHeaders) -> f64 {
    headers.request_charge().map_or(0.0, |charge| f64::from(*charge))
}

/// The region the SDK routes from: the Functions host names its own in `REGION_NAME`.
pub(crate) fn home_region() -> Region {
    Region::new(std::env::var("REGION_NAME").unwrap_or_else(|_| "East US".to_owned()))
}

/// A client for an account reached with a connection string and key (the Cosmos DB emulator).
pub(crate) async fn key_client(connection_string: &str) -> azure_data_cosmos::Result<CosmosClient> {
    let parsed: azure_data_cosmos_driver::models::ConnectionString = connection_string.parse()?;
    let endpoint = parsed.account_endpoint().parse()?;
    let account = AccountReference::with_authentication_key(endpoint, parsed.account_key().clone());
    // The emulator serves a self-signed certificate; the driver relaxes the check for a local
    // emulator endpoint only, never for a remote account.
    let pool = ConnectionPoolOptions::builder()
        .with_server_certificate_validation(ServerCertificateValidation::RequiredUnlessEmulator)
        .build()?;
    let runtime = CosmosRuntimeBuilder::new().with_connection_pool(pool).build().await?;
    CosmosClient::builder()
        .with_runtime(runtime)
        .build(account, RoutingStrategy::ProximityTo(home_region()))
        .await
}

/// The Entra ID credential: the function app's managed identity on Azure (the platform sets
/// `IDENTITY_ENDPOINT`; `client_id` picks a user-assigned identity), the developer's `az login`
/// elsewhere.
pub(crate) fn entra_credential(
    client_id: Option<&str>,
) -> Result<Arc<dyn TokenCredential>, OpenError> {
    let credential: Arc<dyn TokenCredential> = if std::env::var_os("IDENTITY_ENDPOINT").is_some() {
        let options = azure_identity::ManagedIdentityCredentialOptions {
            user_assigned_id: client_id
                .map(|id| azure_identity::UserAssignedId::ClientId(id.to_owned())),
            ..Default::default()
        };
        azure_identity::ManagedIdentityCredential::new(Some(options)).map_err(|source| {
            OpenError::Identity { what: "cannot set up the managed identity".into(), source }
        })?
    } else {
        azure_identity::DeveloperToolsCredential::new(None).map_err(|source| {
            OpenError::Identity {
                what: "cannot set up the developer tools' credential".into(),
                source,
            }
        })?
    };
    Ok(credential)
}

/// A client for an account reached with Entra ID.
pub(crate) async fn entra_client(
    endpoint: &str,
    credential: Arc<dyn TokenCredential>,
) -> Result<CosmosClient, StoreError> {
    let endpoint = endpoint.parse().map_err(|error: CosmosError| {
        StoreError::sdk(format!("bad account endpoint {endpoint:?}"), error)
    })?;
    let account = AccountReference::with_credential(endpoint, credential);
    CosmosClient::builder()
        .build(account, RoutingStrategy::ProximityTo(home_region()))
        .await
        .map_err(|error| StoreError::sdk("cannot build the Cosmos DB client", error))
}

/// Creates the database and the four containers when missing (needs control-plane rights: the
/// embedded store and the emulator's key have them; on Azure, Bicep does this instead).
pub(crate) async fn create_containers(
    client: &CosmosClient,
    database: &str,
) -> Result<(), StoreError> {
    let tolerate_existing = |result: azure_data_cosmos::Result<_>| match result {
        Ok(_) => Ok(()),
        Err(error) if error.status().is_conflict() => Ok(()),
        Err(error) => Err(StoreError::sdk("cannot create the database or a container", error)),
    };
    tolerate_existing(client.create_database(database, None).await.map(drop))?;
    for container in Container::ALL {
        tolerate_existing(
            client
                .database_client(database)
                .create_container(container.properties(), None)
                .await
                .map(drop),
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_item_without_a_string_id_is_refused_as_such() {
        assert!(matches!(document_id(&serde_json::json!({"id": 7})), Err(StoreError::NoId)));
        assert_eq!(document_id(&serde_json::json!({"id": "p1"})).unwrap(), "p1");
    }
}
